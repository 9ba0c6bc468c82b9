"""realtime.server.stream.word_timing.WordTimer against the rules a client checks (protocol.words.WordOrder)
and the promise of docs/protocol.md ("When they come"): pushes of random sizes into a fake
framer, one segment after another, with and without the worker's last-chunk mark. Every
message decodes as a ``words`` message and passes WordOrder; every word that has begun in
the audio framed so far is known (in a message's words or its latest pending) before the
next push; each word comes exactly once, in order; the words start at the segment's first
sample and end at its last; a word in progress is announced once, not at every push; the
speaking rate learnt from a segment is its span over its units."""

from __future__ import annotations

import random

import pytest

import protocol as p
from protocol.words import WordOrder
from realtime.server.stream.word_timing import WordTimer
from realtime.speech.timing import PRIOR_UNIT_MS, plan_words

RATE = 24000
SLACK_MS = 1e-6  # the server's own floats, no wire rounding: exact up to float error
TEXTS = [
    "Well, this one pauses; twice, then: ends here now.",
    "It costs twenty dollars today.",
    "Short.",
    "word " * 30 + "end.",
    "今天天气很好，我们去公园散步吧。",
]


class _Framer:
    """The framer's counters as the utterance keeps them (output-rate samples)."""

    sample_rate = RATE

    def __init__(self) -> None:
        self.samples_sent = 0
        self.segment_samples = 0

    def ms(self, samples: int) -> float:
        return samples * 1000 / self.sample_rate


def _message(body: bytes, segment: int) -> p.Words:
    message = p.decode_server(p.encode(p.TimedWords.from_body("u1", segment, body)))
    assert isinstance(message, p.Words) and message.id == "u1" and message.segment == segment
    assert message.method == "estimated"
    return message


class _Client:
    """What a client learns of one segment: every word and the latest pending."""

    def __init__(self, segment: int) -> None:
        self.segment, self.order = segment, WordOrder(SLACK_MS)
        self.words: list[p.WordTiming] = []
        self.pending: tuple[p.WordStart, ...] = ()
        self.messages = 0

    def read(self, body: bytes | None) -> None:
        if body is None:
            return
        message = _message(body, self.segment)
        assert message.words or message.pending, "a message that says nothing"
        assert self.order.add(message) is None
        self.words += message.words
        self.pending = message.pending
        self.messages += 1

    def known_starts(self) -> list[float]:
        return [w.start_ms for w in self.words] + [w.start_ms for w in self.pending]


def _run_segment(timer: WordTimer, framer: _Framer, index: int, text: str, seconds: float,
                 rng: random.Random, mark_last: bool) -> tuple[_Client, float, float]:
    """One segment of ``seconds`` of audio pushed in random chunks; returns what the client
    read and the segment's span (ms)."""
    client = _Client(index)
    origin_ms = framer.ms(framer.samples_sent)
    # Until the span is known, the words are at the rate learnt so far (the module's model).
    at_rate = [origin_ms + start * timer.unit_ms for start in plan_words(text).starts]
    total = int(seconds * RATE)
    framer.segment_samples = 0
    timer.opened(index, text, None)
    pushed = 0
    while pushed < total:
        step = min(total - pushed, rng.randint(120, 4800))  # 5-200 ms a push
        pushed += step
        framer.samples_sent += step
        framer.segment_samples += step
        last = mark_last and pushed == total
        client.read(timer.pushed(pushed, last))  # 24 kHz source, the output rate
        sent_ms = framer.ms(framer.samples_sent)
        if not last:
            begun = sum(1 for start in at_rate if start < sent_ms)
            assert len(client.known_starts()) >= begun, "a word begun in the framed audio is unknown"
            assert client.known_starts() == pytest.approx(at_rate[:len(client.known_starts())])
    client.read(timer.ended())
    end_ms = framer.ms(framer.samples_sent)
    assert client.order.closed(origin_ms, end_ms - origin_ms) is None
    return client, origin_ms, end_ms


