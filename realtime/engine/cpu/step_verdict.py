"""Whether a mixed GEMM plan beats the best single backend, judged by whole steps.

``cpu.plan`` times each matrix shape alone and picks a backend per shape; on
the Intel Xeon with AMX (2 cores) that picked oneDNN for 60 of 81 batch-1
matrices, yet plain ``mm`` for all of them was 11-21% faster as a whole step:
a matrix timed alone does not see what its neighbours leave in the caches, the
thread team's wake-ups between kernels, or the switch between libraries. So
the per-shape plan ("mixed") is only a candidate: a whole decode step (and a
prefill) runs with it and with every single-backend plan, in alternating
rounds, and the mix is kept only if it beats the best single plan by more
than the noise of those rounds.

``decide`` is the pure rule (tests feed it recorded timings); ``time_plans``
takes the timings. Thread: build time (the model thread).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

MIXED = "mixed"  # the per-shape plan's name among the candidates
MIN_GAIN = 0.03  # a mix must win by at least this fraction, whatever the spread
SPREAD_FACTOR = 2.0  # ... and by this many median deviations of the paired ratios


@dataclass(frozen=True)
class StepVerdict:
    """The plan chosen for one row class and why.

    ``chosen``: ``MIXED`` or a backend name; ``medians_ms``: each candidate's
    median whole-step time; ``best_single``: the fastest single backend;
    ``gain``: 1 - (mixed / best single), the median of the per-round ratios
    (None without a distinct mix); ``noise``: the gain it had to exceed.
    """

    rows: int
    chosen: str
    medians_ms: dict[str, float]
    best_single: str
    gain: float | None = None
    noise: float = 0.0

    def describe(self, label: str) -> str:
        times = ", ".join(f"{b} {ms:.2f}" for b, ms in sorted(self.medians_ms.items(),
                                                            key=lambda kv: kv[1]))
        if self.gain is None:
            why = f"{self.best_single} is the fastest single backend"
        elif self.chosen == MIXED:
            why = f"mixed beats {self.best_single} by {self.gain:.1%} (> noise {self.noise:.1%})"
        else:
            why = (f"mixed {'loses to' if self.gain < 0 else 'beats'} {self.best_single} by "
                   f"{abs(self.gain):.1%}, not more than noise {self.noise:.1%}: "
                   f"{self.best_single} for all")
        return f"{label}: {self.chosen} ({why}; whole step ms: {times})"


def decide(rows: int, seconds: Mapping[str, list[float]], min_gain: float = MIN_GAIN) -> StepVerdict:
    """The plan for row class ``rows`` from per-round whole-step ``seconds``
    per candidate (``MIXED`` and single backends; rounds aligned: round i of
    every candidate ran back to back; on a tie the single backend named first
    wins). At least one single backend is needed.

    The fastest single backend (median) is the default; ``MIXED`` replaces it
    only if the median of its per-round ratios to that backend shows a gain
    above ``max(min_gain, SPREAD_FACTOR * median deviation of the ratios)``.
    """
    medians = {b: statistics.median(s) for b, s in seconds.items() if s}
    singles = [b for b in medians if b != MIXED]
    if not singles:
        raise ValueError("a whole-step verdict needs at least one single-backend plan")
    best = min(singles, key=lambda b: (medians[b], singles.index(b)))  # ties: the first named
    ms = {b: m * 1e3 for b, m in medians.items()}
    if MIXED not in medians:
        return StepVerdict(rows, best, ms, best)
    ratios = [m / s for m, s in zip(seconds[MIXED], seconds[best]) if s > 0]
    ratio = statistics.median(ratios)
    spread = statistics.median(abs(r - ratio) for r in ratios)
    noise = max(min_gain, SPREAD_FACTOR * spread)
    gain = 1.0 - ratio
    chosen = MIXED if gain > noise and medians[MIXED] < medians[best] else best
    return StepVerdict(rows, chosen, ms, best, gain, noise)


def prefer_held(seconds: Mapping[str, list[float]], chosen: str, held: Sequence[str],
                margin: float) -> tuple[str, float]:
    """The backend to run a row class on: ``chosen`` (a verdict's), unless it
    is a form no other row class holds (a further copy of the weights, packed
    at every start) and the fastest ``held`` backend timed here is slower by
    no more than ``max(margin, SPREAD_FACTOR * median deviation)`` of the
    per-round ratios: that held backend then. Also returns how much slower
    it is (0.0 when ``chosen`` stays unasked)."""
    timed = [b for b in held if seconds.get(b)]
    if chosen == MIXED or chosen in held or not timed or not seconds.get(chosen):
        return chosen, 0.0
    best = min(timed, key=lambda b: statistics.median(seconds[b]))
    ratios = [h / c for h, c in zip(seconds[best], seconds[chosen]) if c > 0]
    ratio = statistics.median(ratios)
    spread = statistics.median(abs(r - ratio) for r in ratios)
    slower = ratio - 1.0
    return (best if slower <= max(margin, SPREAD_FACTOR * spread) else chosen), slower


def time_plans(plans: Mapping[str, Callable[[], None]], step: Callable[[], None], rounds: int,
               steps: int, deadline: float | None = None) -> dict[str, list[float]]:
    """Per plan, the seconds of one ``step`` in each round: ``plans[name]()``
    puts the plan in place, one step warms it, ``steps`` more are timed and
    averaged. The order rotates every round, so load drifting during the
    measurement touches every plan alike. Stops after a whole round once
    ``deadline`` (``time.perf_counter``) passes, with at least one round."""
    names = list(plans)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            plans[name]()
            step()
            start = time.perf_counter()
            for _ in range(steps):
                step()
            out[name].append((time.perf_counter() - start) / steps)
        if deadline is not None and time.perf_counter() > deadline:
            break
    return out
