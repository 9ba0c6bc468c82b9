"""Where a start-up's time goes: one log line per phase, in milliseconds.

``mark(phase)`` ends ``phase``: it logs ``start-up: <phase> <ms> ms (at <ms>)``,
the time since the previous mark (the first phase: since the process
started, from ``/proc`` on Linux, else since this module was imported) and
the time since the process started. ``summary()`` is the whole timeline in
one line (``ready`` logs it), and ``phases()`` the list behind it, so a bench
reads where a start went from the log (``bench/coldstart.py`` parses
``LINE_PREFIX`` lines).

Thread: any (the model thread marks most phases, the event loop the rest);
a lock keeps each mark's read-and-update whole.
"""

from __future__ import annotations

import logging
import os
import threading
import time

log = logging.getLogger(__name__)

LINE_PREFIX = "start-up: "


def process_age_s() -> float | None:
    """Seconds since this process started (Linux: ``/proc``), None elsewhere."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


class StartupClock:
    """The phases marked so far; see the module docstring."""

    def __init__(self) -> None:
        now = time.monotonic()
        self._origin = now - (process_age_s() or 0.0)
        self._last = self._origin
        self._phases: list[tuple[str, float]] = []
        self._lock = threading.Lock()

    def mark(self, phase: str) -> float:
        """End ``phase`` now; returns its milliseconds."""
        with self._lock:
            now = time.monotonic()
            ms = (now - self._last) * 1e3
            self._last = now
            self._phases.append((phase, ms))
        log.info("%s%s %.0f ms (at %.0f ms)", LINE_PREFIX, phase, ms, (now - self._origin) * 1e3)
        return ms

    def phases(self) -> list[tuple[str, float]]:
        with self._lock:
            return list(self._phases)

    def summary(self) -> str:
        return ", ".join(f"{p} {ms:.0f}" for p, ms in self.phases())


CLOCK = StartupClock()


def mark(phase: str) -> float:
    """``CLOCK.mark``: the process's own timeline."""
    return CLOCK.mark(phase)