@pytest.mark.parametrize("seed", range(12))
def test_streamed_segments_keep_every_rule_a_client_checks(seed):
    rng = random.Random(seed)
    framer = _Framer()
    timer = WordTimer(framer, streaming=True)
    for index in range(3):
        text = rng.choice(TEXTS)
        plan = plan_words(text)
        seconds = rng.uniform(0.3, 6.0)
        client, origin_ms, end_ms = _run_segment(timer, framer, index, text, seconds, rng,
                                                 mark_last=rng.random() < 0.5)
        assert [w.word for w in client.words] == list(plan.words)  # each once, in order
        assert client.pending == ()
        assert client.words[0].start_ms == pytest.approx(origin_ms, abs=1e-6)
        assert client.words[-1].end_ms == pytest.approx(end_ms, abs=1e-6)
        assert all(a.end_ms <= b.start_ms + 1e-6 for a, b in zip(client.words, client.words[1:]))
        assert client.messages <= len(plan.words) + 1  # one per push in which a word begins
        assert timer.unit_ms == pytest.approx((end_ms - origin_ms) / plan.total)


def test_a_word_in_progress_is_announced_once():
    framer = _Framer()
    timer = WordTimer(framer, streaming=True)
    text = "alpha bravo charlie delta echo foxtrot"
    timer.opened(0, text, None)
    bodies = []
    for _ in range(200):  # 5 ms pushes: many per word
        framer.samples_sent += 120
        framer.segment_samples += 120
        bodies.append(timer.pushed(framer.segment_samples))
    said = [_message(b, 0) for b in bodies if b is not None]
    starts = [w.start_ms for m in said for w in m.pending]
    assert len(starts) == len(set(starts))  # no pending word twice
    for before, now in zip(said, said[1:]):  # each message says something new
        assert now.words or now.pending != before.pending
    first = said[0]
    assert first.words == () and [w.word for w in first.pending] == ["alpha"]
    assert first.pending[0].start_ms == 0.0


def test_sentence_chunking_sends_every_word_with_the_first_push():
    framer = _Framer()
    timer = WordTimer(framer, streaming=False)
    framer.samples_sent = framer.segment_samples = RATE  # a 1 s segment pushed whole
    timer.opened(0, "It costs twenty dollars today.", None)
    message = _message(timer.pushed(RATE, True), 0)
    assert [w.word for w in message.words] == ["It", "costs", "twenty", "dollars", "today"]
    assert message.words[0].start_ms == 0.0 and message.words[-1].end_ms == 1000.0
    assert message.pending == ()
    assert timer.pushed(RATE, True) is None and timer.ended() is None  # said once
    assert timer.unit_ms == pytest.approx(1000.0 / plan_words("It costs twenty dollars today.").total)


