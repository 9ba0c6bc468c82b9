"""Whole-step costs for the cost model's seed (``ModelRunner.warmup``).

The warm-up times decode steps alone (the model and sampling, every row in
the scratch slot). A served step is more: the streaming vocoder every few
codes, the EOS read, the host's bookkeeping. A cost model seeded with
decode-only times admits more than the machine serves until its moving
average catches up. ``with_step_overhead(runner, timings)`` runs whole
``execute`` steps of streaming jobs at the smallest and the largest timed
batch size (``WARM`` steps to reach steady audio, then ``MEASURED`` steps
whose ``StepOutput.seconds`` are kept, what the worker feeds the cost model
when serving), takes their mean less the decode-only time of that shape
as the step's overhead, and adds it, interpolated linearly in the batch
size, to every (batch, bucket) entry. The jobs are released and the runner
reset. When a measurement cannot run (a cache too short for the jobs, a
device that cannot run a whole step), the decode-only timings stand and
the log says so.

Thread: the model thread (inside the runner's warm-up).
"""

from __future__ import annotations

import bisect
import logging
import statistics
import time
from collections.abc import Mapping, Sequence

import torch

from realtime.engine.api import RequestError, SamplingParams, SegmentRequest
from scheduler import Lane, StepPlan

log = logging.getLogger(__name__)

WARM = 16  # a stream's first audio: a push every 4 codes plus the vocoder's lookahead
MEASURED = 8  # two push intervals
TEXT = "Warm up the whole step."
SEGMENT_CODES = 141  # a streamed sentence of about 3 s, what a chunk schedule is costed on
# How the warm-up times a step (``ModelRunner._time_decode`` and this module),
# in the key of every table kept per machine: a table timed another way is
# measured again, never served. 3: rows at the bucket's last position over
# K/V pages written, whole steps, a sentence's vocoder, each the median of 3
# (the best of 2 read 10-17% under the median on a machine whose speed moves,
# and admission took streams on it).
TIMING = 3

Table = dict[tuple[int, int], float]


class StepCostError(RuntimeError):
    """A whole step could not be measured (the reason is logged)."""


def with_step_overhead(runner, timings: Mapping[tuple[int, int], float]) -> Table:
    """``timings`` plus each batch size's whole-step overhead (module docstring)."""
    table = dict(timings)
    if not table:
        return table
    batches = sorted({b for b, _ in table})
    overhead: dict[int, float] = {}
    try:
        for b in dict.fromkeys((batches[0], batches[-1])):
            overhead[b] = _overhead(runner, b, table)
    except StepCostError as exc:
        log.warning("step costs: whole steps not measured (%s); the decode-only timings seed "
                    "the cost model", exc)
        return table
    finally:
        runner.reset()
    per_code = vocoder_s_per_code(runner) if runner.device == "cpu" else 0.0
    log.info("step costs: a whole step adds %s (vocoder, host) to the warm-up's decode timings; "
             "a stream's vocoder %.2f ms a code",
             ", ".join(f"{ms * 1e3:.1f} ms at batch {b}" for b, ms in overhead.items()), per_code * 1e3)
    return {(b, k): t + max(interpolate(overhead, b), b * per_code) for (b, k), t in table.items()}


@torch.inference_mode()
def vocoder_s_per_code(runner) -> float:
    """Seconds of vocoder work per code of a streamed segment of
    ``SEGMENT_CODES``: the median of three renders of a largest window (random
    hidden states) per step it ran over, times the steps such a segment's
    windows run over per code (``segment_window_steps``: its early chunks are
    small, so it re-renders more left context than the steady chunks alone);
    0 without a vocoder."""
    vocoder = runner.vocoder
    if vocoder is None:
        return 0.0
    steps = vocoder.left_context_steps + vocoder.max_chunk_steps + vocoder.lookahead_steps
    hidden = torch.randn(steps, runner.hidden.shape[-1], generator=torch.Generator().manual_seed(0))
    counters = vocoder.calls, vocoder.steps_rendered
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        vocoder.render(hidden)
        seconds.append(time.perf_counter() - start)
    vocoder.calls, vocoder.steps_rendered = counters  # timing, not serving
    return statistics.median(seconds) / steps * vocoder.segment_window_steps(SEGMENT_CODES) / SEGMENT_CODES


def interpolate(points: Mapping[int, float], batch: int) -> float:
    """Linear in the batch size between the measured ones, flat beyond."""
    xs = sorted(points)
    if batch <= xs[0] or len(xs) == 1:
        return points[xs[0]]
    if batch >= xs[-1]:
        return points[xs[-1]]
    i = bisect.bisect_left(xs, batch)
    lo, hi = xs[i - 1], xs[i]
    return points[lo] + (points[hi] - points[lo]) * (batch - lo) / (hi - lo)


def _at_least(sizes: Sequence[int], n: int) -> int:
    i = bisect.bisect_left(sorted(sizes), n)
    return sorted(sizes)[i] if i < len(sizes) else n


def _overhead(runner, batch: int, table: Table) -> float:
    codes = WARM + MEASURED + 4  # none ends inside the window
    params = [SamplingParams(seed=j + 1, min_new_tokens=codes, max_new_tokens=codes) for j in range(batch)]
    try:
        prepared = [runner.prepare(SegmentRequest(TEXT, streaming=True, params=p)) for p in params]
    except RequestError as exc:  # a cache too short for the text
        raise StepCostError(str(exc)) from exc
    prompt = max(p.prompt_len for p in prepared)
    if prompt + codes + 1 > max(runner.kv_buckets) or any(p.empty for p in prepared):
        raise StepCostError(f"{prompt + codes + 1} positions do not fit the largest bucket")
    ids, slots = tuple(range(1, batch + 1)), tuple(range(batch))
    plan = StepPlan(Lane.BACKGROUND, prefill=ids, slots=slots, work=tuple(p.work for p in prepared),
                    prefill_batch=_at_least(runner.batch_sizes, batch),
                    prompt_bucket=_at_least(runner.prompt_buckets, prompt))
    seconds = []
    try:
        for i in range(WARM + MEASURED + 1):
            out = runner.execute(plan)
            if out.oom or out.failed or out.finished:
                raise StepCostError(f"a measuring step at batch {batch} failed: "
                                    f"{out.failed or ('out of memory' if out.oom else 'jobs ended early')}")
            if i > WARM:
                seconds.append(out.seconds)
            longest = prompt + max(out.tokens.values()) + 1
            plan = StepPlan(Lane.BACKGROUND, decode=ids, slots=slots,
                            batch_size=_at_least(runner.batch_sizes, batch),
                            kv_bucket=_at_least(runner.kv_buckets, longest))
    finally:
        runner.execute(StepPlan(Lane.BACKGROUND, release=ids))
    decode_only = table.get((plan.batch_size, plan.kv_bucket), min(table.values()))
    return max(0.0, statistics.fmean(seconds) - decode_only)
