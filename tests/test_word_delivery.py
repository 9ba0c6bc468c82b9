"""How a ``ServerUtterance`` delivers word timings, driven update by update.

A fake link encodes every message and frame and feeds them to the client's
``protocol.stream.ClientConnection`` (which fails on a broken ordering rule:
words after their segment's last frame, backwards, outside their segment, a
pending word that never came), so these tests see the wire itself. They
cover the ways audio can reach an utterance: in chunks with the worker's
``last`` mark on the final one (the segment's words then end with that
chunk's message: none at its end), without it (the rest come at the end,
before the last frame), and buffered while an earlier segment still speaks.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from conftest import Transcript
from word_checks import check_words_precede_their_audio

from protocol import Speak, encode
from protocol.stream import ClientConnection, Kind
from realtime.audio.formats import framer_for
from realtime.server.stream.utterance import ServerUtterance
from realtime.server.work.handoff import UpdateKind, WorkerUpdate

TEXT = "It costs twenty dollars, today. And then some more words follow here, at last!"


class _Link:
    """Transport and model side: what is sent lands, checked, in ``transcript``."""

    def __init__(self) -> None:
        self.wire = ClientConnection()
        self.wire.opened("u")
        self.transcript = Transcript("u")
        self.works: list = []
        self._ids = iter(range(1, 100))

    def _receive(self, raw: str | bytes) -> None:
        got = self.wire.receive(raw)
        self.transcript.record(got.kind, got.message)

    def send_message(self, message, owner=None) -> None:
        self._receive(encode(message).decode())

    def send_json(self, data, owner) -> None:
        self._receive(data.decode())

    def audio_out(self, speak):
        return framer_for(speak.format, speak.sample_rate, speak.frame_ms)

    def send_audio(self, utterance, header, payload) -> None:
        self._receive(header + payload)

    def submit(self, submission) -> None:
        self.works += submission.segments

    def cancel(self, job_ids, sink=None) -> None: ...
    def purge(self, utterance) -> None: ...
    def utterance_ended(self, utterance, outcome, code) -> None: ...

    def new_job_id(self) -> int:
        return next(self._ids)


def _start(rate: int = 24000, chunking: str = "token", frame_ms: int = 20):
    link = _Link()
    speak = Speak("u", TEXT, chunking=chunking, timestamps=True, sample_rate=rate,
                  frame_ms=frame_ms)
    utterance = ServerUtterance(speak, 1, link, link, time.monotonic(), default_deadline_ms=10_000,
                                max_text_chars=1000)
    utterance.begin()
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.ADMITTED))
    assert len(link.works) == 2
    return utterance, link


def _audio(utterance, job_id: int, chunks: list[int], mark_last: bool) -> None:
    for i, n in enumerate(chunks, 1):
        utterance.on_worker_update(WorkerUpdate(
            utterance, UpdateKind.AUDIO, job_id, audio=np.full(n, 0.1, np.float32),
            last=mark_last and i == len(chunks)))


def _finished(utterance, job_id: int) -> None:
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.FINISHED, job_id))


def _check(t: Transcript, rate: int) -> list[list]:
    """The wire's promises; each segment's words messages (in order)."""
    t.check_done(rate=rate)
    check_words_precede_their_audio(t, rate=rate)
    per_segment: list[list] = [[] for _ in t.segments]
    for message in t.words:
        per_segment[message.segment].append(message)
    sample_ms = 1000 / rate
    for seg, messages in zip(t.segments, per_segment, strict=True):
        words = [w for m in messages for w in m.words]
        assert [w.word for w in words] == seg.spoken.replace(",", "").replace(".", "") \
            .replace("!", "").split()
        assert words[0].start_ms == pytest.approx(seg.offset_ms, abs=1e-6)
        end = seg.offset_ms + seg.audio_ms
        assert end - sample_ms - 1e-6 <= words[-1].end_ms <= end + 1e-6
    return per_segment


def _words_after_last_chunk(t: Transcript, last_chunk_frames: int) -> int:
    """Words messages of the last segment after its final chunk's first frame."""
    kinds = [k for k, _ in t.events if k in (Kind.WORDS, Kind.AUDIO)]
    tail = len(kinds)
    for _ in range(last_chunk_frames):
        tail = max(i for i in range(tail) if kinds[i] is Kind.AUDIO)
    return sum(k is Kind.WORDS for k in kinds[tail:])


# 24 kHz chunk sizes: a word begins in each (~0.23 s a syllable at the prior rate)
CHUNKS = [12000, 12000, 12000, 7000]


def _chunked(rate: int, mark_last: bool) -> tuple[list[list], Transcript]:
    utterance, link = _start(rate)
    for work in link.works:
        _audio(utterance, work.job_id, CHUNKS, mark_last)
        _finished(utterance, work.job_id)
    return _check(link.transcript, rate), link.transcript


@pytest.mark.parametrize("rate", [24000, 16000])
def test_token_chunks_with_or_without_the_last_mark(rate):
    marked, t = _chunked(rate, mark_last=True)
    unmarked, _ = _chunked(rate, mark_last=False)
    # no end message: the last chunk's carries the segment's remaining words
    assert all(len(a) <= len(b) for a, b in zip(marked, unmarked, strict=True))
    assert sum(map(len, marked)) < sum(map(len, unmarked))
    for messages in marked + unmarked:
        assert not messages[-1].pending and len(messages) > 2
    assert any(m.pending for m in marked[0])
    # the last chunk's 7000 samples (~292 ms) make more than 7 frames of 20 ms
    assert _words_after_last_chunk(t, last_chunk_frames=7) == 0


def test_a_single_marked_chunk_is_laid_out_whole_like_sentence_chunking():
    utterance, link = _start()
    for work in link.works:
        _audio(utterance, work.job_id, [40000], mark_last=True)
        _finished(utterance, work.job_id)
    per_segment = _check(link.transcript, 24000)
    assert [len(m) for m in per_segment] == [1, 1] and not per_segment[0][0].pending


@pytest.mark.parametrize("second_finishes_first", [True, False])
def test_a_buffered_segment_knows_its_last_chunk_from_its_status(second_finishes_first):
    """Segment 2's audio arrives while segment 1 still speaks: it waits, then is
    pushed chunk by chunk; its final chunk counts as the last if segment 2
    had finished by then (no words message at its end), else its words end
    with the end message."""
    utterance, link = _start()
    first, second = (w.job_id for w in link.works)
    _audio(utterance, first, CHUNKS[:2], mark_last=False)
    _audio(utterance, second, CHUNKS, mark_last=second_finishes_first)
    if second_finishes_first:
        _finished(utterance, second)
    _audio(utterance, first, CHUNKS[2:], mark_last=False)
    _finished(utterance, first)
    if not second_finishes_first:
        _finished(utterance, second)
    _check(link.transcript, 24000)
    ends = [_words_after_last_chunk(link.transcript, last_chunk_frames=7)]
    assert ends == [0 if second_finishes_first else 1]


def test_sentence_chunking_sends_one_message_a_segment_before_its_first_frame():
    utterance, link = _start(chunking="sentence")
    for work in link.works:
        _audio(utterance, work.job_id, [40000], mark_last=True)
        _finished(utterance, work.job_id)
    per_segment = _check(link.transcript, 24000)
    assert [len(m) for m in per_segment] == [1, 1]
