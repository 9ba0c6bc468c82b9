"""How a server process lives: its event loop and its shutdown signals.

``run`` runs a coroutine on uvloop (asyncio's own loop where uvloop does not
exist: Windows). ``ShutdownSignals`` turns SIGTERM/SIGINT into the two
shutdown requests a server honours, as uvicorn does: the first asks for a
graceful drain, the second for a forced shutdown that skips the waiting but
still runs the normal shutdown path (utterances end with ``shutting_down``,
the model thread stops, the log says "server closed").

Thread: the event loop's.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")

EXIT_OK = 0
EXIT_FORCED = 1  # a second signal cut the drain short
EXIT_STARTUP_FAILED = 2
EXIT_DEVICE_LOST = 3  # a CUDA error broke the device: restart the process


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` to completion on a new event loop (uvloop where it exists)."""
    if sys.platform == "win32":  # uvloop is not built for Windows
        return asyncio.run(main)
    import uvloop

    return uvloop.run(main)


class ShutdownSignals:
    """SIGTERM/SIGINT: the first calls ``drain``, the second ``force``;
    later ones are logged and ignored."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, drain: Callable[[], None], force: Callable[[], None]) -> None:
        self._drain = drain
        self._force = force
        self.received = 0

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in self.SIGNALS:
            loop.add_signal_handler(sig, self.handle, sig)

    def uninstall(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in self.SIGNALS:
            loop.remove_signal_handler(sig)

    def handle(self, signum: int) -> None:
        self.received += 1
        name = signal.Signals(signum).name
        if self.received == 1:
            log.info("%s: draining (send it again to shut down at once)", name)
            self._drain()
        elif self.received == 2:
            log.warning("%s again: shutting down now", name)
            self._force()
        else:
            log.warning("%s: already shutting down", name)
