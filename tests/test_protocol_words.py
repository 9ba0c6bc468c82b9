"""The voice-agent additions, bytes in and bytes out: speak.timestamps, words,
flush.flush_id and flushed, ping and pong, hello.limits.idle_timeout_s."""

from __future__ import annotations

import json

import orjson
import pytest
from jsonschema import Draft202012Validator

import protocol as p
from protocol.schema import client_schema
from protocol.server_schema import server_schema
from protocol.stream import ClientConnection, Kind, StreamStateError, StreamViolation, UtteranceSender

W = p.WordTiming


def decode(message: dict) -> p.ClientMessage:
    return p.decode_client(orjson.dumps(message))


def refusal(message: dict) -> p.ProtocolError:
    with pytest.raises(p.ProtocolError) as info:
        decode(message)
    return info.value


# --- client messages -----------------------------------------------------------------


def test_timestamps_default_false_and_round_trip():
    assert decode({"type": "speak", "id": "u", "text": "Hi."}).timestamps is False
    speak = decode({"type": "speak", "id": "u", "text": "Hi.", "timestamps": True})
    assert speak.timestamps is True
    assert json.loads(p.encode(speak))["timestamps"] is True
    # left out when false: an older server never sees the field
    assert "timestamps" not in json.loads(p.encode(p.Speak("u", "Hi.")))
    assert decode({"type": "speak", "id": "u", "text": "", "timestamps": None}).timestamps is False


@pytest.mark.parametrize("value", [1, 0, "true", [], {}])
def test_a_non_boolean_timestamps_is_bad_message(value):
    error = refusal({"type": "speak", "id": "u", "text": "Hi.", "timestamps": value})
    assert (error.code, error.field, error.id) == (p.ErrorCode.BAD_MESSAGE, "timestamps", "u")


def test_flush_id_is_optional_and_round_trips():
    assert decode({"type": "flush", "id": "u"}) == p.Flush("u")
    flush = decode({"type": "flush", "id": "u", "flush_id": "turn-3:a.b_c"})
    assert flush == p.Flush("u", "turn-3:a.b_c")
    assert p.encode(flush) == b'{"type":"flush","id":"u","flush_id":"turn-3:a.b_c"}'
    assert p.encode(p.Flush("u")) == b'{"type":"flush","id":"u"}'
    assert decode({"type": "flush", "id": "u", "flush_id": "f" * 64}).flush_id == "f" * 64


@pytest.mark.parametrize("value", ["", "f" * 65, "a b", "f\n", "é", "a/b", 5, True, [], {}])
def test_a_bad_flush_id_is_bad_message_with_field(value):
    error = refusal({"type": "flush", "id": "u", "flush_id": value})
    assert (error.code, error.field, error.id) == (p.ErrorCode.BAD_MESSAGE, "flush_id", "u")
    assert not Draft202012Validator(client_schema()).is_valid(
        {"type": "flush", "id": "u", "flush_id": value})


def test_ping_needs_no_id_and_ignores_one():
    assert decode({"type": "ping"}) == p.Ping()
    assert decode({"type": "ping", "data": "42"}) == p.Ping("42")
    assert decode({"type": "ping", "id": "not an id!", "data": ""}) == p.Ping("")
    assert p.encode(p.Ping("x")) == b'{"type":"ping","data":"x"}'
    assert p.encode(p.Ping()) == b'{"type":"ping"}'


@pytest.mark.parametrize("value", [5, True, ["a"], {}, "é" * (p.PING_DATA_MAX_CHARS + 1)])
def test_bad_ping_data_is_a_connection_level_bad_message(value):
    error = refusal({"type": "ping", "id": "u", "data": value})
    # a ping names no utterance, so its error must not end one that has this id
    assert (error.code, error.field, error.id) == (p.ErrorCode.BAD_MESSAGE, "data", None)


# --- server messages -----------------------------------------------------------------

WORDS = p.Words("u", 2, (W("twenty", 10.0, 250.5, "$20"), W("dollars", 250.5, 600.0, "$20"),
                          W("now", 800.0, 1000.0)))


def test_words_shape_on_the_wire():
    assert json.loads(p.encode(WORDS)) == {
        "type": "words", "id": "u", "segment": 2, "method": "estimated",
        "words": [{"word": "twenty", "start_ms": 10.0, "end_ms": 250.5, "original": "$20"},
                  {"word": "dollars", "start_ms": 250.5, "end_ms": 600.0, "original": "$20"},
                  {"word": "now", "start_ms": 800.0, "end_ms": 1000.0}]}


PENDING = p.Words("u", 0, (W("it", 0.0, 120.0),), pending=(p.WordStart("twenty", 150.0, "$20"),))


