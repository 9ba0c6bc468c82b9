"""Cost model: seconds per model step by (batch size, KV bucket).

Calibrated at start-up from the runner's warm-up measurements and kept current
with an exponentially weighted moving average of measured steps, so admission
and batching decisions follow the machine actually serving.

Thread: model thread only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping

from scheduler.config import DEFAULT_KV_BUCKETS

log = logging.getLogger(__name__)

_PROFILE_BATCHES = (1, 2, 4, 8, 16, 32, 64)  # the built-in profiles' batch sizes
Key = tuple[int, int]  # (batch, bucket)
# A shape not measured for this many steps drifts toward calibration x ratio.
_STALE_STEPS = 200
_RATIO_ALPHA = 0.02


class CostModel:
    """Step time as a table {(batch, bucket): seconds} with EWMA updates.

    A query for a shape that is not in the table uses the nearest shape at or
    above it (steps never get cheaper with more rows or longer KV), scaled up
    linearly when it lies beyond the table.
    """

    def __init__(self, table: Mapping[tuple[int, int], float], alpha: float = 0.2) -> None:
        if not table:
            raise ValueError("cost table is empty")
        if not 0.0 < alpha <= 1.0:
            raise ValueError("alpha must be in (0, 1]")
        self.alpha = alpha
        self._raw: dict[tuple[int, int], float] = {}  # per shape: warm-up, then EWMA
        self._table: dict[tuple[int, int], float] = {}  # what lookups see (monotone)
        self._seen: dict[tuple[int, int], int] = {}  # when each shape was last measured
        self._observed = 0  # measured steps so far
        self._ratio = 1.0  # EWMA of measured over calibrated step time, all shapes
        self.calibrate(table)

    @classmethod
    def from_table(cls, table: Mapping[tuple[int, int], float], alpha: float = 0.2) -> CostModel:
        return cls(table, alpha)

    @classmethod
    def from_json_rows(cls, rows: Iterable[Mapping[str, float]], alpha: float = 0.2) -> CostModel:
        """From ``[{"batch": 1, "bucket": 256, "seconds": 0.043}, ...]``."""
        return cls({(int(r["batch"]), int(r["bucket"])): float(r["seconds"]) for r in rows}, alpha)

    @classmethod
    def default_cpu(cls) -> CostModel:
        """Full-size fp32 on 2 CPU threads, from measured steps: about 43 ms at
        batch 1 and 100 ms at batch 8 near a 256-512 KV length; attention
        over a longer KV adds roughly 10% per doubling."""
        table = {}
        for b in _PROFILE_BATCHES:
            base = 0.043 + (0.100 - 0.043) * (b - 1) / 7
            for k in DEFAULT_KV_BUCKETS:
                table[(b, k)] = base * (1 + 0.1 * math.log2(k / 256))
        return cls(table)

    @classmethod
    def default_gpu(cls) -> CostModel:
        """A GPU-like profile: launch-bound, nearly flat in batch size (12 ms
        at batch 1, 16 ms at batch 64), a little dearer for long KV."""
        table = {}
        for b in _PROFILE_BATCHES:
            base = 0.012 + 0.004 * (b - 1) / 63
            for k in DEFAULT_KV_BUCKETS:
                table[(b, k)] = base * (1 + 0.03 * math.log2(k / 256))
        return cls(table)

    @property
    def table(self) -> dict[tuple[int, int], float]:
        return dict(self._table)

    def calibrate(self, table: Mapping[tuple[int, int], float]) -> None:
        """Take measured step times (the runner's warm-up dict) as the truth.

        A step never gets cheaper with more rows or a longer KV, and noise on
        a busy machine only ever adds time; so where a shape measured dearer
        than one that dominates it, the dominating shape's time bounds it.
        """
        for (batch, bucket), seconds in table.items():
            if batch < 1 or bucket < 1 or not seconds > 0:
                raise ValueError(f"bad cost entry {(batch, bucket)}: {seconds}")
            self._raw[(int(batch), int(bucket))] = float(seconds)
        raw = self._raw
        self._batches = sorted({b for b, _ in raw})
        self._buckets = sorted({k for _, k in raw})
        self._above = {key: [o for o in raw if o != key and o[0] >= key[0] and o[1] >= key[1]]
                       for key in raw}
        self._below = {key: [o for o in raw if o != key and o[0] <= key[0] and o[1] <= key[1]]
                       for key in raw}
        self._grid = len(raw) == len(self._batches) * len(self._buckets)
        self._sweep = {key: [self._neighbours(o) for o in sorted([key] + self._above[key])]
                       for key in raw} if self._grid else {}
        for key in sorted(raw):
            raw[key] = min([raw[key]] + [raw[o] for o in self._above[key]])
        for key in sorted(raw):  # ascending: what a shape dominates is done first
            self._table[key] = max([raw[key]] + [raw[o] for o in self._below[key]])
        self._baseline = dict(raw)  # what the calibration said, before any EWMA
        self._keys = sorted(raw)
        self._seen = {key: self._seen.get(key, -_STALE_STEPS) for key in raw}

    def _neighbours(self, key: Key) -> tuple[Key, Key | None, Key | None]:
        """``key``, the shape one batch size smaller and the one a bucket smaller."""
        b, k = key
        i, j = self._batches.index(b), self._buckets.index(k)
        return (key, (self._batches[i - 1], k) if i else None, (b, self._buckets[j - 1]) if j else None)

    def observe(self, batch: int, bucket: int, seconds: float) -> None:
        """Fold one measured step into the estimate for its shape (one step
        moves it by at most ``alpha`` x 50%: a stall of the whole machine is
        not the model's cost). Lookups see the monotone envelope: a shape
        costs at least what any shape it dominates was measured at, so a
        larger batch the policy has not tried lately is not taken for cheap;
        and a shape not measured for a while drifts toward its calibrated time
        times the ratio measured steps show lately (``_relax_one``)."""
        if not seconds > 0:
            return
        key = (batch, bucket)
        old = self._raw.get(key)
        if old is None:
            self.calibrate({key: seconds})
            return
        measured = min(seconds, 1.5 * old)
        self._raw[key] = old + self.alpha * (measured - old)
        self._envelope(key)
        self._observed += 1
        self._seen[key] = self._observed
        self._ratio += _RATIO_ALPHA * (measured / self._baseline[key] - self._ratio)
        self._relax_one()

    def _relax_one(self) -> None:
        """Move one shape not measured lately toward what the calibration and
        the recent measured/calibrated ratio predict: an estimate the policy
        stopped checking (a batch size it no longer uses because it looked
        dear once) must not stay stale. One shape per step, round robin."""
        key = self._keys[self._observed % len(self._keys)]
        if self._observed - self._seen[key] <= _STALE_STEPS:
            return
        target = self._baseline[key] * self._ratio
        self._raw[key] += self.alpha * (target - self._raw[key])
        self._envelope(key)

    def _envelope(self, key: Key) -> None:
        """Recompute the looked-up times of ``key`` and the shapes that
        dominate it: the max over the shapes each dominates."""
        raw, table = self._raw, self._table
        if not self._grid:
            for other in [key] + self._above[key]:
                table[other] = max([raw[other]] + [raw[o] for o in self._below[other]])
            return
        # A full grid: a running max over the next smaller batch and bucket,
        # in ascending order (every measured step does this: precomputed).
        for shape, smaller_batch, smaller_bucket in self._sweep[key]:
            value = raw[shape]
            if smaller_batch is not None and table[smaller_batch] > value:
                value = table[smaller_batch]
            if smaller_bucket is not None and table[smaller_bucket] > value:
                value = table[smaller_bucket]
            table[shape] = value

    def step_time(self, batch: int, bucket: int) -> float:
        """Estimated seconds for one step of ``batch`` rows over ``bucket`` KV."""
        batch = max(batch, 1)
        bucket = max(bucket, 1)
        b = _at_or_above(self._batches, batch)
        k = _at_or_above(self._buckets, bucket)
        seconds = self._table.get((b, k))
        if seconds is None:
            # Sparse table: the cheapest entry that dominates the shape, else the dearest.
            above = [s for (tb, tk), s in self._table.items() if tb >= b and tk >= k]
            seconds = min(above) if above else max(self._table.values())
        scale = max(batch / b, 1.0) * max(bucket / k, 1.0)
        return seconds * scale

    def tokens_per_second(self, batch: int, bucket: int) -> float:
        return batch / self.step_time(batch, bucket)


def _at_or_above(sizes: list[int], value: int) -> int:
    for size in sizes:
        if size >= value:
            return size
    return sizes[-1]
