"""The GPU check's stream sweep: the most concurrent streams that stay real time.

``realtime_streams(make, counts, kv_lens, ...)`` runs, per KV length, on a
runner of its own (``make(slots, batches, kv_len)``: graphs per swept count,
as many slots as the device's free memory holds at that length, so that the
sweep can reach thousands of streams), per stream count N in ``counts``
(ascending), N distinct streaming jobs in one decode batch whose plans cover
``kv_len`` positions (the plan's ``kv_bucket``: with graphs attention reads
the whole bucket whatever the rows' lengths, so a step at 2,048 positions
costs what it costs there), with the streaming vocoder included: ``warm``
steps, then ``measured`` steps each timed alone, then every job run to its
end (the server's host work is not in these steps).

N is real time when the step's p99 stays within ``limit_ms`` and no stream
underruns: each stream's chunks, arriving when their step ends, are played
from its first chunk on (``clients.playback.simulate_playback``), so the
vocoder's bursts and the chunk schedule's start (chunks double, which asks
for twice real time's codes at first) count as a listener hears them. All N
streams start together, their chunks due in the same steps: the vocoder's
worst case.

The sweep stops at the first count that is not real time, at the first that
does not fit in memory (``stopped``: ``memory``), or at ``deadline``
(``stopped``: ``deadline``). After each count the runner is reset and must
hold nothing; the sweep so far is handed to ``keep`` after every count.

Thread: the caller's (the model thread rules).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import torch

from clients.playback import simulate_playback
from realtime.engine.api import SAMPLE_RATE
from scheduler import StepPlan
from tools.gpu_sections import (
    CheckError,
    PlanDriver,
    StepOutOfMemory,
    add_jobs,
    free,
    left_in,
    step,
    sync,
)


class BucketDriver(PlanDriver):
    """A driver whose decode plans cover ``kv_len`` positions (the padded
    shape a graph replays), whatever the rows' real lengths."""

    def __init__(self, runner, kv_len: int) -> None:
        super().__init__(runner)
        self.kv_len = kv_len

    def plan(self, release=()) -> StepPlan:
        plan = super().plan(release)
        if plan.decode:
            plan = dataclasses.replace(plan, kv_bucket=max(plan.kv_bucket, self.kv_len))
            self._last = plan
        return plan


def _point(runner, n: int, kv_len: int, warm: int, measured: int, limit_ms: float) -> dict:
    driver = BucketDriver(runner, kv_len)
    ids = add_jobs(driver, n, warm + measured + 1, streaming=True, first=5000)
    frames: dict[int, list[tuple[float, float]]] = {j: [] for j in ids}
    seen = dict.fromkeys(ids, 0)

    def timed_step() -> float:
        sync(runner.device)
        start = time.perf_counter()
        step(driver)
        sync(runner.device)
        end = time.perf_counter()
        for j in ids:  # each chunk reaches its listener when the step ends
            chunks = driver.audio[j]
            frames[j] += [(end, len(c) / SAMPLE_RATE) for c in chunks[seen[j]:]]
            seen[j] = len(chunks)
        return end - start

    for _ in range(warm):
        timed_step()
    ms = np.array([timed_step() for _ in range(measured)]) * 1e3
    plan = driver.last_plan
    cap, drain = 4 * (warm + measured) + 50, 0
    while driver.live or driver.pending:
        if drain >= cap:
            raise CheckError(f"{len(driver.live) + len(driver.pending)} jobs unfinished after {cap} steps")
        timed_step()
        drain += 1
    played = [simulate_playback(frames[j]) for j in ids]
    row = {"streams": n, "plan_shape": [plan.batch_size, plan.kv_bucket],
           "step_ms_p50": float(np.percentile(ms, 50)), "step_ms_p99": float(np.percentile(ms, 99)),
           "step_ms_max": float(ms.max()), "underruns": sum(p.underruns for p in played),
           "streams_underrun": sum(1 for p in played if p.underruns),
           "stall_ms_max": max(p.stall_ms for p in played), "drain_steps": drain}
    row["realtime"] = bool(row["step_ms_p99"] <= limit_ms and row["underruns"] == 0)
    return row


def slots_that_fit(shape, kv_len: int, dtype_bytes: int, want: int, device: str,
                   fraction: float = 0.8, reserve: int = 6 * 2**30) -> int:
    """KV slots for ``want`` streams at ``kv_len`` positions, at most what
    ``fraction`` of the device's free memory less ``reserve`` (weights, the
    vocoder, graph pools, activations) holds; ``want`` on the CPU."""
    if device != "cuda":
        return want
    from realtime.engine.cuda.profile import slot_bytes
    free, _ = torch.cuda.mem_get_info()
    return max(1, min(want, int(free * fraction - reserve) // slot_bytes(shape, kv_len, dtype_bytes)))


def realtime_streams(make: Callable[[int, tuple[int, ...], int], object], counts, kv_lens, warm: int,
                     measured: int, limit_ms: float, deadline: float,
                     keep: Callable[[dict], None] = lambda entry: None) -> dict:
    """The sweep (module docstring): per KV length the largest real-time count.
    ``make(slots, batch_sizes, kv_len)`` builds and warms a runner (fewer
    slots than asked where memory is short); ``deadline`` is
    ``time.monotonic()``'s."""
    out: dict = {"step_limit_ms": limit_ms, "measured_steps": measured}
    for kv_len in kv_lens:
        rows: dict = {"max_realtime_streams": 0}
        out[f"kv_{kv_len}"] = rows
        if time.monotonic() >= deadline:
            rows["stopped"] = "deadline"
            continue
        start = time.perf_counter()
        try:
            runner = make(max(counts), tuple(sorted({1, *counts})), kv_len)
        except torch.OutOfMemoryError as exc:
            rows["stopped"] = f"memory: the runner did not fit ({str(exc)[:120]})"
            keep(out)
            continue
        rows.update(slots=runner.max_slots, build_s=time.perf_counter() - start,
                    vocoder_steps_per_call=getattr(getattr(runner, "audio", None), "steps_per_call", None))
        errors = [str(e) for e in getattr(getattr(runner, "graphs", None), "errors", ())]
        if errors:
            rows["graph_error"] = "ran eagerly: " + "; ".join(errors)
        keep(out)
        try:
            for n in counts:
                if n > runner.max_slots:
                    rows["stopped"] = f"memory: {runner.max_slots} slots fit at {kv_len} positions"
                    break
                if time.monotonic() >= deadline:
                    rows["stopped"] = "deadline"
                    break
                try:
                    rows[f"streams_{n}"] = row = _point(runner, n, kv_len, warm, measured, limit_ms)
                    left = left_in(runner)
                except (torch.OutOfMemoryError, StepOutOfMemory) as exc:
                    rows["stopped"] = f"memory: out of memory at {n} streams ({str(exc)[:120]})"
                    break
                finally:
                    runner.reset()
                if left:
                    raise CheckError(f"{left} jobs left in the runner after {n} streams")
                keep(out)
                if not row["realtime"]:
                    rows["stopped"] = f"not real time at {n} streams"
                    break
                rows["max_realtime_streams"] = n
            else:
                rows["stopped"] = "every count swept"
        finally:
            # The graphs and the runner hold each other: collected only by gc,
            # and the next KV length's runner needs their memory.
            del runner
            free("cuda" if torch.cuda.is_available() else "cpu")
        keep(out)
    return out
