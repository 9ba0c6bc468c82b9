"""The CPU warm-up in two stages: what the first requests need, then the rest.

A full warm-up times a decode step at every (batch size, KV bucket) and
whole streaming steps at the smallest and largest batch size: the cost
model's seed. On two CPU cores that is tens of seconds, most of a cold
start, and a first request needs little of it: one row, a short KV, a
streaming vocoder window. So ``StagedWarmup``:

- ``before_ready()`` (``/readyz`` is 503 until it returns) loads the table
  this machine measured earlier for this model and these shapes from the
  ``PreparedCache``; on a hit it runs one batch-1 decode (pages the weights
  in, builds the kernels' primitives) and returns it. On a miss it times
  batch 1 at every bucket plus one whole streaming step series at batch 1
  (``step_cost``), and returns that: the cost model reads larger batches as
  dearer (scaled up linearly from the largest shape it knows), so admission
  errs on the safe side until the rest is measured.
- ``step()`` runs one piece of the rest: a decode timing at one larger
  (batch, bucket) shape (a hit only runs each larger batch size once, to
  build its primitives). The worker calls it only while the scheduler holds
  no job, so a request waits for at most one piece (one decode step of the
  largest shape, twice). It returns the cost entries measured, which the
  worker folds into its cost model; after the last piece the whole table
  (the batch-1 whole-step overhead added flat to the larger batches, as
  ``step_cost.interpolate`` extends it) is stored for the next start.

``left`` is how many pieces remain (``/readyz``'s ``warming``).

Thread: the model thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import torch

from realtime.engine import startup_clock
from realtime.engine.api import WeightsKind
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache, checkpoint_id
from realtime.engine.step_cost import TIMING, with_step_overhead

log = logging.getLogger(__name__)

Table = dict[tuple[int, int], float]


def model_id(assets, cache: PreparedCache) -> str:
    """What identifies the weights: a checkpoint's content id, or the seed and
    shape random weights are drawn from."""
    if assets.kind is WeightsKind.CHECKPOINT:
        return checkpoint_id(assets.source, cache)
    return f"{assets.kind.value} {assets.source} {assets.shape}"


def table_key(runner, cache: PreparedCache) -> CacheKey:
    """The cost table's key: the model, how it runs (engine, precision,
    threads), the shapes timed and how they were timed."""
    o = runner.options
    return CacheKey.of(
        "step-costs", model=model_id(runner.assets, cache), dtype=str(runner.dtype),
        engine=runner.model.engine, precision=o.precision, threads=torch.get_num_threads(),
        batch_sizes=list(runner.batch_sizes), kv_buckets=list(runner.kv_buckets),
        max_slots=runner.max_slots, lookahead=o.lookahead_steps,
        vocoder=[o.vocoder_precision, o.vocoder_overlap], timing=TIMING)


def _decode(runner, batch: int, bucket: int) -> float:
    with torch.no_grad():
        return runner._time_decode(batch, min(bucket, runner.max_len))


class StagedWarmup:
    """See the module docstring; ``runner`` is a CPU ``ModelRunner``."""

    def __init__(self, runner, cache: PreparedCache):
        self.runner, self.cache = runner, cache
        self.key: CacheKey | None = None
        self.table: Table = {}
        self._pieces: list[Callable[[], Table]] = []
        self._overhead = 0.0
        self.deferred = 0  # pieces left for idle time when ready

    @property
    def left(self) -> int:
        return len(self._pieces)

    def before_ready(self) -> Table:
        started = time.perf_counter()
        r = self.runner
        batches = [b for b in r.batch_sizes if b <= r.max_slots]
        smallest, larger = batches[0], batches[1:]
        self.key = table_key(r, self.cache) if self.cache.enabled else None
        cached = self._cached()
        if cached is not None:
            _decode(r, smallest, r.kv_buckets[0])
            self.table = cached
            self._pieces = [self._warm_only(b) for b in larger]
            self.deferred = len(self._pieces)
            startup_clock.mark("warm-up: first requests' path")
            log.info("warm-up: step costs of %d shapes from the cache; first requests' path "
                     "warmed in %.2f s, %d batch sizes left for idle time",
                     len(cached), time.perf_counter() - started, len(larger))
            return dict(cached)
        decode = {(smallest, k): _decode(r, smallest, k) for k in r.kv_buckets}
        self.table = with_step_overhead(r, decode)
        self._overhead = max(0.0, max(self.table[k] - decode[k] for k in decode))
        self._pieces = [self._timed(b, k) for b in larger for k in r.kv_buckets]
        self.deferred = len(self._pieces)
        startup_clock.mark("warm-up: batch 1 measured")
        log.info("warm-up: batch %d measured in %.2f s (%s); %d shapes left for idle time",
                 smallest, time.perf_counter() - started,
                 "no cache" if self.key is None else "nothing cached yet", len(self._pieces))
        if not self._pieces:
            self._store()
            self._advise()
        return dict(self.table)

    def step(self, cost=None) -> Table:
        """Run one piece of the rest; the cost entries it measured (maybe
        none), folded into ``cost`` (a ``scheduler.CostModel``) when given."""
        if not self._pieces:
            return {}
        measured = self._pieces[0]()
        del self._pieces[0]  # after the run: ``left`` counts the piece in progress
        self.table.update(measured)
        if measured and cost is not None:
            cost.calibrate(measured)
        if not self._pieces:
            log.info("warm-up: the rest done (%d shapes)", len(self.table))
            if measured:
                self._store()
            self._advise()
        return measured

    def _timed(self, batch: int, bucket: int) -> Callable[[], Table]:
        return lambda: {(batch, bucket): _decode(self.runner, batch, bucket) + self._overhead}

    def _warm_only(self, batch: int) -> Callable[[], Table]:
        def run() -> Table:
            _decode(self.runner, batch, self.runner.kv_buckets[0])
            return {}
        return run

    def _cached(self) -> Table | None:
        if self.key is None:
            return None
        rows = self.cache.load_json(self.key)
        try:
            table = {(int(b), int(k)): float(s) for b, k, s in rows} if rows else None
        except (TypeError, ValueError):
            table = None
        want = {(b, k) for b in self.runner.batch_sizes if b <= self.runner.max_slots
                for k in self.runner.kv_buckets}
        if table is None or set(table) != want or not all(s > 0 for s in table.values()):
            if rows is not None:
                log.warning("warm-up: cached step costs do not fit these shapes; measuring")
            return None
        return table

    def _advise(self) -> None:
        """The whole table is known: log the CPU's real-time streams per precision
        (in idle time, like the rest: its cache I/O delays no request)."""
        from realtime.engine.cpu.stream_advice import log_advice
        log_advice(self.runner, self.table, self.cache.root)

    def _store(self) -> None:
        if self.key is not None:
            self.cache.store_json(self.key, [[b, k, s] for (b, k), s in sorted(self.table.items())])