def test_pending_words_on_the_wire_and_left_out_when_none():
    wire = json.loads(p.encode(PENDING))
    assert wire["pending"] == [{"word": "twenty", "start_ms": 150.0, "original": "$20"}]
    assert "pending" not in json.loads(p.encode(WORDS))
    assert p.decode_server(orjson.dumps({**wire, "pending": None})).pending == ()


@pytest.mark.parametrize("message", [
    WORDS, PENDING, p.Words("u", 0, ()), p.Flushed("u", "f1"), p.Pong(), p.Pong("abc"),
    p.Hello(24000, ("pcm_s16le",), (24000,), (), p.Limits(10, 2, 100, 300.0),
            p.ModelInfo("chattts", "tone", "cpu")),
], ids=lambda m: type(m).__name__)
def test_new_server_messages_validate_and_read_back(message):
    Draft202012Validator(server_schema()).validate(json.loads(p.encode(message)))
    assert p.decode_server(p.encode(message)) == message


def _columns(message: p.Words) -> p.TimedWords:
    words, starts, ends, originals = zip(*message.words) if message.words else ((),) * 4
    return p.TimedWords(message.id, message.segment, words, starts, ends, originals,
                        message.pending)


ODD = p.Words('a"b\\', 65535, (W("好", 0.0, 1e-7), W("100%", 2905.777777777778, 1e16, "50% \"off\""),
                             W("naïve", 1e16, 1.5e300, "%s%d")), pending=(p.WordStart("x", 1.5e300),))


@pytest.mark.parametrize("message", [WORDS, PENDING, ODD, p.Words("u", 0, ())], ids=str)
def test_the_servers_columns_make_the_same_words_message(message):
    """The server sends ``TimedWords`` (columns): the same bytes as ``Words``,
    escapes and odd floats included."""
    timed = _columns(message)
    assert p.encode(timed) == orjson.dumps(message.to_wire()) == orjson.dumps(timed.to_wire())
    assert p.decode_server(p.encode(timed)) == message


def test_an_older_hello_without_idle_timeout_still_reads():
    wire = {"type": "hello", "protocol": 1, "sample_rate": 24000, "formats": [], "sample_rates": [],
            "voices": [], "limits": {"max_text_chars": 1, "max_active": 1, "max_message_bytes": 1},
            "model": {"name": "m", "weights": "random", "device": "cpu"}}
    assert p.decode_server(orjson.dumps(wire)).limits.idle_timeout_s is None


@pytest.mark.parametrize(("words", "field"), [
    ("x", "words"), ([1], "words.0"), ([{"word": "a", "start_ms": 2, "end_ms": 1}], "words.0.end_ms"),
    ([{"word": "a", "start_ms": -1, "end_ms": 1}], "words.0.start_ms"),
    ([{"word": 5, "start_ms": 0, "end_ms": 1}], "words.0.word"),
])
def test_a_malformed_words_message_names_its_field(words, field):
    wire = {"type": "words", "id": "u", "segment": 0, "words": words, "method": "estimated"}
    with pytest.raises(p.ProtocolError) as info:
        p.decode_server(orjson.dumps(wire))
    assert info.value.field == field


@pytest.mark.parametrize(("pending", "field"), [
    ("x", "pending"), ([1], "pending.0"), ([{"word": "a"}], "pending.0.start_ms"),
    ([{"word": "a", "start_ms": -1}], "pending.0.start_ms"),
    ([{"word": None, "start_ms": 1}], "pending.0.word"),
])
def test_a_malformed_pending_names_its_field(pending, field):
    wire = {"type": "words", "id": "u", "segment": 0, "words": [], "method": "estimated",
            "pending": pending}
    with pytest.raises(p.ProtocolError) as info:
        p.decode_server(orjson.dumps(wire))
    assert info.value.field == field


# --- ordering ------------------------------------------------------------------------


def _received(sender_steps) -> list[Kind]:
    """Run a sender through ``sender_steps`` and a receiver over its output."""
    client = ClientConnection()
    client.receive(p.encode(p.Hello(24000, (), (), (), p.Limits(1, 1, 1),
                                    p.ModelInfo("m", "random", "cpu"))).decode())
    client.opened("u")
    kinds = []
    for item in sender_steps(UtteranceSender("u", 1)):
        frame = item if isinstance(item, bytes) else p.encode(item).decode()
        kinds.append(client.receive(frame).kind)
    return kinds


