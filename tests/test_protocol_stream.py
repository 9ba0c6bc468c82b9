"""protocol.stream: the utterance's ordering rules, for the sender and the receiver."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import (
    FLAG_SEGMENT_END,
    FLAG_UTTERANCE_END,
    NON_TERMINAL_CODES,
    Cancelled,
    Done,
    Error,
    ErrorCode,
    Hello,
    Limits,
    ModelInfo,
    Timing,
    encode,
    unpack_frame,
)
from protocol.stream import (
    ClientConnection,
    Kind,
    StreamStateError,
    StreamViolation,
    UtteranceSender,
    ends_utterance,
)

TIMING = Timing(1.0, 2.0, 3.0, 0.5)
HELLO = Hello(24000, ("pcm_s16le",), (24000,), (), Limits(10, 2, 100), ModelInfo("m", "random", "cpu"))


def text(message) -> str:
    return encode(message).decode()


# --- the sender ------------------------------------------------------------------------


def test_sender_builds_an_utterance_in_order():
    s = UtteranceSender("u", 7)
    started = s.started("interactive", "pcm_s16le", 24000)
    assert (started.id, started.stream) == ("u", 7)
    frames = [s.frame(b"ab"), s.frame(b"cd", segment_end=True)]
    first = s.segment("One.", 0.0, 1.0)
    frames.append(s.frame(b"ef", utterance_end=True))
    second = s.segment("Two.", 1.0, 0.5)
    done = s.done(1.5, TIMING)
    headers = [unpack_frame(f)[0] for f in frames]
    assert [(h.seq, h.segment, h.stream) for h in headers] == [(0, 0, 7), (1, 0, 7), (2, 1, 7)]
    assert [h.flags for h in headers] == [0, FLAG_SEGMENT_END, FLAG_SEGMENT_END | FLAG_UTTERANCE_END]
    assert [bytes(unpack_frame(f)[1]) for f in frames] == [b"ab", b"cd", b"ef"]
    assert (first.index, second.index, done.segments) == (0, 1, 2)
    assert s.ended


@pytest.mark.parametrize("misuse", [
    lambda s: s.frame(b"x"),  # audio before started
    lambda s: s.cancelled(),  # cancelled before started (a cancel waits for admission)
    lambda s: (s.started("interactive", "pcm_s16le", 24000), s.started("i", "f", 1)),
    lambda s: (s.started("i", "f", 1), s.frame(b"")),  # empty payload
    lambda s: (s.started("i", "f", 1), s.segment("x", 0, 0)),  # segment without a last frame
    lambda s: (s.started("i", "f", 1), s.frame(b"x", segment_end=True), s.frame(b"y")),
    lambda s: (s.started("i", "f", 1), s.frame(b"x"), s.done(1, TIMING)),  # done mid-segment
    lambda s: (s.started("i", "f", 1), s.frame(b"x", utterance_end=True), s.segment("x", 0, 0),
               s.frame(b"y")),  # audio after the utterance's last frame
    lambda s: (s.started("i", "f", 1), s.cancelled(), s.cancelled()),  # two terminals
    lambda s: s.error(ErrorCode.DUPLICATE_ID, "never terminal"),
])
def test_sender_refuses_what_the_rules_forbid(misuse):
    with pytest.raises(StreamStateError):
        misuse(UtteranceSender("u", 1))


def test_a_refusal_before_started_and_an_error_after_the_last_frame_are_allowed():
    refused = UtteranceSender("r", 1)
    assert refused.error(ErrorCode.OVERLOADED, "busy").code == "overloaded" and refused.ended
    late = UtteranceSender("l", 2)
    late.started("i", "f", 1)
    late.frame(b"x", utterance_end=True)
    # A slow consumer may fail the utterance while its last frame is still queued.
    assert late.error(ErrorCode.SLOW_CONSUMER, "not reading").code == "slow_consumer"


def test_non_terminal_codes_are_one_set():
    assert set(NON_TERMINAL_CODES) == {"duplicate_id", "input_closed", "unknown_id"}
    assert not ends_utterance(Error("a", "input_closed", "m"))
    assert ends_utterance(Error("a", "overloaded", "m"))


# --- the receiver ------------------------------------------------------------------------


def connection(*ids: str) -> ClientConnection:
    wire = ClientConnection()
    assert wire.receive(text(HELLO)).kind is Kind.HELLO
    for i in ids:
        wire.opened(i)
    return wire


def test_receiver_classifies_a_whole_utterance():
    wire = connection("u")
    s = UtteranceSender("u", 3)
    items = [text(s.started("interactive", "pcm_s16le", 24000)), s.frame(b"ab", segment_end=True),
             text(s.segment("One.", 0, 1)), text(Error("u", "input_closed", "closed")),
             text(s.done(1, TIMING))]
    kinds = [wire.receive(i).kind for i in items]
    assert kinds == [Kind.STARTED, Kind.AUDIO, Kind.SEGMENT, Kind.NOTICE, Kind.END]
    assert not wire.active("u")
    late = wire.receive(text(Error("u", "unknown_id", "a cancel raced the end")))
    assert late.kind is Kind.NOTICE  # expected after an end, not a violation
    assert wire.receive(text(Done("u", 1, 1, TIMING))).kind is Kind.UNKNOWN
    assert wire.receive(text(Error(None, "bad_json", "x"))).kind is Kind.CONNECTION_ERROR


def test_spoken_and_unspoken_reach_the_client_side():
    wire = connection("u")
    s = UtteranceSender("u", 3)
    wire.receive(text(s.started("interactive", "pcm_s16le", 24000)))
    wire.receive(s.frame(b"ab", segment_end=True))
    segment = wire.receive(text(s.segment("It costs $5.", 0, 1, spoken="It costs five dollars.")))
    done = wire.receive(text(s.done(1, TIMING, unspoken=("Привет.", "!!!"))))
    assert segment.kind is Kind.SEGMENT and done.kind is Kind.END
    assert (segment.message.text, segment.message.spoken) == ("It costs $5.", "It costs five dollars.")
    assert done.message.unspoken == ("Привет.", "!!!")


def test_an_older_server_without_spoken_and_unspoken_still_reads():
    wire = connection("u")
    s = UtteranceSender("u", 3)
    wire.receive(text(s.started("interactive", "pcm_s16le", 24000)))
    wire.receive(s.frame(b"ab", segment_end=True))
    segment = wire.receive(text(s.segment("One.", 0, 1)))
    done = wire.receive(text(s.done(1, TIMING)))
    assert segment.message.spoken is None and done.message.unspoken == ()
    assert "unspoken" not in encode(done.message).decode()


def _started(wire: ClientConnection, uid: str = "u", stream: int = 3) -> UtteranceSender:
    s = UtteranceSender(uid, stream)
    wire.receive(text(s.started("interactive", "pcm_s16le", 24000)))
    return s


def _frame(stream: int, seq: int, segment: int = 0, flags: int = 0) -> bytes:
    from protocol import HEADER
    return HEADER.pack(1, flags, segment, stream, seq) + b"\x00\x00"


@pytest.mark.parametrize("steps, why", [
    ([_frame(3, 0)], "audio of unknown stream"),  # before started
    (["started", _frame(3, 1)], "seq 1, expected 0"),
    (["started", _frame(3, 0, segment=1)], "segment 1 while segment 0"),
    (["started", _frame(3, 0, flags=FLAG_SEGMENT_END), _frame(3, 1)], "after its segment's last"),
    (["started", _frame(3, 0), "segment0"], "segment before its last frame"),
    (["started", "started"], "a second started"),
    (["started", _frame(3, 0, flags=FLAG_SEGMENT_END), "done1"], "done before the last segment"),
    (["started", "done1"], "done counts 1 segments, 0 came"),
    (["started", "cancelled", _frame(3, 0)], "audio after its terminal message"),
])
def test_receiver_reports_each_broken_rule(steps, why):
    wire = connection("u")
    messages = {
        "started": text(UtteranceSender("u", 3).started("interactive", "pcm_s16le", 24000)),
        "segment0": text(Error("u", "x", "y")).replace('"error"', '"segment"').replace(
            '"code":"x","message":"y"', '"index":0,"text":"t","offset_ms":0,"audio_ms":1'),
        "done1": text(Done("u", 1, 1, TIMING)),
        "cancelled": text(Cancelled("u")),
    }
    with pytest.raises(StreamViolation, match=why) as info:
        for step in steps:
            wire.receive(messages.get(step, step) if isinstance(step, str) else step)
    assert info.value.id in ("u", None)


def test_a_second_hello_and_a_reused_active_id_are_refused():
    wire = connection("u")
    with pytest.raises(StreamViolation):
        wire.receive(text(HELLO))
    with pytest.raises(ValueError):
        wire.opened("u")


# --- both sides agree -------------------------------------------------------------------


@st.composite
def utterances(draw):
    """A random valid utterance as sender calls: segments of 1-3 frames each,
    then a terminal."""
    segments = draw(st.lists(st.integers(1, 3), min_size=0, max_size=4))
    terminal = draw(st.sampled_from(["done", "cancelled", "error"]))
    return segments, terminal


@given(utterances())
def test_whatever_the_sender_allows_the_receiver_accepts(plan):
    segments, terminal = plan
    wire = connection("u")
    s = UtteranceSender("u", 9)
    out = [text(s.started("background", "pcm_s16le", 24000))]
    for k, frames in enumerate(segments):
        for f in range(frames):
            last = f == frames - 1
            out.append(s.frame(b"\x01\x02", segment_end=last,
                               utterance_end=last and k == len(segments) - 1 and terminal == "done"))
        out.append(text(s.segment(f"s{k}", 0, 1)))
    if terminal == "done":
        out.append(text(s.done(1, TIMING)))
    elif terminal == "cancelled":
        out.append(text(s.cancelled()))
    else:
        out.append(text(s.error(ErrorCode.INTERNAL, "boom")))
    kinds = [wire.receive(item).kind for item in out]
    assert kinds[0] is Kind.STARTED and kinds[-1] is Kind.END
    assert kinds.count(Kind.AUDIO) == sum(segments) and kinds.count(Kind.SEGMENT) == len(segments)
    assert not wire.active("u")
