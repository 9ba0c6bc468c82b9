"""Word timings of one utterance, sent as its audio goes out (``speak.timestamps``).

The utterance tells a ``WordTimer`` when a segment's audio is pushed into the
framer and when the segment ends; the timer answers with the words to send
now, as ``protocol.WordTiming``s, which the utterance sends (through its
``UtteranceSender``) before the frames that carry that audio:

- sentence chunking: a segment's audio comes whole, so its first push knows
  the exact span and every word goes out at once, before the first frame;
- token chunking: ``realtime.textfront.timing.WordTrack`` commits each word
  once the audio framed so far has passed its end (at the utterance's
  measured speaking rate, the prior for its first segment), and the rest at
  the segment's end, before its last frame. The word in progress, begun in
  the audio framed so far but not committed, goes as ``pending`` (its start,
  fixed from then on) with the first message before a frame that carries
  its start, so every word that starts in a frame is known before that
  frame (docs/protocol.md, "When they come").

Spans are in output-rate samples, as the framer counts them (the clock of
``segment.offset_ms``). A resampled segment's exact length is known only
when it ends; the first push of a sentence-chunked segment takes the floor
of its resampled length, which soxr never undershoots, so words stay inside
the segment and cover it to within one output sample.

Thread: event loop (the utterance's).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from protocol import WordStart, WordTiming
from realtime.audio import SOURCE_RATE
from realtime.textfront.timing import PRIOR_UNIT_MS, TimedWord, WordTrack, lay_out, spoken_words

log = logging.getLogger(__name__)


class _Framer(Protocol):  # what the timer reads of the utterance's framer (PCM or Opus)
    @property
    def sample_rate(self) -> int: ...
    @property
    def samples_sent(self) -> int: ...
    @property
    def segment_samples(self) -> int: ...
    def ms(self, samples: int) -> float: ...


def _wire(words: list[TimedWord]) -> tuple[WordTiming, ...]:
    return tuple(map(WordTiming._make, words))


# What to send before the frames of a push: committed words and the pending ones.
WordsToSend = tuple[tuple[WordTiming, ...], tuple[WordStart, ...]]
NOTHING: WordsToSend = ((), ())


class WordTimer:
    """See the module docstring. ``streaming``: token chunking."""

    def __init__(self, framer: _Framer, streaming: bool) -> None:
        self.framer = framer
        self.streaming = streaming
        self.unit_ms = PRIOR_UNIT_MS  # learnt from each finished segment
        self._track: WordTrack | None = None
        self._pending: tuple[WordStart, ...] = ()  # as last sent

    def _span_ms(self) -> tuple[float, float]:
        """(start, end so far) of the open segment, after a push."""
        f = self.framer
        start = f.samples_sent - f.segment_samples
        return f.ms(start), f.ms(f.samples_sent)

    def pushed(self, first: bool, source_samples: int, text: str,
               pieces: Sequence[tuple[str, str]] | None = None) -> WordsToSend:
        """Audio of the open segment went into the framer (``first``: its first
        chunk, ``source_samples`` long at 24 kHz); the words to send before
        its frames (committed, pending), ``NOTHING`` when no message is due."""
        if first:
            start, _ = self._span_ms()
            words = spoken_words(text, pieces)
            self._pending = ()  # a new segment: nothing of it announced yet
            if not self.streaming:  # the whole segment: its exact span now
                self._track = None
                out = self.framer.sample_rate * source_samples // SOURCE_RATE
                return _wire(lay_out(words, start, start + self.framer.ms(out))), ()
            self._track = WordTrack(words, start, self.unit_ms)
        track = self._track
        if track is None:
            return NOTHING
        committed = track.advance(self.framer.ms(self.framer.samples_sent))
        begun = track.begun()
        # Nothing committed, and the same word still in progress (its start
        # is where it was) or none begun: nothing new to say.
        if not committed and (begun is None or (self._pending
                                                and self._pending[0].start_ms == track.at)):
            return NOTHING
        pending = () if begun is None else (WordStart(begun.word, track.at, begun.original),)
        self._pending = pending
        return _wire(committed), pending

    def ended(self) -> tuple[WordTiming, ...]:
        """The open segment ended (its last frames are framed, not yet sent):
        its remaining words (the pending one among them, with its start)."""
        track, self._track = self._track, None
        self._pending = ()
        if track is None:
            return ()
        start, end = self._span_ms()
        if track.units > 0 and end > start:
            self.unit_ms = (end - start) / track.units
        return _wire(track.finish(end))
