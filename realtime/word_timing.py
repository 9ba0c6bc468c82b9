"""Word timings of one utterance, sent as its audio goes out (``speak.timestamps``).

The utterance tells a ``WordTimer`` when a segment's audio is pushed into the
framer and when the segment ends; the timer answers with the words to send
now, in columns (``protocol.TimedWords``), which the utterance sends (through
its ``UtteranceSender``) before the frames that carry that audio:

- sentence chunking: a segment's audio comes whole, so its first push knows
  the exact span and every word goes out at once, before the first frame;
- token chunking: ``realtime.textfront.timing.WordTrack`` commits each word
  once the audio framed so far has passed its end (at the utterance's
  measured speaking rate, the prior for its first segment), and the rest
  once the segment's span is known: with its last chunk (the worker marks
  it, ``WorkerUpdate.last``), before that chunk's frames, or else at the
  segment's end, before its last frame; either way one message per push
  in which a word begins, and no more. The word in progress, begun in
  the audio framed so far but not committed, goes as ``pending`` (its start,
  fixed from then on) with the first message before a frame that carries
  its start, so every word that starts in a frame is known before that
  frame (docs/protocol.md, "When they come").

Spans are in output-rate samples, as the framer counts them (the clock of
``segment.offset_ms``). A resampled segment's exact length is known only
when it ends; its last push (the first of a sentence-chunked segment) takes
the floor of its resampled length, which soxr never undershoots, so words
stay inside the segment and cover it to within one output sample.

Cost (issue 23, item 7: the server bench's per-frame CPU): a segment's
words are cut and weighed once, into columns (``WordPlan``), and they stay
columns up to the wire: a word is one object only there, the JSON object
sent, once its times are final.

Thread: event loop (the utterance's).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from protocol import WordStart
from realtime.audio import SOURCE_RATE
from realtime.textfront.timing import PRIOR_UNIT_MS, WordPlan, WordTrack, plan_words

log = logging.getLogger(__name__)


class _Framer(Protocol):  # what the timer reads of the utterance's framer (PCM or Opus)
    @property
    def sample_rate(self) -> int: ...
    @property
    def samples_sent(self) -> int: ...
    @property
    def segment_samples(self) -> int: ...
    def ms(self, samples: int) -> float: ...


# Words to send, in columns: (words, starts, ends, originals) (the wire's
# ``TimedWords``); with the pending ones, what goes before a push's frames.
Columns = tuple[Sequence[str], Sequence[float], Sequence[float], Sequence[str | None]]
WordsToSend = tuple[Columns | None, tuple[WordStart, ...]]
NOTHING: WordsToSend = (None, ())


def _columns(plan: WordPlan, lo: int, times: tuple[list[float], list[float]]) -> Columns | None:
    """Words ``lo``, ``lo + 1``, ... of ``plan`` at ``times`` (starts, ends)."""
    starts, ends = times
    if not starts:
        return None
    hi = lo + len(starts)
    return plan.words[lo:hi], starts, ends, plan.originals[lo:hi]


class WordTimer:
    """See the module docstring. ``streaming``: token chunking."""

    def __init__(self, framer: _Framer, streaming: bool) -> None:
        self.framer = framer
        self.streaming = streaming
        self.unit_ms = PRIOR_UNIT_MS  # learnt from each finished segment
        self._track: WordTrack | None = None
        self._pending_at: float | None = None  # start of the pending word as last sent

    def pushed(self, first: bool, source_samples: int, text: str,
               pieces: Sequence[tuple[str, str]] | None = None, last: bool = False) -> WordsToSend:
        """Audio of the open segment went into the framer (``first``: its
        first chunk; ``source_samples``: 24 kHz samples of it pushed so far;
        ``last``: that was all of it). The words to send before its frames
        (committed, pending), ``NOTHING`` when no message is due."""
        f = self.framer
        if first:  # a new segment: nothing of it announced yet
            self._pending_at = None
            plan = plan_words(text, pieces)
            self._track = (WordTrack(plan, f.ms(f.samples_sent - f.segment_samples), self.unit_ms)
                           if plan.words else None)
        track = self._track
        if track is None:
            return NOTHING
        if last or not self.streaming:  # its exact span is known: every word now
            start = f.samples_sent - f.segment_samples
            return self._finish(f.ms(start + f.sample_rate * source_samples // SOURCE_RATE)), ()
        lo = track.next
        committed = _columns(track.plan, lo, track.advance(f.ms(f.samples_sent)))
        if not track.begun:
            self._pending_at = None
            return (committed, ()) if committed is not None else NOTHING
        at = track.at
        if committed is None and self._pending_at == at:
            return NOTHING  # the same word still in progress: nothing new to say
        self._pending_at = at
        plan, n = track.plan, track.next
        return committed, (WordStart(plan.words[n], at, plan.originals[n]),)

    def ended(self) -> Columns | None:
        """The open segment ended (its last frames are framed, not yet sent):
        its remaining words (the pending one among them, with its start)."""
        return self._finish(self.framer.ms(self.framer.samples_sent))

    def _finish(self, end_ms: float) -> Columns | None:
        """The open segment's remaining words, up to its end ``end_ms``; the
        utterance's speaking rate learnt from it."""
        track, self._track = self._track, None
        self._pending_at = None
        if track is None:
            return None
        units = track.plan.total
        if units > 0 and end_ms > track.origin_ms:
            self.unit_ms = (end_ms - track.origin_ms) / units
        return _columns(track.plan, track.next, track.finish(end_ms))
