"""A segment's words in columns and their layouts over its audio.

``WordPlan`` (made by ``realtime.speech.timing.plan_words``) holds a
segment's words, weights and pauses; ``WordPlan.spread`` lays them over an
exact span; ``WordTrack`` lays them out at the speaking rate while the
span is still growing (token chunking). Both are re-exported by
``realtime.speech.timing``.

Thread: event loop (the utterance's).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import compress
from operator import add


class WordPlan:
    """A segment's spoken words, in columns (built once per segment, then
    read-only): ``words[i]`` as spoken; ``originals[i]`` the piece of the
    client's text it came from where that differs (None otherwise);
    ``starts[i]`` where it starts, in units from the segment's start;
    ``units[i]`` its weight; ``pauses[i]`` the pause after it (the last
    word's is not counted). ``ends[i]`` (made when first asked for: the
    server's paths do without) is where it ends; a gap before the next
    start is a pause. The first word starts at 0, the last ends at
    ``total``. Where no pause follows word ``i``, ``ends[i]`` and
    ``starts[i + 1]`` are the same float (units and pauses are halves, so
    the sums are exact), so a layout computes the starts only and takes each
    end from the next start, but at ``paused``: the words (not the last)
    followed by a pause."""

    __slots__ = ("words", "originals", "starts", "units", "pauses", "_ends", "_paused")

    def __init__(self, words: Sequence[str], originals: Sequence[str | None],
                 starts: list[float], units: Sequence[float], pauses: Sequence[float]) -> None:
        self.words, self.originals, self.starts = words, originals, starts
        self.units, self.pauses = units, pauses
        self._ends: list[float] | None = None
        self._paused: list[int] | None = None

    def __len__(self) -> int:
        return len(self.words)

    @property
    def total(self) -> float:
        return self.starts[-1] + self.units[-1] if self.starts else 0.0

    @property
    def ends(self) -> list[float]:
        if self._ends is None:
            self._ends = list(map(add, self.starts, self.units))
        return self._ends

    @property
    def paused(self) -> list[int]:
        """The words but the last followed by a pause, in order (few: at punctuation)."""
        if self._paused is None:
            self._paused = list(compress(range(len(self.pauses) - 1), self.pauses))
        return self._paused

    def end_of(self, i: int) -> float:
        """Where word ``i`` ends, in units (``ends[i]``, without making ``ends``)."""
        return self.starts[i] + self.units[i]

    def spread(self, lo: int, start_ms: float, end_ms: float) -> tuple[list[float], list[float]]:
        """Starts and ends (ms) of the words from ``lo`` on, spread over
        [start_ms, end_ms] in proportion to their units and pauses:
        monotonic, the first starting at ``start_ms`` and the last ending at
        ``end_ms`` exactly (none after it)."""
        origin = self.starts[lo]  # units are sums of halves: the differences are exact
        total = self.total - origin
        scale = (end_ms - start_ms) / total if total > 0 else 0.0
        starts = [start_ms + (a - origin) * scale for a in self.starts[lo:]]
        ends = starts[1:]  # each end the next start (the same float) but after a pause
        ends.append(end_ms)
        for j in self.paused:
            if j >= lo:
                ends[j - lo] = start_ms + (self.end_of(j) - origin) * scale
        # Rounding may put the last few a hair past end_ms (multiplication
        # and addition keep the order, so only a tail can be).
        i = len(ends) - 2
        while i >= 0 and ends[i] > end_ms:
            ends[i] = end_ms
            if starts[i + 1] > end_ms:
                starts[i + 1] = end_ms
            i -= 1
        return starts, ends


class WordTrack:
    """The words of one segment whose audio is still being made.

    ``advance(sent_ms)`` commits, at ``unit_ms`` per unit from the segment's
    start ``origin_ms``, every word whose slot (word and pause) ends by
    ``sent_ms`` (the end of the audio sent so far), never the last word;
    ``begun`` is then whether the word in progress, ``plan.words[next]``,
    starts (at ``at``) before ``sent_ms``: its start is fixed from then on,
    its end is not known yet. ``finish(end_ms)`` lays the rest over what is
    left of the segment's exact span, keeping the start of the word in
    progress and starting the words after it no earlier than the audio
    already sent. So every word that starts before audio already sent was
    committed or is the one begun. Committed words never change. Both return
    the starts and ends (ms) of the words committed by the call, from
    ``next`` as it was before it. ``starts_ms``: every word's start at the
    rate, made once; ``ends_ms`` their ends (made when first asked for; a
    committed word's times are these); ``commit`` is ``advance`` returning
    the new ``next`` only. Times are on the utterance's clock; one owner.
    """

    __slots__ = ("plan", "origin_ms", "unit_ms", "next", "starts_ms", "_ends_ms", "sent")

    def __init__(self, plan: WordPlan, origin_ms: float, unit_ms: float) -> None:
        self.plan = plan
        self.origin_ms = origin_ms
        self.unit_ms = unit_ms
        self.next = 0  # the first uncommitted word
        self.sent = origin_ms  # the end of the audio sent so far
        self.starts_ms = [origin_ms + a * unit_ms for a in plan.starts]
        self._ends_ms: list[float] | None = None

    @property
    def ends_ms(self) -> list[float]:
        if self._ends_ms is None:
            origin, unit = self.origin_ms, self.unit_ms
            self._ends_ms = [origin + b * unit for b in self.plan.ends]
        return self._ends_ms

    def end_ms(self, i: int) -> float:
        """Where word ``i`` ends at the rate (``ends_ms[i]``, without making ``ends_ms``)."""
        return self.origin_ms + self.plan.end_of(i) * self.unit_ms

    @property
    def at(self) -> float:
        """Where the first uncommitted word starts (at the rate)."""
        return self.starts_ms[self.next] if self.next < len(self.starts_ms) else 0.0

    @property
    def begun(self) -> bool:
        return self.next < len(self.starts_ms) and self.starts_ms[self.next] < self.sent

    def commit(self, sent_ms: float) -> int:
        if sent_ms > self.sent:
            self.sent = sent_ms
        lo, last = self.next, len(self.starts_ms) - 1
        if lo < last:
            # The words whose slot ends by ``sent`` (the next one starts by
            # then): one bisection per push, none per word. Times at the rate
            # are monotonic (x -> origin + x * unit is, in floating point too).
            self.next = bisect_right(self.starts_ms, self.sent, lo + 1, last + 1) - 1
        return self.next

    def advance(self, sent_ms: float) -> tuple[list[float], list[float]]:
        lo = self.next
        n = self.commit(sent_ms)
        return self.starts_ms[lo:n], self.ends_ms[lo:n]

    def finish(self, end_ms: float) -> tuple[list[float], list[float]]:
        plan, lo = self.plan, self.next
        if lo >= len(plan.words):
            return [], []
        start, sent = min(self.at, end_ms), min(self.sent, end_ms)
        self.next = len(plan.words)
        starts, ends = plan.spread(lo, start, end_ms)
        if len(starts) == 1 or starts[1] >= sent:
            return starts, ends
        # The segment ended sooner than the rate expected: the word in
        # progress runs to the audio already sent, the rest share what is left.
        starts, ends = plan.spread(lo + 1, sent, end_ms)
        return [start, *starts], [sent, *ends]
