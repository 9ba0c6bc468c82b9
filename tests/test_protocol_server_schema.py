"""protocol.server_schema and the error message's retry_after_ms (a v1 addition)."""

from __future__ import annotations

import json
from importlib import resources

import orjson
import pytest
from jsonschema import Draft202012Validator

import protocol as p
from protocol.schema import render
from protocol.server_schema import SCHEMA_FILE, load_server_schema, server_schema

MESSAGES = [
    p.Hello(sample_rate=24000, formats=p.FORMATS, sample_rates=(16000, 24000), voices=("default",),
            limits=p.Limits(5000, 8, 65536), model=p.ModelInfo("chattts", "tone", "cpu")),
    p.Started("u1", 1, "interactive", "pcm_s16le", 24000),
    p.Segment("u1", 0, "Hello there.", 0.0, 853.333),
    p.Segment("u1", 1, "It costs $5.", 853.333, 900.0, spoken="It costs five dollars."),
    p.Done("u1", 853.333, 1, p.Timing(1.2, 40.5, 900.0, 0.9)),
    p.Done("u2", 0.0, 0, p.Timing(0.0, None, 3.0, None), deadline_met=True),
    p.Done("u3", 0.0, 0, p.Timing(0.0, None, 3.0, None), unspoken=("Привет.", "!!!")),
    p.Cancelled("u1"),
    p.Error(None, "bad_json", "not valid JSON"),
    p.Error("u1", "bad_message", "frame_ms must be 10..1000", field="frame_ms"),
    p.Error("u1", "overloaded", "no capacity", retry_after_ms=350),
]


def test_the_published_file_is_the_generated_schema():
    assert load_server_schema() == server_schema()
    text = resources.files("protocol").joinpath(SCHEMA_FILE).read_text()
    assert text == render(server_schema())
    Draft202012Validator.check_schema(server_schema())


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_every_message_the_server_writes_validates_and_reads_back(message):
    wire = json.loads(p.encode(message))
    Draft202012Validator(server_schema()).validate(wire)
    assert p.decode_server(p.encode(message)) == message


def test_retry_after_ms_is_on_the_wire_only_when_set():
    assert "retry_after_ms" not in json.loads(p.encode(p.Error("u", "internal", "model failed")))
    wire = json.loads(p.encode(p.Error("u", "too_many_active", "8 active", retry_after_ms=0)))
    assert wire["retry_after_ms"] == 0


@pytest.mark.parametrize("value", [-1, 1.5, "100", True, 2**32])
def test_a_bad_retry_after_ms_is_refused_by_schema_and_decoder(value):
    wire = {"type": "error", "id": "u", "code": "overloaded", "message": "m", "retry_after_ms": value}
    assert not Draft202012Validator(server_schema()).is_valid(wire)
    with pytest.raises(p.ProtocolError) as info:
        p.decode_server(orjson.dumps(wire))
    assert info.value.field == "retry_after_ms"


def test_unknown_extra_fields_are_allowed():
    wire = {"type": "cancelled", "id": "u", "reason": "barge-in"}
    assert Draft202012Validator(server_schema()).is_valid(wire)
    assert p.decode_server(orjson.dumps(wire)) == p.Cancelled("u")


def test_unspoken_is_on_the_wire_only_when_non_empty():
    done = p.Done("u", 0.0, 0, p.Timing(0.0, None, 1.0, None))
    assert "unspoken" not in json.loads(p.encode(done))
    assert "spoken" not in json.loads(p.encode(p.Segment("u", 0, "Hi.", 0.0, 1.0)))


@pytest.mark.parametrize("field, value", [
    ("spoken", 5), ("spoken", ["Hi."]), ("unspoken", "Hi."), ("unspoken", [1]), ("unspoken", []),
])
def test_bad_spoken_and_unspoken_are_refused_by_schema(field, value):
    timing = {"queued_ms": 0, "first_audio_ms": None, "total_ms": 1, "rtf": None}
    base = ({"type": "segment", "id": "u", "index": 0, "text": "Hi.", "offset_ms": 0, "audio_ms": 1}
            if field == "spoken" else
            {"type": "done", "id": "u", "audio_ms": 0, "segments": 0, "timing": timing})
    wire = {**base, field: value}
    assert not Draft202012Validator(server_schema()).is_valid(wire)
    if value != []:  # an empty list is only a schema matter: it reads as none
        with pytest.raises(p.ProtocolError) as info:
            p.decode_server(orjson.dumps(wire))
        assert info.value.field == field