def test_a_second_segment_starts_where_the_framer_is():
    framer = _Framer()
    timer = WordTimer(framer, streaming=False)
    framer.samples_sent = framer.segment_samples = RATE // 2
    timer.opened(0, "One two.", None)
    timer.pushed(RATE // 2, True)
    framer.samples_sent += RATE
    framer.segment_samples = RATE
    timer.opened(1, "Three four.", None)
    message = _message(timer.pushed(RATE, True), 1)
    assert message.words[0].start_ms == 500.0 and message.words[-1].end_ms == 1500.0


def test_the_prior_rate_times_the_first_segment_then_the_learnt_one():
    framer = _Framer()
    timer = WordTimer(framer, streaming=True)
    assert timer.unit_ms == PRIOR_UNIT_MS
    timer.opened(0, "one two three four", None)
    framer.samples_sent = framer.segment_samples = RATE * 4
    timer.pushed(RATE * 4, True)
    learnt = timer.unit_ms
    assert learnt == pytest.approx(4000.0 / plan_words("one two three four").total)
    framer.segment_samples = 0
    timer.opened(1, "five six seven eight", None)
    framer.samples_sent += 240
    framer.segment_samples += 240
    message = _message(timer.pushed(240), 1)
    assert message.pending[0].start_ms == 4000.0  # the segment's origin
    second = 4000.0 + plan_words("five six seven eight").starts[1] * learnt  # at the learnt rate
    into = int((second + 1 - 4000.0) * RATE / 1000)  # 1 ms past its start
    framer.samples_sent, framer.segment_samples = RATE * 4 + into, into
    message = _message(timer.pushed(into), 1)
    assert [w.word for w in message.words] == ["five"]
    assert message.pending[0].word == "six" and message.pending[0].start_ms == pytest.approx(second)


def test_a_segment_planned_ahead_is_not_planned_again(monkeypatch):
    framer = _Framer()
    timer = WordTimer(framer, streaming=False)
    pieces = (("It costs ", "It costs "), ("$20", "twenty dollars"), (".", "."))
    timer.planned(0, "It costs twenty dollars.", pieces)
    timer.planned(0, "It costs twenty dollars.", pieces)  # a second call keeps the first plan
    calls = []
    monkeypatch.setattr("realtime.server.stream.word_timing.plan_words",
                        lambda *a: calls.append(a) or plan_words(*a))
    framer.samples_sent = framer.segment_samples = RATE
    timer.opened(0, "It costs twenty dollars.", pieces)
    assert calls == []  # planned off the first frame's path
    message = _message(timer.pushed(RATE, True), 0)
    assert [(w.word, w.original) for w in message.words][2:] == [("twenty", "$20"), ("dollars", "$20")]
    timer.opened(1, "Then more.", None)  # not planned: planned now
    assert len(calls) == 1


def test_a_segment_not_planned_ahead_keeps_its_originals():
    framer = _Framer()
    timer = WordTimer(framer, streaming=False)
    pieces = (("Pay ", "Pay "), ("$5", "five dollars"), (".", "."))
    framer.samples_sent = framer.segment_samples = RATE
    timer.opened(0, "Pay five dollars.", pieces)
    message = _message(timer.pushed(RATE, True), 0)
    assert [w.original for w in message.words] == [None, "$5", "$5"]


def test_a_segment_without_audio_leaves_the_rate_as_it_was():
    framer = _Framer()
    timer = WordTimer(framer, streaming=True)
    framer.samples_sent = 4800
    timer.opened(0, "one two", None)
    timer.ended()  # no sample of it was framed
    assert timer.unit_ms == PRIOR_UNIT_MS


def test_the_last_push_ends_the_words_at_the_floor_of_the_resampled_length():
    framer = _Framer()
    framer.sample_rate = 16000  # the output rate; the source is 24 kHz
    timer = WordTimer(framer, streaming=False)
    framer.samples_sent = framer.segment_samples = 66
    timer.opened(0, "one two", None)
    message = _message(timer.pushed(100, True), 0)  # 100 source samples: 66.67 at 16 kHz
    assert message.words[-1].end_ms == 66 * 1000 / 16000


def test_nothing_speakable_sends_nothing():
    framer = _Framer()
    timer = WordTimer(framer, streaming=True)
    timer.opened(0, "", None)
    framer.samples_sent = framer.segment_samples = 2400
    assert timer.pushed(2400) is None and timer.pushed(2400, True) is None and timer.ended() is None
    assert timer.unit_ms == PRIOR_UNIT_MS


def test_a_word_starting_where_the_audio_ends_is_not_yet_begun():
    framer = _Framer()
    timer = WordTimer(framer, streaming=True)
    plan = plan_words("one two three")
    timer.opened(0, "one two three", None)
    edge = int(plan.starts[1] * PRIOR_UNIT_MS * RATE / 1000)  # the audio ends where "two" starts
    assert edge * 1000 / RATE == plan.starts[1] * PRIOR_UNIT_MS  # exactly, at 24 kHz
    framer.samples_sent = framer.segment_samples = edge
    message = _message(timer.pushed(edge), 0)
    assert [w.word for w in message.words] == ["one"] and message.pending == ()
    assert timer.pushed(edge) is None  # no new audio: nothing new to say
    framer.samples_sent = framer.segment_samples = edge + 1
    message = _message(timer.pushed(edge + 1), 0)
    assert message.words == () and [w.word for w in message.pending] == ["two"]
