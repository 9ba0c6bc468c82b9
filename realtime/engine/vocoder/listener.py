"""The listener's playback as a stream's vocoder sees it, so chunks can wait.

A segment whose audio plays after another one's (``StreamingVocoder.start(after)``:
the next sentence of an utterance) needs each chunk only before the listener's
audio runs out, so while the stream's ``lead`` is at least ``HOLD_LEAD_S`` a due
chunk waits and grows, up to twice ``max_chunk_steps``: fewer windows, so less
left context rendered again. A 3 s sentence pushed 4 steps at a time at the
CPU's growth renders 1.4 steps per step instead of 2.6; past its first chunks
a long one 1.5 instead of 1.9 (windows of 187 steps instead of 123: on two
CPU cores, int8, 0.61 ms a window step against 0.69). The lead is a jitter-free
player's: the earlier segment's audio as far as it is out, then this one's
chunks, each played once it is out, a gap waited out. It never overstates what
the listener holds (a real player starts later, not sooner). Holding makes
chunks larger, never later than the lead allows; the seams are the same
crossfades, so the codes and the audio's length do not change, the samples
near a seam may (by the timing). A stream that follows nothing (the listener
waits for it) never holds: its chunks, and its audio, are a function of its
steps alone.

Thread: the model thread (as the vocoder).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from realtime.engine.api import SAMPLE_RATE

# A due chunk waits for more steps while its listener holds this much audio:
# room for the larger window's render (187 steps: 0.12 s on two CPU cores,
# int8; 0.35 s fp32 under load) and for other streams' steps and prefills.
HOLD_LEAD_S = 1.0


class Listener:
    """One segment's listener. ``clock``: seconds; ``after``: when the audio
    this segment's follows runs out at the listener, as known when called
    (None: not known yet); None: it follows nothing."""

    def __init__(self, clock: Callable[[], float], after: Callable[[], float | None] | None = None):
        self._clock = clock
        self._after = after
        self._heard: list[tuple[float, float]] = []  # (clock time, seconds) of each chunk out

    @property
    def follows(self) -> bool:
        """Does the segment's audio play after another's?"""
        return self._after is not None

    def heard(self, samples: int) -> None:
        """A chunk of ``samples`` went out now."""
        if samples:
            self._heard.append((self._clock(), samples / SAMPLE_RATE))

    def play_end(self) -> float | None:
        """When the audio out so far runs out at the listener (None before any)."""
        end = self._after() if self._after is not None else None
        for at, seconds in self._heard:
            end = max(at if end is None else end, at) + seconds
        return end

    def holds(self, steps: int, largest: int) -> bool:
        """Does a due chunk of ``steps`` wait for more (up to twice ``largest``,
        the largest chunk that does not wait)?"""
        return self.follows and steps < 2 * largest and self.lead() >= HOLD_LEAD_S

    def lead(self) -> float:
        """Seconds of audio the listener holds now (``-inf`` before there is any)."""
        end = self.play_end()
        return -math.inf if end is None else end - self._clock()
