"""How late the event loop runs what it is handed: a load signal the cost model misses.

The scheduler's cost model knows model steps. When the event loop is the
bottleneck (framing and sending audio for many streams, a busy machine), audio
reaches clients late although the model keeps up. ``LoopLag`` keeps a moving
average (time constant ``TAU_S``) of two measurements, both taken on the loop:

- a timer that should fire every ``period_s`` and records how late it ran;
- how long the model thread's updates waited before the loop took them
  (``note``, from the worker's delivery).

``current()`` is the smaller of that average and the timer's latest reading:
one stall (a garbage collection, a burst of framing) barely moves the
average, and a loop that has caught up reads on time at once; only a loop
that stays late shows. ``GET /load`` reports it. Admission does not use it:
tried, it refused work for transient stalls of a busy test machine, while
the late first audio it was meant to catch came from the slot model
(``scheduler.capacity`` now lists jobs, not streams); the observed
``behind`` check covers a loop that cannot keep the streams fed for long.

Thread: ``note`` and the timer on the event loop; ``current`` from any thread
(it reads one tuple, replaced whole).
"""

from __future__ import annotations

import asyncio
import math
import time

TAU_S = 0.5


class LoopLag:
    def __init__(self, period_s: float = 0.05) -> None:
        self.period_s = period_s
        self._average = (0.0, time.monotonic())  # (seconds late, when last noted)
        self._latest = 0.0  # the timer's latest reading
        self._timer: asyncio.TimerHandle | None = None

    def current(self) -> float:
        """Seconds the loop is late: recently on average, and still now."""
        return min(self._average[0], self._latest)

    def note(self, lag: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        average, at = self._average
        weight = 1.0 - math.exp(-max(now - at, 0.0) / TAU_S)
        self._average = (average + weight * (max(lag, 0.0) - average), now)

    def watch(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the loop's own timer (call on the loop)."""
        self._arm(loop)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        due = loop.time() + self.period_s
        self._timer = loop.call_at(due, self._fired, loop, due)

    def _fired(self, loop: asyncio.AbstractEventLoop, due: float) -> None:
        self._latest = max(loop.time() - due, 0.0)
        self.note(self._latest)
        self._arm(loop)
