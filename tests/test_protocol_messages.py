"""protocol.messages and protocol.errors: the wire shape of every message."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

import protocol as p

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"


def wire(msg) -> dict:
    return json.loads(p.encode(msg))


def test_constants():
    assert p.PROTOCOL_VERSION == 1 and p.DEFAULT_SAMPLE_RATE == 24000
    assert p.FORMATS == ("pcm_s16le", "pcm_f32le", "pcm_mulaw")
    assert p.LANES == ("interactive", "background")
    assert p.CHUNKINGS == ("sentence", "token")
    assert (p.FRAME_MS_MIN, p.FRAME_MS_MAX) == (10, 1000)
    assert re.fullmatch(p.ID_PATTERN, "a" * 64) and not re.fullmatch(p.ID_PATTERN, "a" * 65)


def test_speak_writes_every_field_and_leaves_out_none():
    msg = p.Speak("u1", "Hi.")
    assert wire(msg) == {
        "type": "speak", "id": "u1", "text": "Hi.", "final": True, "lane": "interactive",
        "format": "pcm_s16le", "sample_rate": 24000, "frame_ms": 100, "chunking": "sentence",
    }
    full = p.Speak("u1", "Hi.", lane="background", deadline_ms=5000, voice="seed:3",
                   params=p.Params(temperature=0.3, seed=7))
    out = wire(full)
    assert (out["deadline_ms"], out["voice"], out["params"]) == (
        5000, "seed:3", {"temperature": 0.3, "seed": 7})
    assert next(iter(out)) == "type"


def test_append_flush_cancel_shapes():
    assert wire(p.Append("a", "more")) == {"type": "append", "id": "a", "text": "more",
                                           "final": False}
    assert wire(p.Flush("a")) == {"type": "flush", "id": "a"}
    assert wire(p.Cancel("a")) == {"type": "cancel", "id": "a"}


def test_hello_shape():
    hello = p.Hello(24000, p.FORMATS, (16000, 24000), ("alice",), p.Limits(5000, 8, 65536),
                    p.ModelInfo("chattts", "checkpoint", "cuda"))
    assert wire(hello) == {
        "type": "hello", "protocol": 1, "sample_rate": 24000,
        "formats": ["pcm_s16le", "pcm_f32le", "pcm_mulaw"], "sample_rates": [16000, 24000],
        "voices": ["alice"],
        "limits": {"max_text_chars": 5000, "max_active": 8, "max_message_bytes": 65536},
        "model": {"name": "chattts", "weights": "checkpoint", "device": "cuda"},
    }


def test_started_segment_cancelled_shapes():
    assert wire(p.Started("a", 7, "interactive", "pcm_f32le", 16000)) == {
        "type": "started", "id": "a", "stream": 7, "lane": "interactive",
        "format": "pcm_f32le", "sample_rate": 16000}
    assert wire(p.Segment("a", 0, "Hi.", 0.0, 853.3)) == {
        "type": "segment", "id": "a", "index": 0, "text": "Hi.", "offset_ms": 0.0,
        "audio_ms": 853.3}
    assert wire(p.Cancelled("a")) == {"type": "cancelled", "id": "a"}


def test_done_leaves_out_deadline_met_only_when_none():
    timing = p.Timing(queued_ms=1.5, first_audio_ms=None, total_ms=9.0, rtf=None)
    interactive = wire(p.Done("a", 0.0, 0, timing))
    assert "deadline_met" not in interactive
    assert interactive["timing"] == {"queued_ms": 1.5, "first_audio_ms": None,
                                     "total_ms": 9.0, "rtf": None}
    assert wire(p.Done("a", 10.0, 1, timing, deadline_met=False))["deadline_met"] is False


def test_error_always_has_id_and_field_only_when_set():
    assert wire(p.Error(None, "bad_json", "not JSON")) == {
        "type": "error", "id": None, "code": "bad_json", "message": "not JSON"}
    assert wire(p.Error("a", p.ErrorCode.BAD_MESSAGE, "m", "frame_ms"))["field"] == "frame_ms"


def test_messages_are_frozen_values():
    msg = p.Speak("u1", "Hi.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.text = "changed"  # type: ignore[misc]
    assert msg == p.Speak("u1", "Hi.") and hash(msg) == hash(p.Speak("u1", "Hi."))
    assert {m.TYPE for m in (p.Speak("a", ""), p.Append("a", ""), p.Flush("a"),
                             p.Cancel("a"), p.Ping())} == set(p.CLIENT_TYPES)


def test_protocol_error_carries_code_field_id_and_becomes_an_error_message():
    err = p.ProtocolError(p.ErrorCode.BAD_MESSAGE, "frame_ms out of range", field="frame_ms",
                          id="u1")
    assert (err.code, err.message, err.field, err.id) == (
        p.ErrorCode.BAD_MESSAGE, "frame_ms out of range", "frame_ms", "u1")
    assert str(err) == "frame_ms out of range"
    assert err.to_message() == p.Error("u1", "bad_message", "frame_ms out of range", "frame_ms")
    assert type(err.to_message().code) is str
    # Codes may be given as their strings; positional arguments work too.
    again = p.ProtocolError("overloaded", "queue full", None, "u2")
    assert again.code is p.ErrorCode.OVERLOADED and again.to_message().field is None
    with pytest.raises(ValueError):
        p.ProtocolError("no_such_code", "x")


def test_error_codes_are_exactly_the_protocol_codes():
    assert [c.value for c in p.ErrorCode] == [
        "bad_json", "bad_message", "unknown_type", "binary_not_allowed", "duplicate_id",
        "unknown_id", "input_closed", "text_too_long", "too_many_active", "unsupported",
        "overloaded", "deadline_unmeetable", "slow_consumer", "shutting_down", "internal"]
    assert p.ErrorCode.BAD_JSON == "bad_json" and f"{p.ErrorCode.INTERNAL}" == "internal"


def test_every_error_code_is_documented():
    doc = DOC.read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", doc, flags=re.M))
    codes = {c.value for c in p.ErrorCode}
    assert codes <= documented, codes - documented
