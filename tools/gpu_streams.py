"""The GPU check's stream sweep: the most concurrent streams that stay real time.

``realtime_streams(runner, counts, kv_lens, ...)`` runs, per KV length and
per stream count N in ``counts`` (ascending), N distinct streaming jobs in
one decode batch whose plans cover ``kv_len`` positions (the plan's
``kv_bucket``: with graphs attention reads the whole bucket whatever the
rows' lengths, so a step at 2,048 positions costs what it costs there), with
the streaming vocoder included: ``warm`` steps, then ``measured`` steps each
timed alone. N is real time when the step's p99 stays within ``limit_ms``
and the audio delivered over the window is at least ``AUDIO_KEPT`` of what
N real-time streams need (512 samples per code each): the vocoder keeps up.
The sweep stops at the first count that is not. After each count every job
is run to its end (bounded) and the runner is reset and must hold nothing.

Thread: the caller's (the model thread rules).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from realtime.runtime.api import SAMPLES_PER_STEP
from scheduler import StepPlan
from tools.gpu_sections import CheckError, PlanDriver, add_jobs, finish_all, left_in, step, sync

AUDIO_KEPT = 0.9  # of real time's audio over the measured window


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
    for _ in range(warm):
        step(driver)
    before = sum(len(a) for j in ids for a in driver.audio[j])
    times = []
    for _ in range(measured):
        sync(runner.device)
        start = time.perf_counter()
        step(driver)
        sync(runner.device)
        times.append(time.perf_counter() - start)
    delivered = sum(len(a) for j in ids for a in driver.audio[j]) - before
    plan = driver.last_plan
    ms = np.array(times) * 1e3
    kept = delivered / (n * measured * SAMPLES_PER_STEP)
    row = {"streams": n, "plan_shape": [plan.batch_size, plan.kv_bucket],
           "step_ms_p50": float(np.percentile(ms, 50)), "step_ms_p99": float(np.percentile(ms, 99)),
           "step_ms_max": float(ms.max()), "audio_kept": kept}
    row["realtime"] = bool(row["step_ms_p99"] <= limit_ms and kept >= AUDIO_KEPT)
    row["drain_steps"] = finish_all(driver, 4 * (warm + measured) + 50)
    return row


def realtime_streams(runner, counts, kv_lens, warm: int, measured: int, limit_ms: float) -> dict:
    """The sweep (module docstring): per KV length the largest real-time count."""
    out: dict = {"step_limit_ms": limit_ms, "audio_kept_min": AUDIO_KEPT, "measured_steps": measured}
    for kv_len in kv_lens:
        rows: dict = {}
        best = 0
        for n in counts:
            if n > runner.max_slots or n > max(runner.batch_sizes):
                rows[f"streams_{n}"] = {"skipped": "more than the runner's slots or largest batch"}
                break
            try:
                rows[f"streams_{n}"] = row = _point(runner, n, kv_len, warm, measured, limit_ms)
                left = left_in(runner)
            finally:
                runner.reset()
            if left:
                raise CheckError(f"{left} jobs left in the runner after {n} streams")
            if not row["realtime"]:
                break
            best = n
        out[f"kv_{kv_len}"] = {"max_realtime_streams": best, **rows}
    return out
