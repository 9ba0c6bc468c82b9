"""The scheduler's admission policy as the server builds it from its flags and the runner.

``scheduler_policy`` gives the ``SchedulerConfig`` fields the server
decides: the admission mode (``--admission``), the interactive first-audio
budget (``--interactive-first-audio-ms``; None: the cost model derives it),
the steps from a job's first code to its first audio (the runner's
``first_audio_steps``: a streaming vocoder's first chunk plus its
lookahead), and how long a streamed utterance without a sentence holds
its place (``--stream-reservation-s``).

Thread: model thread (the worker builds its scheduler there).
"""

from __future__ import annotations

from typing import Any

from realtime.engine.api import Runner
from realtime.server.config import ServerConfig


def scheduler_policy(config: ServerConfig, runner: Runner) -> dict[str, Any]:
    """``SchedulerConfig`` fields from the flags and the runner."""
    budget_ms = config.interactive_first_audio_ms
    return {
        "admission": config.admission,
        "interactive_first_audio_s": budget_ms / 1000.0 if budget_ms > 0 else None,
        "first_audio_steps": runner.first_audio_steps,
        "stream_reservation_s": config.stream_reservation_s,
    }
