"""What the server carries right now, and the metrics that follow from it.

``Accounting`` counts open connections and active utterances, records how
each utterance ended (outcome, first audio, audio sent, deadline misses) and
each error sent, and lets the drain wait until no utterance is active.

Thread: event loop only (the model thread sets its own gauges).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from realtime.server.metrics import Metrics

if TYPE_CHECKING:
    from realtime.server.stream.utterance import ServerUtterance
    from realtime.server.stream.utterance_link import Outcome


class Accounting:
    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics
        self.connections = 0
        self.active_utterances = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def connection_opened(self) -> None:
        self.connections += 1
        self.metrics.connections.set(self.connections)

    def connection_closed(self) -> None:
        self.connections -= 1
        self.metrics.connections.set(self.connections)

    def utterance_started(self) -> None:
        self.active_utterances += 1
        self._idle.clear()
        self.metrics.active_utterances.set(self.active_utterances)

    def utterance_ended(self, utterance: ServerUtterance, outcome: Outcome, code: str | None) -> None:
        """``code`` is the error's code when the outcome is a failure."""
        self.active_utterances -= 1
        if self.active_utterances <= 0:
            self.active_utterances = 0
            self._idle.set()
        m = self.metrics
        m.active_utterances.set(self.active_utterances)
        m.utterances.labels(code or outcome.value).inc()
        first = utterance.clock.first_audio_seconds
        if first is not None:
            m.first_audio.labels(utterance.lane.value).observe(first)
        if utterance.audio_seconds:
            m.audio_seconds.inc(utterance.audio_seconds)
        if utterance.clock.deadline_met is False:
            m.deadline_misses.inc()

    def error_sent(self, code: str) -> None:
        self.metrics.errors.labels(code).inc()

    async def wait_idle(self) -> None:
        """Until no utterance is active."""
        await self._idle.wait()
