"""Figures measured side by side: per-round ratios and their spread.

Two things timed in alternating rounds are compared round by round (the
load that drifts between rounds cancels), then summarised by the median and
quartiles of those ratios.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def spread(values: Sequence[float]) -> dict[str, float]:
    """Median and quartiles (p25, p75; inclusive method) of recorded values."""
    data = sorted(values)
    if len(data) == 1:
        return {"median": data[0], "p25": data[0], "p75": data[0]}
    p25, _, p75 = statistics.quantiles(data, n=4, method="inclusive")
    return {"median": statistics.median(data), "p25": p25, "p75": p75}


def paired_ratios(on: Sequence[float], off: Sequence[float]) -> list[float]:
    """Per-round ratios on/off of values measured side by side, round by round."""
    if len(on) != len(off) or not on:
        raise ValueError(f"rounds differ: {len(on)} on, {len(off)} off")
    return [a / b for a, b in zip(on, off)]
