"""The model thread's inbox: commands from the event loop, taken in batches.

The event loop (and the preparation thread, ``preparation.py``) ``post``
commands (``ModelWorker.submit``/``cancel``: a ``Prepared`` submission or a
``CancelJobs``), the event loop ``stop``s; the model thread ``take``s
everything queued at once, between steps. How long ``take`` waits is the caller's to say: after a step
(``busy``) it never waits; with work held but nothing planned (a background
batch filling) it waits until ``wake_at()`` or the next command; with
nothing held it waits for a command (no polling).

Thread: ``post`` and ``stop`` from any thread; ``take`` on the model thread.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

Command = TypeVar("Command")


class Inbox(Generic[Command]):
    """A thread-safe queue of commands with a stop flag."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._commands: collections.deque[Command] = collections.deque()
        self._stopping = False

    def __len__(self) -> int:
        """Commands queued now (a racy snapshot from another thread)."""
        return len(self._commands)

    def post(self, command: Command) -> None:
        with self._cond:
            self._commands.append(command)
            self._cond.notify()

    def stop(self) -> None:
        """Make the next ``take`` return None, waking it if it waits."""
        with self._cond:
            self._stopping = True
            self._cond.notify()

    def take(self, busy: bool, wake_at: Callable[[], float] | None) -> list[Command] | None:
        """Every queued command (None: stop). ``busy``: do not wait;
        ``wake_at`` (a ``time.monotonic`` deadline, asked only when it would
        wait): wait at most until then; neither: wait for a command."""
        if busy and not self._commands and not self._stopping:
            return []  # the common case between steps: no lock to take
        with self._cond:
            if not self._commands and not self._stopping and not busy:
                if wake_at is not None:
                    timeout = wake_at() - time.monotonic()
                    if timeout > 0:
                        self._cond.wait(timeout)
                else:
                    while not self._commands and not self._stopping:
                        self._cond.wait()
            if self._stopping:
                return None
            commands = list(self._commands)
            self._commands.clear()
            return commands
