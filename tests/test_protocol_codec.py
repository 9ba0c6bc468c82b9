"""protocol.codec: client frames in, validated messages or ProtocolError out;
messages out as JSON and back."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protocol_strategies import (
    SMALL_OFFER,
    client_messages,
    json_values,
    server_messages,
    speaker_embedding,
)

import protocol as p
from protocol.errors import ErrorCode as E

OFFER = p.DEFAULT_OFFER


def frame(**fields) -> str:
    return json.dumps(fields)


def speak(**fields) -> str:
    return frame(**{"type": "speak", "id": "u1", "text": "Hello.", **fields})


def refusal(text: str | bytes, offer: p.Offer | None = OFFER) -> p.ProtocolError:
    with pytest.raises(p.ProtocolError) as caught:
        p.decode_client(text, offer)
    return caught.value


# --- bad_json, unknown_type, type ------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["", "not json", "{", "[]", "[1, 2]", "1", '"speak"', "null", "true",
     '{"a": 1e400}', '{"a": NaN}', b"\xff\xfe", b'{"type": "cancel", "id": "\xff"}'],
)
def test_frames_that_are_not_json_objects_are_bad_json(text):
    err = refusal(text)
    assert (err.code, err.field, err.id) == (E.BAD_JSON, None, None)


def test_a_frame_may_be_utf8_bytes():
    assert p.decode_client(b'{"type": "cancel", "id": "a"}') == p.Cancel("a")
    assert p.decode_client(memoryview(b'{"type": "flush", "id": "a"}')) == p.Flush("a")


def test_a_frame_of_another_python_type_is_a_programming_error():
    with pytest.raises(TypeError):
        p.decode_client({"type": "cancel", "id": "a"})  # type: ignore[arg-type]


def test_unknown_type_echoes_a_valid_id_only():
    err = refusal(frame(type="sing", id="u1"))
    assert (err.code, err.field, err.id) == (E.UNKNOWN_TYPE, "type", "u1")
    err = refusal(frame(type="sing", id="bad id"))
    assert (err.code, err.id) == (E.UNKNOWN_TYPE, None)
    # Server message types are not client messages.
    assert refusal(frame(type="hello", id="u1")).code == E.UNKNOWN_TYPE


@pytest.mark.parametrize("fields", [{"id": "u1"}, {"id": "u1", "type": None},
                                    {"id": "u1", "type": 3}, {"id": "u1", "type": ["speak"]}])
def test_a_missing_or_non_string_type_is_bad_message(fields):
    err = refusal(frame(**fields))
    assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, "type", "u1")


# --- id ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_id", ["", "a b", "a/b", "é", "x" * 65, "abc\n", 5, 1.5, True, [], {}],
)
@pytest.mark.parametrize("kind", ["speak", "append", "flush", "cancel"])
def test_an_invalid_id_is_bad_message_without_an_id(kind, bad_id):
    err = refusal(frame(type=kind, id=bad_id, text="x"))
    assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, "id", None)


@pytest.mark.parametrize("kind", ["speak", "append", "flush", "cancel"])
def test_a_missing_id_is_bad_message(kind):
    for fields in ({}, {"id": None}):
        err = refusal(frame(type=kind, text="x", **fields))
        assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, "id", None)


def test_ids_use_the_whole_allowed_alphabet_up_to_64_characters():
    for good in ["a", "A.b_c:d-e", "0" * 64, "Zz09._:-"]:
        assert p.decode_client(frame(type="cancel", id=good)) == p.Cancel(good)
        assert p.is_valid_id(good)


# --- speak: bad_message per field -------------------------------------------

BAD_FIELDS = [
    ("text", None), ("text", 5), ("text", ["a"]),
    ("final", "yes"), ("final", 1), ("final", 0),
    ("lane", 5), ("lane", ["interactive"]),
    ("deadline_ms", 0), ("deadline_ms", -1), ("deadline_ms", 1.5), ("deadline_ms", 5000.0),
    ("deadline_ms", True), ("deadline_ms", "5000"), ("deadline_ms", 2**32),
    ("voice", 5), ("voice", {"name": "alice"}),
    ("format", 1), ("format", True),
    ("sample_rate", "24000"), ("sample_rate", 24000.0), ("sample_rate", 0),
    ("sample_rate", -24000), ("sample_rate", False),
    ("frame_ms", 9), ("frame_ms", 1001), ("frame_ms", 100.0), ("frame_ms", "100"),
    ("frame_ms", True), ("frame_ms", 0),
    ("chunking", []), ("chunking", 2),
    ("params", "x"), ("params", []), ("params", 1),
]


@pytest.mark.parametrize(("name", "value"), BAD_FIELDS)
def test_an_ill_typed_or_out_of_range_speak_field_is_bad_message(name, value):
    fields = {name: value}
    if name == "text" and value is None:
        fields = {"text": None}
    err = refusal(speak(**fields))
    assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, name, "u1")
    assert err.message


def test_a_missing_text_is_bad_message():
    err = refusal(frame(type="speak", id="u1"))
    assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, "text", "u1")


BAD_PARAMS = [
    ("temperature", 0), ("temperature", -0.1), ("temperature", 2.01), ("temperature", "0.3"),
    ("temperature", True),
    ("top_p", 0), ("top_p", 0.0), ("top_p", 1.0001), ("top_p", [0.7]),
    ("top_k", 0), ("top_k", 627), ("top_k", 20.0), ("top_k", "20"),
    ("repetition_penalty", 0.99), ("repetition_penalty", 2.01), ("repetition_penalty", False),
    ("seed", -1), ("seed", 2**32), ("seed", 1.0), ("seed", "1"),
]


@pytest.mark.parametrize(("name", "value"), BAD_PARAMS)
def test_an_out_of_range_param_is_bad_message_naming_it(name, value):
    err = refusal(speak(params={name: value}))
    assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, f"params.{name}", "u1")


def test_params_at_their_bounds_are_accepted_and_numbers_become_floats():
    msg = p.decode_client(speak(params={
        "temperature": 2, "top_p": 1, "top_k": 626, "repetition_penalty": 1, "seed": 2**32 - 1,
    }))
    assert msg.params == p.Params(2.0, 1.0, 626, 1.0, 2**32 - 1)
    assert type(msg.params.temperature) is float and type(msg.params.top_k) is int
    low = p.decode_client(speak(params={"temperature": 1e-9, "top_p": 1e-9, "top_k": 1,
                                        "repetition_penalty": 2, "seed": 0}))
    assert low.params == p.Params(1e-9, 1e-9, 1, 2.0, 0)


# --- speak: unsupported ------------------------------------------------------

UNSUPPORTED = [
    ("format", "mp3"), ("format", ""), ("format", "PCM_S16LE"),
    ("sample_rate", 11025), ("sample_rate", 384000),
    ("lane", "urgent"), ("lane", ""),
    ("chunking", "word"),
    ("voice", "nobody"), ("voice", ""), ("voice", "seed:"), ("voice", "seed:-1"),
    ("voice", "seed:01"), ("voice", "seed:4294967296"), ("voice", "seed:1.5"),
    ("voice", "seed: 1"), ("voice", "seed:1\n"), ("voice", "\u4e00" * 15),
    ("voice", "\u4e00" * 4097), ("voice", "\u4e00" * 20 + "x"),
]


@pytest.mark.parametrize(("name", "value"), UNSUPPORTED)
def test_a_well_formed_value_not_offered_is_unsupported(name, value):
    err = refusal(speak(**{name: value}))
    assert (err.code, err.field, err.id) == (E.UNSUPPORTED, name, "u1")


def test_the_offer_decides_formats_rates_voices():
    msg = p.decode_client(speak(format="pcm_mulaw", sample_rate=16000, voice="alice"), SMALL_OFFER)
    assert (msg.format, msg.sample_rate, msg.voice) == ("pcm_mulaw", 16000, "alice")
    assert refusal(speak(format="pcm_f32le"), SMALL_OFFER).code == E.UNSUPPORTED
    assert refusal(speak(sample_rate=48000), SMALL_OFFER).code == E.UNSUPPORTED
    assert refusal(speak(voice="carol"), SMALL_OFFER).code == E.UNSUPPORTED


def test_voices_may_be_seeds_or_encoded_embeddings():
    for voice in ["seed:0", "seed:42", "seed:4294967295", speaker_embedding(3)]:
        assert p.decode_client(speak(voice=voice)).voice == voice
    assert p.voice_kind("seed:42", ()) == p.VoiceKind.SEED
    assert p.seed_of("seed:42") == 42 and p.seed_of("seed:4294967296") is None
    assert p.voice_kind(speaker_embedding(1), ()) == p.VoiceKind.EMBEDDING
    # An offered name wins over the seed syntax.
    assert p.voice_kind("seed:7", SMALL_OFFER.voices) == p.VoiceKind.NAME
    assert p.voice_kind("alice", SMALL_OFFER.voices) == p.VoiceKind.NAME
    assert p.voice_kind("carol", SMALL_OFFER.voices) is None


def test_sample_voices_carry_chattts_codes_and_a_transcript():
    from protocol.voices import sample_of, sample_voice
    voice = sample_voice(speaker_embedding(2), "Hello: there, 3 cats.")
    assert voice.startswith("sample:")
    assert sample_of(voice) == (speaker_embedding(2), "Hello: there, 3 cats.")
    assert p.voice_kind(voice, SMALL_OFFER.voices) == p.VoiceKind.SAMPLE
    assert p.decode_client(speak(voice=voice)).voice == voice
    bad = [voice.replace("sample:", "sample:x"), f"sample:{speaker_embedding(2)}:",
           f"sample:{speaker_embedding(2)}", f"sample:{speaker_embedding(2)}:a\nb",
           f"sample:{speaker_embedding(2)}:" + "a" * 1001, "sample:一一:hi"]
    for wrong in bad:
        assert sample_of(wrong) is None, wrong
        assert p.voice_kind(wrong, SMALL_OFFER.voices) is None, wrong
        with pytest.raises(p.ProtocolError):
            p.decode_client(speak(voice=wrong))
    with pytest.raises(ValueError):
        sample_voice(speaker_embedding(2), "two\nlines")


def test_a_real_chattts_speaker_string_has_the_embedding_syntax():
    assert p.is_embedding(speaker_embedding(0))
    assert len(speaker_embedding(0)) > 500


# --- text_too_long -----------------------------------------------------------


def test_text_over_the_offer_limit_is_text_too_long():
    limit = SMALL_OFFER.max_text_chars
    assert p.decode_client(speak(text="é" * limit), SMALL_OFFER).text == "é" * limit
    err = refusal(speak(text="é" * (limit + 1)), SMALL_OFFER)
    assert (err.code, err.field, err.id) == (E.TEXT_TOO_LONG, "text", "u1")
    err = refusal(frame(type="append", id="u2", text="x" * (limit + 1)), SMALL_OFFER)
    assert (err.code, err.field, err.id) == (E.TEXT_TOO_LONG, "text", "u2")


# --- defaults, null, extra fields, deadline ---------------------------------


def test_speak_defaults():
    assert p.decode_client(frame(type="speak", id="u1", text="Hi.")) == p.Speak("u1", "Hi.")
    msg = p.decode_client(frame(type="speak", id="u1", text="Hi."))
    assert (msg.final, msg.lane, msg.format, msg.sample_rate, msg.frame_ms, msg.chunking) == (
        True, "interactive", "pcm_s16le", 24000, 100, "sentence")


def test_null_means_absent_for_every_optional_field():
    fields = dict.fromkeys(["final", "lane", "deadline_ms", "voice", "format", "sample_rate",
                            "frame_ms", "chunking", "params"])
    assert p.decode_client(speak(**fields)) == p.Speak("u1", "Hello.")
    nulls = dict.fromkeys(["temperature", "top_p", "top_k", "repetition_penalty", "seed"])
    assert p.decode_client(speak(params=nulls)).params == p.Params()
    assert p.decode_client(frame(type="append", id="a", text="x", final=None)).final is False


def test_unknown_extra_fields_are_ignored():
    msg = p.decode_client(speak(emotion="happy", params={"top_k": 5, "mirostat": 2}))
    assert msg == p.Speak("u1", "Hello.", params=p.Params(top_k=5))


def test_deadline_is_kept_on_background_and_dropped_on_interactive():
    bg = p.decode_client(speak(lane="background", deadline_ms=30000))
    assert (bg.lane, bg.deadline_ms) == ("background", 30000)
    inter = p.decode_client(speak(lane="interactive", deadline_ms=30000))
    assert inter.deadline_ms is None
    # ... but it is still validated on the interactive lane.
    assert refusal(speak(deadline_ms=0)).field == "deadline_ms"


def test_append_flush_cancel():
    assert p.decode_client(frame(type="append", id="a", text=" more")) == p.Append("a", " more")
    assert p.decode_client(frame(type="append", id="a", text="", final=True)) == p.Append(
        "a", "", True)
    assert p.decode_client(frame(type="flush", id="a", text="ignored")) == p.Flush("a")
    assert p.decode_client(frame(type="cancel", id="a")) == p.Cancel("a")
    err = refusal(frame(type="append", id="a"))
    assert (err.code, err.field) == (E.BAD_MESSAGE, "text")
    err = refusal(frame(type="append", id="a", text="x", final="no"))
    assert (err.code, err.field) == (E.BAD_MESSAGE, "final")


def test_without_an_offer_only_protocol_rules_apply():
    msg = p.decode_client(speak(voice="anything", sample_rate=11025, text="x" * 100_000), None)
    assert (msg.voice, msg.sample_rate) == ("anything", 11025)
    assert refusal(speak(format="mp3"), None).code == E.UNSUPPORTED
    assert refusal(speak(sample_rate=0), None).code == E.BAD_MESSAGE


def test_the_first_wrong_field_in_protocol_order_is_reported():
    err = refusal(speak(frame_ms=1, format="mp3", final="x"))
    assert err.field == "final"
    err = refusal(speak(frame_ms=1, format="mp3"))
    assert err.field == "format"


# --- properties ----------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text() | st.binary())
def test_decoding_arbitrary_frames_raises_only_protocol_errors(data):
    try:
        p.decode_client(data, OFFER)
    except p.ProtocolError as err:
        assert err.code in (E.BAD_JSON, E.BAD_MESSAGE, E.UNKNOWN_TYPE, E.UNSUPPORTED,
                            E.TEXT_TOO_LONG)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from(["speak", "append", "flush", "cancel", "x", None]),
       st.dictionaries(st.sampled_from(["id", "text", "final", "lane", "deadline_ms", "voice",
                                        "format", "sample_rate", "frame_ms", "chunking",
                                        "params"]), json_values))
def test_decoding_arbitrary_json_raises_only_protocol_errors(value, kind, fields):
    for candidate in (value, {"type": kind, **fields}):
        try:
            msg = p.decode_client(json.dumps(candidate), SMALL_OFFER)
        except p.ProtocolError as err:
            assert err.id is None or p.is_valid_id(err.id)
            assert err.code != E.BAD_JSON or not isinstance(candidate, dict)
        else:
            assert kind == msg.TYPE


@settings(max_examples=300, deadline=None)
@given(client_messages(OFFER) | client_messages(SMALL_OFFER))
def test_valid_client_messages_round_trip(msg):
    assert p.decode_client(p.encode(msg).decode(), None) == msg
    for offer in (OFFER, SMALL_OFFER):
        if _fits(msg, offer):
            assert p.decode_client(p.encode(msg), offer) == msg


def _fits(msg, offer: p.Offer) -> bool:
    if isinstance(msg, (p.Flush, p.Cancel)):
        return True
    if isinstance(msg, p.Append):
        return len(msg.text) <= offer.max_text_chars
    return (msg.format in offer.formats and msg.sample_rate in offer.sample_rates
            and (msg.voice is None or p.voice_kind(msg.voice, offer.voices) is not None)
            and len(msg.text) <= offer.max_text_chars
            and (offer.refine or not msg.params.wants_refine))


@settings(max_examples=300, deadline=None)
@given(server_messages)
def test_server_messages_round_trip(msg):
    assert p.decode_server(p.encode(msg)) == msg


# --- decode_server ---------------------------------------------------------------


def test_decode_server_reads_a_hello_and_ignores_new_fields():
    text = orjson.dumps({
        "type": "hello", "protocol": 1, "sample_rate": 24000, "formats": ["pcm_s16le"],
        "sample_rates": [24000], "voices": ["alice"], "future": {"x": 1},
        "limits": {"max_text_chars": 5000, "max_active": 8, "max_message_bytes": 65536},
        "model": {"name": "chattts", "weights": "tiny-random", "device": "cpu", "dtype": "fp32"},
    })
    hello = p.decode_server(text)
    assert hello == p.Hello(24000, ("pcm_s16le",), (24000,), ("alice",),
                            p.Limits(5000, 8, 65536), p.ModelInfo("chattts", "tiny-random", "cpu"))
    offer = p.Offer.from_hello(hello)
    assert (offer.voices, offer.max_text_chars) == (("alice",), 5000)


@pytest.mark.parametrize(
    ("text", "code", "field"),
    [
        ("[]", E.BAD_JSON, None),
        ('{"type": "started", "id": "a"}', E.BAD_MESSAGE, "stream"),
        ('{"type": "done", "id": "a", "audio_ms": 1, "segments": 1}', E.BAD_MESSAGE, "timing"),
        ('{"type": "done", "id": "a", "audio_ms": 1, "segments": 1, "timing": {}}',
         E.BAD_MESSAGE, "timing.queued_ms"),
        ('{"type": "segment", "id": "a", "index": -1, "text": "", "offset_ms": 0, '
         '"audio_ms": 0}', E.BAD_MESSAGE, "index"),
        ('{"type": "error", "id": null, "code": 5, "message": "m"}', E.BAD_MESSAGE, "code"),
        ('{"type": "audio", "id": "a"}', E.UNKNOWN_TYPE, "type"),
    ],
)
def test_decode_server_refuses_malformed_messages(text, code, field):
    with pytest.raises(p.ProtocolError) as caught:
        p.decode_server(text)
    assert (caught.value.code, caught.value.field) == (code, field)
