"""How the server behaves under overload: admission settings and the load report.

- ``scheduler_policy``: the scheduler fields the flags and the runner decide
  (admission mode, first-audio budget, steps to a job's first audio, how
  long a streamed utterance without a sentence holds capacity).
- ``publish_saturation`` (the worker, after steps) and ``load_report``: the
  body of ``GET /load``, the saturation signal a proxy or an autoscaler reads
  (the same figures are Prometheus gauges).

Thread: ``scheduler_policy`` on the model thread (when the worker builds its
scheduler); the rest on the event loop.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from realtime.retry import to_ms

if TYPE_CHECKING:
    from realtime.accounting import Accounting
    from realtime.config import ServerConfig
    from realtime.handoff import WorkerStats
    from realtime.metrics import Metrics
    from realtime.state import ServiceState
    from realtime.worker import ModelWorker
    from scheduler import Scheduler

log = logging.getLogger(__name__)

def scheduler_policy(config: ServerConfig, runner: object) -> dict[str, Any]:
    """``SchedulerConfig`` fields from the flags and the runner."""
    budget_ms = config.interactive_first_audio_ms
    return {
        "admission": config.admission,
        "interactive_first_audio_s": budget_ms / 1000.0 if budget_ms > 0 else None,
        "first_audio_steps": first_audio_steps(runner),
        "stream_reservation_s": config.stream_reservation_s,
    }


def first_audio_steps(runner: object) -> int:
    """Decode steps from a job's first code to its first audio: a streaming
    vocoder's first chunk plus its lookahead; 1 for a runner without one
    (the tone runner sounds every code)."""
    vocoder = getattr(runner, "vocoder", None)
    chunk = getattr(vocoder, "min_chunk_steps", None)
    lookahead = getattr(vocoder, "lookahead_steps", None)
    if isinstance(chunk, int) and isinstance(lookahead, int):
        return max(1, chunk + lookahead)
    return 1


def publish_saturation(sched: Scheduler, now: float, stats: WorkerStats,
                       metrics: Metrics | None) -> None:
    """The interactive lane's saturation into ``stats.load`` (for ``GET /load``;
    replaced whole, so the event loop reads it safely) and the gauges.
    Runs on the model thread."""
    load = sched.saturation(now)
    stats.load = {"streams": load.streams, "capacity": load.capacity,
                  "saturation": load.ratio, "retry_after_ms": to_ms(load.retry_after_s),
                  "first_audio_budget_ms": round(1000.0 * sched.first_audio_s, 1)}
    if metrics is not None:
        metrics.interactive_streams.set(load.streams)
        metrics.interactive_capacity.set(load.capacity)
        metrics.saturation.set(load.ratio)


def load_report(config: ServerConfig, state: ServiceState, accounting: Accounting,
                worker: ModelWorker) -> dict[str, Any]:
    """``GET /load``: whether a new interactive utterance would be admitted
    now, and the figures behind it. ``saturation`` is the interactive
    streams (live, or accepted and awaiting their first sentence) over the
    capacity (1.0 and above: new interactive work is refused);
    ``retry_after_ms`` is set while saturated."""
    stats = worker.stats
    load = dict(stats.load)
    saturation = float(load.get("saturation", 0.0))
    return {
        "ready": state.accepting,
        "admission": config.admission,
        "saturated": saturation >= 1.0,
        "saturation": round(saturation, 3),
        "interactive": {"streams": load.get("streams", 0), "capacity": load.get("capacity", 0),
                        "queued": stats.queue.get("interactive", 0),
                        "first_audio_budget_ms": load.get("first_audio_budget_ms")},
        "background": {"queued": stats.queue.get("background", 0)},
        "retry_after_ms": load.get("retry_after_ms"),
        "loop_lag_ms": round(1000.0 * worker.loop_lag.current(), 1),
        "active_utterances": accounting.active_utterances,
        "connections": accounting.connections,
    }