def test_words_come_before_their_segments_last_frame_and_flushed_before_done():
    def steps(s: UtteranceSender):
        yield s.started("interactive", "pcm_s16le", 24000)
        yield s.words(("one",), (0.0,), (5.0,), (None,))
        yield s.frame(b"ab")
        yield s.words(("two",), (6.0,), (10.0,), (None,))
        yield s.frame(b"cd", segment_end=True)
        yield s.segment("One two.", 0.0, 10.0)
        yield s.flushed("f1")
        yield s.words(("three",), (10.0,), (20.0,), (None,))
        yield s.frame(b"ef", utterance_end=True)
        yield s.flushed("f2")
        yield s.segment("Three.", 10.0, 10.0)
        yield s.done(20.0, p.Timing(0, 0, 1, 1))
    assert _received(steps) == [Kind.STARTED, Kind.WORDS, Kind.AUDIO, Kind.WORDS, Kind.AUDIO,
                                Kind.SEGMENT, Kind.FLUSHED, Kind.WORDS, Kind.AUDIO, Kind.FLUSHED,
                                Kind.SEGMENT, Kind.END]


def test_the_sender_refuses_words_and_flushed_out_of_place():
    s = UtteranceSender("u", 1)
    with pytest.raises(StreamStateError):
        s.words((), (), (), ())
    with pytest.raises(StreamStateError):
        s.flushed("f")
    s.started("interactive", "pcm_s16le", 24000)
    s.frame(b"ab", segment_end=True)
    with pytest.raises(StreamStateError):  # timing after its audio
        s.words((), (), (), ())
    s.segment("x", 0, 1)
    s.cancelled()
    with pytest.raises(StreamStateError):
        s.flushed("f")


def _violation(messages) -> str:
    client = ClientConnection()
    client.opened("u")
    with pytest.raises(StreamViolation) as info:
        for m in messages:
            client.receive(m if isinstance(m, bytes) else p.encode(m).decode())
    return str(info.value)


STARTED = p.Started("u", 1, "interactive", "pcm_s16le", 24000)


def test_the_receiver_catches_words_that_break_the_rules():
    s = UtteranceSender("u", 1)
    s.started("interactive", "pcm_s16le", 24000)
    last = s.frame(b"ab", segment_end=True)
    assert "after their segment's last frame" in _violation([STARTED, last, WORDS.__class__(
        "u", 0, (W("a", 0, 1),))])
    assert "while 0 is open" in _violation([STARTED, p.Words("u", 1, (W("a", 0, 1),))])
    assert "starts before" in _violation([STARTED, p.Words("u", 0, (W("a", 0, 5), W("b", 4, 6)))])
    assert "starts before" in _violation([STARTED, p.Words("u", 0, (W("a", 0, 5),)),
                                          p.Words("u", 0, (W("b", 1, 6),))])
    assert "outside the segment" in _violation([STARTED, p.Words("u", 0, (W("a", 0, 5),)), last,
                                            p.Segment("u", 0, "a", 0.0, 4.0)])
    assert "flushed before started" in _violation([p.Flushed("u", "f")])


def test_the_receiver_holds_a_pending_word_to_the_start_it_was_announced_with():
    a, b = p.WordStart("a", 0.0), p.WordStart("b", 5.0)
    ok = ClientConnection()
    ok.opened("u")
    ok.receive(p.encode(STARTED).decode())
    for m in [p.Words("u", 0, (), pending=(a,)), p.Words("u", 0, (W("a", 0, 5),)),
              p.Words("u", 0, (), pending=(b,)), p.Words("u", 0, (W("b", 5, 9),))]:
        assert ok.receive(p.encode(m).decode()).kind is Kind.WORDS
    assert "came again" in _violation([STARTED, p.Words("u", 0, (), pending=(a,)),
                                       p.Words("u", 0, (W("a", 1, 5),))])
    assert "came again" in _violation([STARTED, p.Words("u", 0, (), pending=(a,)),
                                       p.Words("u", 0, (W("b", 0, 5),))])
    assert "vanished" in _violation([STARTED, p.Words("u", 0, (), pending=(a,)),
                                     p.Words("u", 0, ())])
    assert "starts before" in _violation([STARTED, p.Words("u", 0, (W("a", 0, 5),),
                                                           pending=(p.WordStart("b", 4.0),))])
    s = UtteranceSender("u", 1)
    s.started("interactive", "pcm_s16le", 24000)
    last = s.frame(b"ab", segment_end=True)
    assert "never came" in _violation([STARTED, p.Words("u", 0, (), pending=(a,)), last,
                                       p.Segment("u", 0, "a", 0.0, 4.0)])


def test_pong_names_no_utterance():
    client = ClientConnection()
    received = client.receive(p.encode(p.Pong("7")).decode())
    assert (received.kind, received.id, received.message) == (Kind.PONG, None, p.Pong("7"))
