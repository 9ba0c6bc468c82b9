"""One utterance on one connection: text in, ordered segments and frames out.

A ``ServerUtterance`` turns a ``speak`` (plus its ``append``/``flush``) into segment jobs
for the model worker and the worker's updates into wire messages. What may be sent when
is ``protocol.stream.UtteranceSender``'s business; this class decides the rest:

- audio of a later segment that arrives early is buffered until its turn;
- the newest complete frame of the current segment is held back until the next
  one exists or the segment ends, so the segment-end and utterance-end flags go
  on the right frame (at 24 kHz only when the framer has no partial frame that
  would follow it anyway); utterance-end is set when the input was final by then;
- ``audio_ms`` of segments and ``done`` count the samples framed (the bytes sent).

Sentences are read (normalized) off the loop by a ``SentenceIntake``, in order;
the first submission waits for the speak's own. Those read as nothing, or that
the model ends without audio, are no segment on the wire (indices count the
spoken ones) and are listed in ``done.unspoken``.

Thread: event loop only.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Protocol

import numpy as np

from protocol import ErrorCode, Speak
from protocol.stream import UtteranceSender
from realtime.audio.formats import AudioOut
from realtime.audio.framer import SOURCE_RATE
from realtime.server.stream import intake
from realtime.server.stream.flush_acks import FlushAcks
from realtime.server.stream.reference import first_reference
from realtime.server.stream.segment_request import segment_request
from realtime.server.stream.utterance_link import Outcome, UtteranceClock, UtteranceMessage
from realtime.server.stream.word_timing import WordTimer
from realtime.server.voices.samples import SampleVoices
from realtime.server.work.handoff import ModelSide, SegmentWork, Submission, UpdateKind, WorkerUpdate
from realtime.speech.script import estimate_tokens
from scheduler import Lane

log = logging.getLogger(__name__)


class Transport(Protocol):
    """What an utterance needs from what carries it to the client (a
    ``Session``, a ``SpeechJob``); the model side is ``handoff.ModelSide``."""

    def audio_out(self, speak: Speak) -> AudioOut:
        """What turns the utterance's 24 kHz samples into the carrier's payloads."""
    def send_message(self, message: UtteranceMessage, owner: ServerUtterance | None = None) -> None:
        """``owner``: the message goes if the utterance's queued audio is purged."""
    def send_json(self, data: bytes, owner: ServerUtterance) -> None:
        """A message written already (``words``' JSON), sent like ``send_message``'s."""
    def send_audio(self, utterance: ServerUtterance, header: bytes, payload: bytes) -> None:
        """A payload of ``audio_out`` and its frame's header (a WebSocket sends both)."""
    def purge(self, utterance: ServerUtterance) -> None: ...
    def utterance_ended(self, utterance: ServerUtterance, outcome: Outcome, code: str | None) -> None: ...

