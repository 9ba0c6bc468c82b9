"""Contenders timed against each other at a start: rounds alternating, medians.

A CPU's speed moves by a third within minutes on a shared machine: timing
one contender after the other would charge a slow minute to one of them.
Each round runs every contender, the order reversed every other round, and
each contender's figure is the median of its rounds. Used by the choices
kept per machine: the CPU engine (``cpu.engine``), the graph that runs
prompts (``ort.prompts``) and the K/V cache's type (``ort.kv_choice``).

Thread: build time (the model thread).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping


def alternating_medians(contenders: Mapping[str, Callable[[], float]], rounds: int) -> dict[str, float]:
    """The median over ``rounds`` of what each contender returns (its own
    time of a round, ``ms_per_call``), rounds alternating the order."""
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            times[name].append(contenders[name]())
    return {name: statistics.median(t) for name, t in times.items()}


def ms_per_call(run: Callable[[], object], calls: int = 1) -> Callable[[], float]:
    """A contender that times ``calls`` calls of ``run``: ms a call."""

    def timed() -> float:
        started = time.perf_counter()
        for _ in range(calls):
            run()
        return (time.perf_counter() - started) * 1e3 / calls

    return timed
