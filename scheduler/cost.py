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
        self._table: dict[tuple[int, int], float] = {}
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
            self._table[(int(batch), int(bucket))] = float(seconds)
        self._batches = sorted({b for b, _ in self._table})
        self._buckets = sorted({k for _, k in self._table})
        self._above = {key: [o for o in self._table if o != key and o[0] >= key[0] and o[1] >= key[1]]
                       for key in self._table}
        self._below = {key: [o for o in self._table if o != key and o[0] <= key[0] and o[1] <= key[1]]
                       for key in self._table}
        for key in self._table:
            self._table[key] = min([self._table[key]] + [self._table[o] for o in self._above[key]])

    def observe(self, batch: int, bucket: int, seconds: float) -> None:
        """Fold one measured step into the estimate for its shape, keeping the
        table monotone: shapes that dominate it cost at least as much, the
        ones it dominates at most as much."""
        if not seconds > 0:
            return
        key = (batch, bucket)
        old = self._table.get(key)
        if old is None:
            self.calibrate({key: seconds})
            return
        new = old + self.alpha * (seconds - old)
        table = self._table
        table[key] = new
        for other in self._above[key]:
            if table[other] < new:
                table[other] = new
        for other in self._below[key]:
            if table[other] > new:
                table[other] = new

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
