"""The start-up advice on a CPU: how many real-time streams each precision serves.

After the warm-up has timed whole steps (``step_cost.with_step_overhead``:
decode, sampling, the streaming vocoder's share, the host's bookkeeping; what
the scheduler's cost model and admission start from), ``streams`` turns that
table into the number of streams kept in real time: the largest batch size B
whose whole step at the longest KV bucket takes at most one code's worth of
audio (1 / ``CODES_PER_SECOND`` = 21.3 ms), since B streams batched together
each get a code per step. It is the figure the interactive admission
(``scheduler.capacity``) reaches on such a table before its headroom and the
background lane's share are taken off.

Only the running precision is timed at a start. ``log_advice`` keeps each
precision's figure in the prepared cache (kind ``cpu-streams``, keyed by the
machine, threads, model shape, batch sizes and buckets) and reports the other
precision from the last start that ran it on this machine, or says how to learn it:

    cpu streams: this CPU serves 3 real-time streams in int8, 1 in fp32 (...)

Thread: the model thread (inside the runner's warm-up).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from realtime.engine.model.prepared_cache import CacheKey, PreparedCache
from scheduler.jobs import CODES_PER_SECOND

log = logging.getLogger(__name__)

KIND = "cpu-streams"
PRECISIONS = ("int8", "fp32")


def streams(table: Mapping[tuple[int, int], float]) -> tuple[int, dict[int, float]]:
    """(real-time streams, whole-step ms per batch size at the longest bucket)
    from a warm-up table {(batch, bucket): seconds}."""
    if not table:
        return 0, {}
    bucket = max(k for _, k in table)
    step_ms = {b: s * 1e3 for (b, k), s in sorted(table.items()) if k == bucket}
    budget_ms = 1e3 / CODES_PER_SECOND
    return max((b for b, ms in step_ms.items() if ms <= budget_ms), default=0), step_ms


def _key(runner, precision: str) -> CacheKey:
    shape = runner.shape
    return CacheKey.of(KIND, precision=precision, threads=_threads(),
                       model=[shape.layers, shape.hidden, shape.intermediate],
                       batch_sizes=list(runner.batch_sizes), kv_buckets=list(runner.kv_buckets))


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def precision_of(options) -> str:
    """The CPU precision a start runs: ``auto`` is fp32 there."""
    return "fp32" if options.precision in ("auto", "fp32") else options.precision


def describe(figures: Mapping[str, tuple[int, dict[int, float]] | None], running: str) -> str:
    """The advice line from each precision's figure (None: not measured here)."""
    counts = []
    for p in PRECISIONS:
        figure = figures.get(p)
        counts.append("?" if figure is None else str(figure[0]))
    notes = []
    for p in PRECISIONS:
        figure = figures.get(p)
        if figure is None:
            flag = "--precision int8" if p == "int8" else "the default precision"
            notes.append(f"{p}: not measured on this machine yet (start once with {flag} to know)")
            continue
        steps = ", ".join(f"{ms:.1f} ms at batch {b}" for b, ms in figure[1].items())
        when = "this start" if p == running else "an earlier start"
        notes.append(f"{p}: {when}, whole steps {steps}")
    head = f"this CPU serves {counts[0]} real-time streams in int8, {counts[1]} in fp32"
    return (f"{head} (a stream needs a code every {1e3 / CODES_PER_SECOND:.1f} ms; "
            + "; ".join(notes) + ")")


def log_advice(runner, table: Mapping[tuple[int, int], float], cache_dir: str | None) -> str:
    """Log (and return) the advice line for a CPU runner's warm-up ``table``;
    store this precision's figure, read the other's."""
    running = precision_of(runner.options)
    figures: dict[str, tuple[int, dict[int, float]] | None] = {running: streams(table)}
    cache = PreparedCache(cache_dir)
    count, step_ms = figures[running]  # type: ignore[misc]
    cache.store_json(_key(runner, running), {"streams": count,
                                             "step_ms": {str(b): ms for b, ms in step_ms.items()}})
    for p in PRECISIONS:
        if p == running:
            continue
        doc: Any = cache.load_json(_key(runner, p))
        try:
            figures[p] = (int(doc["streams"]), {int(b): float(ms) for b, ms in doc["step_ms"].items()})
        except (TypeError, KeyError, ValueError, AttributeError):
            figures[p] = None
    line = describe(figures, running)
    log.info("cpu streams: %s", line)
    return line
