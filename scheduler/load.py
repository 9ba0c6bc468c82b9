"""How much of the model interactive work has been taking lately.

Background admission and the starvation bound need the share of model time
the background lane can count on. ``InteractiveLoad`` keeps the seconds of
model time interactive work took, decayed over a short and a six times
longer window (the long one remembers bursts that a quiet spell hides).

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

import math

from scheduler.config import SchedulerConfig
from scheduler.cost import CostModel
from scheduler.plan import Lane, StepPlan


class InteractiveLoad:
    def __init__(self, config: SchedulerConfig, cost: CostModel) -> None:
        self.config = config
        self.cost = cost
        self._windows = (config.load_window_s, 6.0 * config.load_window_s)
        self._taken = [0.0, 0.0]  # decayed seconds, per window
        self._at = 0.0

    def share(self, now: float) -> float:
        """Share of the model interactive work took lately (0..1): the
        larger of the two windows' averages."""
        return min(max(t / w for t, w in zip(self._decayed(now), self._windows)), 1.0)

    def account(self, plan: StepPlan, interactive_rows: int, rows: int, seconds: float,
                now: float) -> None:
        """Count one executed step of ``rows`` live rows, ``interactive_rows``
        of them interactive.

        A step's interactive share is its interactive rows over the largest
        batch when background work rode along (or could have: the cost model
        says a full batch costs about the same), else the whole step.
        """
        self._taken = self._decayed(now)
        self._at = now
        if plan.lane is not Lane.INTERACTIVE or not interactive_rows or seconds <= 0:
            return
        cfg = self.config
        shared = rows > interactive_rows or self.cost.step_time(cfg.max_batch, plan.kv_bucket) <= (
            self.cost.step_time(cfg.padded_batch(rows), plan.kv_bucket) * (1.0 + cfg.rider_overhead))
        taken = seconds * (interactive_rows / cfg.max_batch if shared else 1.0)
        self._taken = [t + taken for t in self._taken]

    def _decayed(self, now: float) -> list[float]:
        age = max(now - self._at, 0.0)
        return [t * math.exp(-age / w) for t, w in zip(self._taken, self._windows)]
