"""``GET /load``: the saturation signal a proxy or an autoscaler reads.

Whether a new interactive utterance would be admitted now, and the figures
behind it: the lane's load as the observer last published it
(``WorkerStats.load``, a ``LaneLoad``), the queues, the event loop's lag,
active utterances and connections. ``saturation`` is the interactive
streams (live, or accepted and awaiting their first sentence) over the
capacity (1.0 and above: new interactive work is refused);
``retry_after_ms`` is set while saturated. The same figures are
Prometheus gauges.

Thread: event loop.
"""

from __future__ import annotations

from typing import Any

from realtime.server.accounting import Accounting
from realtime.server.config import ServerConfig
from realtime.server.state import ServiceState
from realtime.server.work.worker import ModelWorker


def load_report(config: ServerConfig, state: ServiceState, accounting: Accounting,
                worker: ModelWorker) -> dict[str, Any]:
    """The body of ``GET /load``."""
    stats = worker.stats
    load = stats.load
    return {
        "ready": state.accepting,
        "admission": config.admission,
        "saturated": load.saturation >= 1.0,
        "saturation": round(load.saturation, 3),
        "interactive": {"streams": load.streams, "capacity": load.capacity,
                        "queued": stats.queue.get("interactive", 0),
                        "first_audio_budget_ms": load.first_audio_budget_ms},
        "background": {"queued": stats.queue.get("background", 0)},
        "retry_after_ms": load.retry_after_ms,
        "loop_lag_ms": round(1000.0 * worker.loop_lag.current(), 1),
        "active_utterances": accounting.active_utterances,
        "connections": accounting.connections,
    }