class ServerUtterance:
    """See the module docstring. ``link`` carries it to the client,
    ``model`` runs its segments; ``received`` is the speak's receipt time
    (``time.monotonic()``); ``stream`` the connection-unique stream number;
    ``text`` reads the sentences (by default as written, at once);
    ``unspoken_field``: when every sentence reads as nothing, fail
    (``unsupported``, naming that field) rather than end with no audio."""

    def __init__(self, speak: Speak, stream: int, link: Transport, model: ModelSide, received: float,
                 default_deadline_ms: int, max_text_chars: int, max_sentence_chars: int = 150,
                 samples: SampleVoices | None = None, text: intake.TextReader | None = None,
                 unspoken_field: str | None = None):
        self.speak = speak
        self.id = speak.id
        self.lane = Lane(speak.lane)
        self.link = link
        self.model = model
        self.unspoken_field = unspoken_field
        self.wire = UtteranceSender(speak.id, stream)
        self.admitted = False  # the worker accepted the first submission
        self.input_final = False
        self.max_text_chars = max_text_chars
        self.text_chars = 0
        background = self.lane is Lane.BACKGROUND
        deadline_ms = (speak.deadline_ms or default_deadline_ms) if background else None
        self.clock = UtteranceClock(received, deadline_ms)
        self._framer: AudioOut = link.audio_out(speak)  # the carrier's encoding of the samples
        request = segment_request(speak, samples)  # each segment's, but for its text
        self.intake = intake.SentenceIntake(request, text or intake.InlineText(), self._on_read,
                                            max_sentence_chars)
        self._first_submitted = False
        self._reference = first_reference(request, samples, self._release_held)
        self._words = WordTimer(self._framer, request.streaming) if speak.timestamps else None
        self._flushes = FlushAcks()  # flushed answers owed
        self._segments: list[intake.SegmentEntry] = []
        self._by_job: dict[int, int] = {}
        self._unsubmitted: list[SegmentWork] = []
        self._cursor = 0  # index of the segment whose audio is being sent
        self._cursor_open = False  # the current segment has sent (or held) audio
        self._cursor_pushed = 0  # 24 kHz samples pushed into the framer for it
        self._held: bytes | None = None
        self._cancel_requested = False
        self._ended = False

    @property
    def ended(self) -> bool:
        return self._ended

    # -- client messages -----------------------------------------------------------

    def begin(self) -> None:
        """Take the speak's text; its first segments go for admission once
        read (at once when it holds no complete sentence)."""
        self._take_text(self.speak.text, final=self.speak.final)
        if not self._ended and not self._first_submitted and not self.intake.reading:
            self._submit(first=True)

    def append(self, text: str, final: bool) -> None:
        """More text (the caller checked the input is still open)."""
        self._take_text(text, final)
        if self._ended:
            return
        self._submit(first=False)
        self._maybe_done()

    def flush(self, flush_id: str | None = None) -> None:
        # flushed is owed once the segments read from the text so far are out
        self.intake.flush(None if flush_id is None else partial(self._flushes.add, flush_id))
        self._submit(first=False)
        self._maybe_done()

    def cancel(self) -> None:
        """Client barge-in: stop now; ``cancelled`` follows (after ``started``
        if admission is still pending)."""
        if not self.admitted:
            self._cancel_requested = True
            return
        self._end(self.wire.cancelled(), Outcome.CANCELLED)

    def fail(self, code: ErrorCode, message: str, field: str | None = None,
             retry_after_ms: int | None = None) -> None:
        """End with an error now (slow consumer, shutdown, a limit, a malformed
        message naming it, ...); ``retry_after_ms`` only for a refusal caused
        by load. Before admission this is a refusal: no ``started``, one ``error``."""
        if not self._ended:
            self._end(self.wire.error(code, message, field, retry_after_ms), Outcome.FAILED,
                      code.value)

    def drop(self) -> None:
        """The connection is gone: stop the jobs, send nothing."""
        if not self._ended:
            self._ended = True
            self.intake.close()
            self._reference.close()
            self.model.cancel(self._live_jobs(), self)
            self.link.utterance_ended(self, Outcome.DISCONNECTED, None)

    # -- worker updates ------------------------------------------------------------

    def on_worker_update(self, update: WorkerUpdate) -> None:
        if self._ended:
            return
        kind = update.kind
        if kind is UpdateKind.AUDIO:  # the common case first
            assert update.audio is not None
            self._audio(update.job_id, update.audio, update.last)
        elif kind is UpdateKind.ADMITTED:
            self._admitted()
        elif kind is UpdateKind.STARTED:
            self.clock.job_started(update.at)
        elif kind is UpdateKind.FINISHED or kind is UpdateKind.EMPTY:
            self._segment_resolved(update.job_id, kind)
        elif kind is UpdateKind.REFINED:
            if (index := self._by_job.get(update.job_id or -1)) is not None:
                self._segments[index].refined = update.message
        else:  # REFUSED or FAILED: the utterance ends with the update's code
            code = ErrorCode(update.code or ErrorCode.INTERNAL.value)
            error = self.wire.error(code, update.message, update.field, update.retry_after_ms)
            self._end(error, Outcome.FAILED, code.value)

    def _admitted(self) -> None:
        self.admitted = True
        self.link.send_message(self.wire.started(self.lane.value, self.speak.format,
                                                 self.speak.sample_rate, self._framer.pre_skip))
        if self._cancel_requested:
            self._end(self.wire.cancelled(), Outcome.CANCELLED)
            return
        self._submit(first=False)
        self._advance()

    # -- text -> segments -----------------------------------------------------------

    def _take_text(self, text: str, final: bool) -> None:
        self.text_chars += len(text)
        if self.text_chars > self.max_text_chars:
            self.fail(ErrorCode.TEXT_TOO_LONG,
                      f"the utterance's text exceeds {self.max_text_chars} characters")
            return
        if final:
            self.input_final = True
        self.intake.take(text, final)

    def _on_read(self, readings: list[tuple[int, intake.Reading]], owe: intake.Owe | None) -> None:
        """Sentences read that say something, in order (silent ones are known now, so the
        last frame's flag is known when it goes); ``owe``: a flush's ack, owed for them."""
        if self._ended:
            return
        for order, reading in readings:
            job_id = self.model.new_job_id()
            index = len(self._segments)
            self._by_job[job_id] = index
            self._segments.append(intake.SegmentEntry(reading, order, job_id))
            request = self.intake.request(reading)
            estimate = estimate_tokens(request.text, request.speed)
            self._unsubmitted.append(SegmentWork(job_id, index, request, estimate))
        if owe is not None:
            owe(len(self._segments))
        self._submit(first=not self._first_submitted)
        if self._words is not None and not self._cursor_open and self._cursor < len(self._segments):
            # the next words to speak, planned while the model makes their audio
            spoken = self._segments[self._cursor].reading.spoken
            self._words.planned(self._cursor, spoken.text, spoken.pieces)
        self._advance()

    def _submit(self, first: bool) -> None:
        if not first and (not self.admitted or not self._unsubmitted):
            return  # before admission, segments wait in _unsubmitted for the answer
        self._first_submitted = True
        work, self._unsubmitted = tuple(self._unsubmitted), []
        work = self._reference.admit(work)  # "first": sentences 2..n wait for sentence 1's audio
        if not work and not first:
            return
        if not work and self.unspoken_field is not None and self.intake.unspoken:
            shown = "; ".join(repr(s[:40]) for s in self.intake.unspoken[:3])
            self.fail(ErrorCode.UNSUPPORTED, "the input has nothing to speak: every sentence "
                      f"normalized to nothing (an unsupported script, or symbols only): {shown}",
                      self.unspoken_field)
            return
        self.model.submit(Submission(self, self.lane, self.clock.received, self.clock.deadline, work, first))

    # -- audio -> frames -------------------------------------------------------------

    def _audio(self, job_id: int | None, samples: np.ndarray, last: bool) -> None:
        index = self._by_job.get(job_id) if job_id is not None else None
        if index is None:
            return
        self._reference.on_audio(job_id, samples)
        if index != self._cursor:
            self._segments[index].buffered.append(samples)
            return
        self._push(samples, last)

    def _push(self, samples: np.ndarray, last: bool) -> None:
        """``last``: the segment's last audio (word timings then know its span)."""
        self._cursor_open = True
        self._cursor_pushed += len(samples)
        payloads = self._framer.push(samples)
        if self._words is not None:  # timing goes before the audio it times
            if self._cursor_pushed == len(samples):  # the segment's first audio
                spoken = self._segments[self._cursor].reading.spoken
                self._words.opened(self._cursor, spoken.text, spoken.pieces)
            self._send_words(self._words.pushed(self._cursor_pushed, last))
        if not payloads:
            return
        if self._held is not None:
            payloads.insert(0, self._held)
            self._held = None
        partial = (self._framer.sample_rate == SOURCE_RATE
                   and self._cursor_pushed > self._framer.segment_samples)
        if not partial:  # this might be the segment's last frame: keep its flags open
            self._held = payloads.pop()
        if payloads:
            self._send_frames(payloads)

    def _segment_resolved(self, job_id: int | None, kind: UpdateKind) -> None:
        index = self._by_job.get(job_id) if job_id is not None else None
        if index is None:
            return
        seg = self._segments[index]
        seg.status = intake.SegmentStatus.EMPTY if kind is UpdateKind.EMPTY else intake.SegmentStatus.FINISHED
        if kind is UpdateKind.EMPTY:
            self.intake.not_spoken(seg.order, seg.reading.text)
        self._advance()
        if not self._ended:
            self._reference.on_resolved(job_id, kind is UpdateKind.FINISHED)

    def _release_held(self, works: list[SegmentWork]) -> None:
        """The reference let held sentences go (``realtime.server.stream.reference``)."""
        self._unsubmitted[:0] = works
        self._submit(first=False)

    def _advance(self) -> None:
        """Close every finished segment at the cursor, in order; then maybe done."""
        if not self.admitted or self._ended:
            return
        self._answer_flushes()
        while self._cursor < len(self._segments):
            if self._ended:
                return  # a send overflowed the outbox and ended the utterance
            seg = self._segments[self._cursor]
            if seg.buffered:
                chunks, seg.buffered = seg.buffered, []
                finished = seg.status is intake.SegmentStatus.FINISHED
                for i, chunk in enumerate(chunks, 1):
                    self._push(chunk, finished and i == len(chunks))
            if seg.status is intake.SegmentStatus.SUBMITTED:
                return
            if self.input_final and self.intake.reading and self._cursor == len(self._segments) - 1:
                return  # sentences still being read decide whether this is the last audio
            self._close_segment(seg)
            self._cursor += 1
            self._cursor_open = False
            self._cursor_pushed = 0
            self._answer_flushes()
        self._maybe_done()

    def _close_segment(self, seg: intake.SegmentEntry) -> None:
        payloads = self._framer.end_segment() if self._cursor_open else []
        if self._held is not None:
            payloads.insert(0, self._held)
            self._held = None
        if not payloads:
            return  # nothing spoken: no segment on the wire
        if self._words is not None:  # the rest of its words, before its last frame
            self._send_words(self._words.ended())
        self._send_frames(payloads, segment_end=True, utterance_end=self._is_last_audio_segment())
        if self._ended:
            return  # a send overflowed the outbox: the terminal message is out
        samples = self._framer.segment_samples
        offset = self._framer.samples_sent - samples
        # Purged with the audio it follows if the utterance stops before both are out.
        self.link.send_message(self.wire.segment(seg.reading.text, self._framer.ms(offset),
                                                 self._framer.ms(samples), seg.spoken), self)

    def _send_words(self, body: bytes | None) -> None:
        if body is not None and not self._ended:  # purged with the audio if the utterance stops
            self.link.send_json(self.wire.words_text(body), self)

    def _answer_flushes(self) -> None:
        if self._flushes and self.admitted and not self._ended:  # flushed comes after started
            for flush_id in self._flushes.due(self._cursor):
                self.link.send_message(self.wire.flushed(flush_id), self)

    def _is_last_audio_segment(self) -> bool:
        if not self.input_final or self.intake.pending:
            return False
        return all(s.status is intake.SegmentStatus.EMPTY for s in self._segments[self._cursor + 1:])

    def _send_frames(self, payloads: list[bytes], segment_end: bool = False,
                     utterance_end: bool = False) -> None:
        """Frames in order, the flags on the last one, the lookups made once (the
        loop's busiest path). A send can end the utterance (the outbox overflows:
        slow_consumer): nothing may follow its terminal message."""
        self.clock.frame_sent()
        header, send = self.wire.frame_header, self.link.send_audio
        for payload in payloads[:-1]:
            if self._ended:
                return
            send(self, header(), payload)
        if not self._ended:
            send(self, header(segment_end, utterance_end), payloads[-1])

    # -- endings -----------------------------------------------------------------------

    def _maybe_done(self) -> None:
        if (not self.admitted or self._ended or not self.input_final or self.intake.pending
                or self._cursor < len(self._segments) or self._unsubmitted):
            return
        audio_ms = self._framer.ms(self._framer.samples_sent)
        timing = self.clock.done(audio_ms)
        self._end(self.wire.done(audio_ms, timing, self.clock.deadline_met, self.intake.unspoken),
                  Outcome.DONE)

    def _end(self, message: UtteranceMessage, outcome: Outcome, code: str | None = None) -> None:
        if self._ended:
            return
        self._ended = True
        self.intake.close()
        self._reference.close()
        if outcome is not Outcome.DONE:
            self.link.purge(self)  # queued audio of an utterance that stopped goes unsent
        # Jobs the worker refused or never saw are simply unknown there.
        self.model.cancel(self._live_jobs(), self)
        self.link.send_message(message)
        self.link.utterance_ended(self, outcome, code)

    def _live_jobs(self) -> tuple[int, ...]:
        return tuple(s.job_id for s in self._segments if s.status is intake.SegmentStatus.SUBMITTED)

    # -- timing for metrics --------------------------------------------------------------

    @property
    def received(self) -> float:
        return self.clock.received

    @property
    def audio_seconds(self) -> float:
        return self._framer.samples_sent / self._framer.sample_rate
