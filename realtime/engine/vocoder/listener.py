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
waits for it) never holds.

The other way round, once the listener has audio, a chunk goes out early,
smaller than the schedule's, when waiting for the next push would run it dry
(``hurries``; its first audio comes on the schedule's time, as before): the
schedule's growth (1.5 on a CPU; pushed 4 codes at a time its chunks go 4, 8,
12, 16) keeps up only with a model faster than 1.5x real time, while admission
takes streams down to 1.3x. An early chunk must be affordable: its window's
render at most ``AFFORDABLE`` of the time its codes leave spare (a code's
audio less the time a code takes), else it waits and grows as before (small
windows re-render their left context; a model barely real time would spend
itself on them). The figures
are the stream's own, measured on the clock: seconds a code between pushes
less this stream's renders, and seconds a window step from a window's ask to
its audio going out (render, packing with other streams, a step's delay).
The pace is the median of the last ``PACE_PUSHES`` pushes': a step that stalls
every stream (another stream's prefill: ~100 ms of int4 on two CPU cores) is
not the model's rate, and smoothed into the pace it read as slower than real
time just when the lead was thinnest, so nothing hurried and the listener ran
dry (docs/runtime.md, "Early chunks after a stall").

The listener gets audio in whole frames (``frame_s``, the client's
``frame_ms``; a segment's last frame may be shorter), so what it holds counts
whole frames only: the rest is the server's until the frame is full. An early
chunk that would complete no frame does not go.

Thread: the model thread (as the vocoder).
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Callable

from realtime.engine.api import SAMPLE_RATE, SAMPLES_PER_STEP

# A due chunk waits for more steps while its listener holds this much audio:
# room for the larger window's render (187 steps: 0.12 s on two CPU cores,
# int8; 0.35 s fp32 under load) and for other streams' steps and prefills.
HOLD_LEAD_S = 1.0
CODE_S = SAMPLES_PER_STEP / SAMPLE_RATE  # a code's audio
# An early chunk's render may take this share of the time its codes leave spare.
AFFORDABLE = 0.75
# A chunk hurries while the lead is under this many times the wait for the next
# push and its render (room for a step's jitter).
WAIT_MARGIN = 1.25
SMOOTHING = 0.5  # weight of a new measurement of the render
PACE_PUSHES = 5  # the pace: the median of this many pushes' (one stall is not a rate)


class Listener:
    """One segment's listener. ``clock``: seconds; ``after``: when the audio
    this segment's follows runs out at the listener, as known when called
    (None: not known yet); None: it follows nothing."""

    def __init__(self, clock: Callable[[], float], after: Callable[[], float | None] | None = None,
                 frame_s: float = 0.0):
        self._clock = clock
        self._after = after
        self._frame = max(0, round(frame_s * SAMPLE_RATE))  # samples a frame it gets (0: any)
        self._held = 0  # samples out short of a whole frame: the server holds them
        self._heard: list[tuple[float, float]] = []  # (clock time, seconds) of each chunk out
        self._pushed_at: float | None = None
        self._push = 0  # codes in the last push
        self._pace: float | None = None  # seconds a code between pushes, less this stream's renders
        self._paces: deque[float] = deque(maxlen=PACE_PUSHES)  # the last pushes' paces
        self._rendering = 0.0  # seconds of this stream's renders since the last push
        self._asked: tuple[float, int] | None = None  # (clock time, steps) of the window asked
        self._render: float | None = None  # seconds a window step, ask to audio out

    @property
    def follows(self) -> bool:
        """Does the segment's audio play after another's?"""
        return self._after is not None

    def pushed(self, codes: int) -> None:
        """``codes`` more codes reached the stream now."""
        now = self._clock()
        if self._pushed_at is not None and codes:
            self._paces.append(max(0.0, now - self._pushed_at - self._rendering) / codes)
            self._pace = statistics.median(self._paces)
        self._pushed_at, self._push, self._rendering = now, codes, 0.0

    def asked(self, steps: int | None) -> None:
        """A chunk's window of ``steps`` is due (None: none is); the first ask
        of a window times it."""
        if steps is None:
            self._asked = None
        elif self._asked is None:
            self._asked = (self._clock(), steps)

    def heard(self, samples: int, last: bool = False) -> None:
        """A chunk of ``samples`` went out now (``last``: the segment's last);
        the listener gets the whole frames of what is out."""
        now = self._clock()
        if self._asked is not None:
            at, steps = self._asked
            self._rendering += now - at
            self._render = _smooth(self._render, (now - at) / steps)
            self._asked = None
        self._held += samples
        sent = self._held if last or not self._frame else self._held - self._held % self._frame
        self._held -= sent
        if sent:
            self._heard.append((now, sent / SAMPLE_RATE))

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

    def hurries(self, codes: int, steps: int) -> bool:
        """Does a chunk of ``codes``, short of the schedule's, go out now (a
        window of ``steps``), since waiting for the next push would run the
        listener dry (module docstring)?"""
        if self._pace is None or self._render is None or self._pace >= CODE_S:
            return False
        if self._frame and self._held + codes * SAMPLES_PER_STEP < self._frame:
            return False  # it would complete no frame: the listener would get nothing sooner
        if self._render * steps > AFFORDABLE * codes * (CODE_S - self._pace):
            return False
        wait = self._push * self._pace + self._render * (steps + self._push)
        lead = self.lead()  # -inf: the listener waits for its first audio, on the schedule's time
        return math.isfinite(lead) and lead < WAIT_MARGIN * wait

    def lead(self) -> float:
        """Seconds of audio the listener holds now (``-inf`` before there is any)."""
        end = self.play_end()
        return -math.inf if end is None else end - self._clock()


def _smooth(old: float | None, new: float) -> float:
    return new if old is None else old + SMOOTHING * (new - old)
