"""How late the event loop runs what it is handed: a load signal the cost model misses.

The scheduler's cost model knows model steps. When the event loop is the
bottleneck (framing and sending audio for many streams, a busy machine), audio
reaches clients late although the model keeps up. ``LoopLag`` keeps a decaying
maximum of two measurements, both taken on the event loop:

- a timer that should fire every ``period_s`` and records how late it ran;
- how long the model thread's updates waited before the loop took them
  (``note``, from the worker's delivery).

Capacity admission adds ``current()`` to its first-audio estimates.

Thread: ``note`` and the timer on the event loop; ``current`` from any thread
(it reads one tuple, replaced whole).
"""

from __future__ import annotations

import asyncio
import math
import time

HALF_LIFE_S = 0.5


class LoopLag:
    def __init__(self, period_s: float = 0.05) -> None:
        self.period_s = period_s
        self._peak = (0.0, time.monotonic())  # (seconds late, when measured)
        self._timer: asyncio.TimerHandle | None = None

    def current(self, now: float | None = None) -> float:
        """The recent worst lateness, decayed with a half-life of ``HALF_LIFE_S``."""
        lag, at = self._peak
        now = time.monotonic() if now is None else now
        return lag * math.exp(-math.log(2) * max(now - at, 0.0) / HALF_LIFE_S)

    def note(self, lag: float, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self._peak = (max(lag, self.current(now)), now)

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
        self.note(loop.time() - due)
        self._arm(loop)
