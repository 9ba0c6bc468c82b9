"""Word timings of one utterance, sent as its audio goes out (``speak.timestamps``).

The utterance tells a ``WordTimer`` when a segment's audio is pushed into the
framer and when the segment ends; the timer answers with the words to send
now, in JSON (``protocol.words.words_body``), which the utterance sends
(through its ``UtteranceSender.words_text``) before the frames that carry
that audio:

- sentence chunking: a segment's audio comes whole, so its first push knows
  the exact span and every word goes out at once, before the first frame;
- token chunking: ``realtime.speech.timing.WordTrack`` commits each word
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
words are cut and weighed once, into columns (``WordPlan``), when its text
is read where the utterance can (``planned``: off its first frame's path),
and with token chunking written once, at the rate, into JSON objects
(``protocol.words.WordsJson``) when its audio begins; a push then finds its
words by one bisection and its message is a join of bytes. No object per
word, none per push but the message's bytes.

Thread: event loop (the utterance's).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from protocol.words import WordsJson, numbers, words_body
from realtime.audio.formats import AudioOut
from realtime.audio.framer import SOURCE_RATE
from realtime.speech.timing import PRIOR_UNIT_MS, WordPlan, WordTrack, plan_words

log = logging.getLogger(__name__)


class WordTimer:
    """See the module docstring. ``streaming``: token chunking. ``pushed``
    and ``ended`` return a ``words`` message's members after ``segment``
    (``UtteranceSender.words_text``), or None when no message is due."""

    def __init__(self, framer: AudioOut, streaming: bool) -> None:
        self.framer = framer
        self._rate = framer.sample_rate  # framer.ms(n) is n * 1000 / it
        self.streaming = streaming
        self.unit_ms = PRIOR_UNIT_MS  # learnt from each finished segment
        self._planned: dict[int, WordPlan] = {}  # segments' words planned ahead
        self._plan: WordPlan | None = None  # the open segment's words, None: none
        self._origin_ms = 0.0  # ... its start
        self._json: WordsJson | None = None
        self._track: WordTrack | None = None  # token chunking: its words so far
        self._objects: list[bytes] = []  # ... its words at the rate, in JSON
        self._starts: list[bytes] = []  # ... their starts in JSON (then ends after pauses)
        self._pending: int | None = None  # the pending word last sent

    def planned(self, index: int, text: str, pieces: Sequence[tuple[str, str]] | None) -> None:
        """Segment ``index``'s spoken text is known before its audio: its
        words are planned now, not at its first push."""
        if index not in self._planned:
            self._planned[index] = plan_words(text, pieces)

    def opened(self, index: int, text: str, pieces: Sequence[tuple[str, str]] | None) -> None:
        """Segment ``index``'s first audio is about to be pushed (``text``
        and ``pieces`` its spoken text, used when it was not planned)."""
        plan = self._planned.pop(index, None) or plan_words(text, pieces)
        self._pending = None
        if not plan.words:
            self._plan = self._json = self._track = None
            return
        f = self.framer
        self._plan, self._origin_ms = plan, f.ms(f.samples_sent - f.segment_samples)
        text_json = self._json = WordsJson(plan.words, plan.originals)
        if self.streaming:
            track = self._track = WordTrack(plan, self._origin_ms, self.unit_ms)
            # Each word's end at the rate is the next word's start (the same
            # float) but after a pause and at the last word: one column of
            # times and one of their texts, not two.
            starts, paused = track.starts_ms, plan.paused
            count = len(starts)
            texts = self._starts = numbers([*starts, track.end_ms(count - 1), *map(track.end_ms, paused)])
            ends = texts[1:count + 1]
            for text_at, word in enumerate(paused, count + 1):
                ends[word] = texts[text_at]
            self._objects = text_json.objects(0, texts, ends)

    def pushed(self, source_samples: int, last: bool = False) -> bytes | None:
        """Audio of the open segment went into the framer (``source_samples``:
        24 kHz samples of it pushed so far; ``last``: that was all of it)."""
        f = self.framer
        track = self._track
        if track is None or last:  # its exact span is known: every word now
            if self._plan is None:
                return None
            start = f.samples_sent - f.segment_samples
            return self._finish(f.ms(start + f.sample_rate * source_samples // SOURCE_RATE))
        lo = track.next
        # f.ms(f.samples_sent) without the call (the busiest line of the word path)
        n = track.commit(f.samples_sent * 1000 / self._rate)
        if track.starts_ms[n] >= track.sent:  # none begun (commit keeps n a word's index)
            self._pending = None
            return words_body(self._objects[lo:n]) if n > lo else None
        if n == lo and self._pending == n:
            return None  # the same word still in progress: nothing new to say
        self._pending = n
        assert self._json is not None
        return self._json.body(self._objects[lo:n], n, self._starts[n])

    def ended(self) -> bytes | None:
        """The open segment ended (its last frames are framed, not yet sent):
        its remaining words (the pending one among them, with its start)."""
        return self._finish(self.framer.ms(self.framer.samples_sent)) if self._plan is not None else None

    def _finish(self, end_ms: float) -> bytes | None:
        """The open segment's remaining words, up to its end ``end_ms``; the
        utterance's speaking rate learnt from it."""
        plan, track, text_json = self._plan, self._track, self._json
        self._plan = self._track = self._json = None
        self._pending = None
        if plan is None or text_json is None:
            return None
        origin = self._origin_ms
        if plan.total > 0 and end_ms > origin:
            self.unit_ms = (end_ms - origin) / plan.total
        if track is None:  # sentence chunking: the whole span at once
            lo, (starts, ends) = 0, plan.spread(0, min(origin, end_ms), end_ms)
        else:
            lo = track.next
            starts, ends = track.finish(end_ms)
        return words_body(text_json.timed(lo, starts, ends)) if starts else None
