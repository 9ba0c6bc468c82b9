"""What the model thread reports after each step: stats, gauges, saturation.

The saturation it publishes (``WorkerStats.load``) is what ``GET /load``
serves (``realtime.server.load``).

``StepObserver`` keeps ``WorkerStats`` (read by tests, ``GET /load`` and the
drain) and the Prometheus gauges in step with the scheduler, setting only
what changed: most steps change none of the counts.

Thread: the model thread (the stats' fields are replaced whole, so other
threads read them safely).
"""

from __future__ import annotations

from typing import Any

from realtime.server.metrics import Metrics
from realtime.server.retry import to_ms
from realtime.server.work.handoff import LaneLoad, WorkerStats
from scheduler import Lane, Scheduler, StepOutput, StepPlan

# The load report (stats.load, gauges) is refreshed when the books' counts
# change, and at least this often while steps run (the cost model moves).
LOAD_REFRESH_S = 0.5


class StepObserver:
    def __init__(self, stats: WorkerStats, metrics: Metrics | None) -> None:
        self.stats = stats
        self._metrics = metrics
        self._observed: tuple[int, int, int] | None = None  # what was last published
        self._queue_gauges: tuple[Any, Any] | None = None
        self._load_at = float("-inf")

    def forget(self) -> None:
        """Report everything anew at the next chance (a fresh scheduler)."""
        self._observed = None
        self._load_at = float("-inf")

    def admission_changed(self) -> None:
        """An admission or a refusal: the saturation is reported after the next step."""
        self._load_at = float("-inf")

    def step(self, sched: Scheduler, plan: StepPlan, out: StepOutput, in_flight: int,
             now: float) -> None:
        stats, m = self.stats, self._metrics
        slots = sched.active_slots
        interactive, background = sched.depth(Lane.INTERACTIVE), sched.depth(Lane.BACKGROUND)
        stats.active_slots = slots
        stats.in_flight = in_flight
        if m is not None and plan.jobs and not out.oom:
            m.batch_size.observe(len(plan.jobs))
            m.step_seconds.observe(out.seconds)
        observed = (slots, interactive, background)
        if observed != self._observed or now - self._load_at >= LOAD_REFRESH_S:
            self.load(sched, now)
        if observed == self._observed:
            return
        self._observed = observed
        stats.queue = {Lane.INTERACTIVE.value: interactive, Lane.BACKGROUND.value: background}
        if m is not None:
            if self._queue_gauges is None:  # labels() is a locked dict look-up: once
                self._queue_gauges = (m.queue_depth.labels(Lane.INTERACTIVE.value),
                                      m.queue_depth.labels(Lane.BACKGROUND.value))
            m.active_slots.set(slots)
            self._queue_gauges[0].set(interactive)
            self._queue_gauges[1].set(background)

    def load(self, sched: Scheduler, now: float) -> None:
        """Refresh the interactive lane's saturation (``stats.load``, gauges)."""
        self._load_at = now
        load = sched.saturation(now)
        self.stats.load = LaneLoad(
            streams=load.streams, capacity=load.capacity, saturation=load.ratio,
            retry_after_ms=to_ms(load.retry_after_s),
            first_audio_budget_ms=round(1000.0 * sched.first_audio_s, 1))
        m = self._metrics
        if m is not None:
            m.interactive_streams.set(load.streams)
            m.interactive_capacity.set(load.capacity)
            m.saturation.set(load.ratio)
