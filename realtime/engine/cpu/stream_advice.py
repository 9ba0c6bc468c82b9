"""The start-up advice on a CPU: how many real-time streams this set-up serves.

After the warm-up has timed whole steps (``step_cost.with_step_overhead``:
decode, sampling, the streaming vocoder's share, the host's bookkeeping; what
the scheduler's cost model and admission start from), ``streams`` turns that
table into the number of streams kept in real time: the largest batch size B
whose whole step at the longest KV bucket takes at most one code's worth of
audio less admission's headroom (``SchedulerConfig.realtime_step_s``: 16.4 ms
with the default 30%), since B streams batched together each get a code per
step. It is the figure the interactive admission (``scheduler.capacity``)
reaches on such a table before the background lane's share is taken off: the
most streams a start will admit, not more.

A set-up is the engine that runs the decoder and its precision (``ort int4``,
``torch fp32``, ...: ``SETUPS``). Only the running one is timed at a start.
``log_advice`` keeps each set-up's figure in the prepared cache (kind
``cpu-streams``, keyed by the machine, threads, model shape, batch sizes,
buckets, how steps were timed and the budget a step is held to) and reports
the others from earlier starts on this machine:

    cpu streams: this CPU serves 1 real-time stream on ort int4 (...); earlier starts here: ort int8 0 (...)

Thread: the model thread (inside the runner's warm-up).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from realtime.engine.cpu.engine import ORT_PRECISIONS
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache
from realtime.engine.step_cost import TIMING
from scheduler.config import SchedulerConfig

log = logging.getLogger(__name__)

KIND = "cpu-streams"
# What a CPU can run (cpu.engine): ONNX Runtime's forms, and torch's fp32 reference.
SETUPS = (*(f"ort {p}" for p in ORT_PRECISIONS), "torch fp32")

Figure = tuple[int, dict[int, float]]  # (real-time streams, whole-step ms per batch size)


def streams(table: Mapping[tuple[int, int], float]) -> Figure:
    """(real-time streams, whole-step ms per batch size at the longest bucket)
    from a warm-up table {(batch, bucket): seconds}."""
    if not table:
        return 0, {}
    bucket = max(k for _, k in table)
    step_ms = {b: s * 1e3 for (b, k), s in sorted(table.items()) if k == bucket}
    budget_ms = 1e3 * SchedulerConfig().realtime_step_s
    return max((b for b, ms in step_ms.items() if ms <= budget_ms), default=0), step_ms


def setup_of(runner) -> str:
    """The set-up a CPU runner runs: its decoder's engine and its precision
    (``auto`` is resolved by the build; left as ``auto``, torch runs fp32)."""
    precision = runner.options.precision
    return f"{runner.model.engine} {'fp32' if precision == 'auto' else precision}"


def _key(runner, setup: str) -> CacheKey:
    shape = runner.shape
    return CacheKey.of(KIND, setup=setup, threads=_threads(),
                       model=[shape.layers, shape.hidden, shape.intermediate],
                       batch_sizes=list(runner.batch_sizes), kv_buckets=list(runner.kv_buckets),
                       timing=TIMING, budget_ms=round(1e3 * SchedulerConfig().realtime_step_s, 2))


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def _steps(figure: Figure) -> str:
    return ", ".join(f"{ms:.1f} ms at batch {b}" for b, ms in figure[1].items())


def describe(running: str, figure: Figure, earlier: Mapping[str, Figure]) -> str:
    """The advice line: the running set-up's figure, then those of earlier starts."""
    count = figure[0]
    line = (f"this CPU serves {count} real-time stream{'' if count == 1 else 's'} on {running} "
            f"(a stream needs a code every {1e3 * SchedulerConfig().realtime_step_s:.1f} ms, "
            f"real time with admission's headroom; whole steps "
            f"{_steps(figure)})")
    if not earlier:
        return line + ("; no other set-up measured on this machine yet"
                       " (python -m bench cpu-streams compares them)")
    return line + "; earlier starts here: " + ", ".join(
        f"{setup} {fig[0]} ({_steps(fig)})" for setup, fig in earlier.items())


def log_advice(runner, table: Mapping[tuple[int, int], float], cache_dir: str | None) -> str:
    """Log (and return) the advice line for a CPU runner's warm-up ``table``;
    store this set-up's figure, read the others'."""
    running = setup_of(runner)
    figure = streams(table)
    cache = PreparedCache(cache_dir)
    cache.store_json(_key(runner, running), {"streams": figure[0],
                                             "step_ms": {str(b): ms for b, ms in figure[1].items()}})
    earlier: dict[str, Figure] = {}
    for setup in SETUPS:
        if setup == running:
            continue
        doc: Any = cache.load_json(_key(runner, setup))
        try:
            earlier[setup] = (int(doc["streams"]), {int(b): float(ms) for b, ms in doc["step_ms"].items()})
        except (TypeError, KeyError, ValueError, AttributeError):
            continue  # never run here (or an entry of another shape)
    line = describe(running, figure, earlier)
    log.info("cpu streams: %s", line)
    return line
