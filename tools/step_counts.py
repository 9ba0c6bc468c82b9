"""What a runner step costs the device, measured without knowing how the
runner does it (the GPU check's ``hot_path`` and ``vocoder`` sections).

- Host syncs per step: on CUDA, ``torch.cuda.set_sync_debug_mode("warn")``
  makes every synchronizing CUDA operation (a blocking copy either way,
  ``.item()``, ``nonzero``...) warn; the warnings are counted, by site. On the
  CPU, ``bench.device_counts.DeviceCounter``'s blocking transfers (the runner
  is built for ``cpu:0``, which it takes for the device).
- Launches per step: on CUDA, the CUDA runtime calls that ``torch.profiler``
  records: kernel launches, graph launches (a replay is one), memsets, and
  separately copies and the kernels the GPU ran (those of a graph included).
  On the CPU, ``DeviceCounter``'s launches.
- KV bytes per step: from the model's shapes, what attention must read for
  the step's rows and length (K and V of every layer), for the plan's padded
  shape (the graph path) and for the real rows up to the longest length (the
  eager path), beside the decoder layers' weight bytes. This is the floor:
  copies an implementation makes on top (a gather of the batch's rows) are
  not in it.

Thread: the caller's (the runner's model thread).
"""

from __future__ import annotations

import collections
import os
import time
import warnings
from collections.abc import Callable

import numpy as np
import torch

from bench.device_counts import DeviceCounter
from realtime.engine.api import SAMPLE_RATE
from tools.gpu_sections import CheckError, Driver, PlanDriver, add_jobs, step, sync

KERNEL_LAUNCHES = frozenset({"cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel",
                             "cuLaunchKernelEx", "cudaLaunchCooperativeKernel"})
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})
MEMSETS = frozenset({"cudaMemsetAsync", "cudaMemset", "cuMemsetD8Async", "cuMemsetD32Async"})
COPIES = frozenset({"cudaMemcpyAsync", "cudaMemcpy", "cudaMemcpy2DAsync", "cuMemcpyAsync",
                    "cuMemcpyHtoDAsync_v2", "cuMemcpyDtoHAsync_v2"})
SITES_SHOWN = 8


def count_steps(device: str, run_step: Callable[[], object], steps: int) -> dict:
    """Run ``run_step`` and count syncs and launches per step (see the module
    doc). On CUDA it runs ``2 * steps`` steps (syncs, then the profiler)."""
    return _cuda_counts(run_step, steps) if device == "cuda" else _cpu_counts(run_step, steps)


def _cuda_counts(run_step, steps: int) -> dict:
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                run_step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [w for w in caught if "synchroniz" in str(w.message)]
    sites = collections.Counter(f"{os.path.basename(w.filename)}:{w.lineno}" for w in syncs)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            run_step()
        torch.cuda.synchronize()
    events = prof.events()
    names = collections.Counter(e.name for e in events)

    def per_step(kinds) -> float:
        return sum(names[n] for n in kinds) / steps

    gpu_kernels = sum(1 for e in events if getattr(e, "device_type", None) == DeviceType.CUDA)
    return {"method": "cuda: set_sync_debug_mode('warn') warnings; torch.profiler runtime calls",
            "steps": steps, "host_syncs_per_step": len(syncs) / steps,
            "launches_per_step": per_step(KERNEL_LAUNCHES | GRAPH_LAUNCHES | MEMSETS),
            "graph_launches_per_step": per_step(GRAPH_LAUNCHES),
            "copies_per_step": per_step(COPIES), "gpu_kernels_per_step": gpu_kernels / steps,
            "sync_sites": dict(sites.most_common(SITES_SHOWN))}


def _cpu_counts(run_step, steps: int) -> dict:
    with DeviceCounter() as counter:
        for _ in range(steps):
            run_step()
    c = counter.counts
    return {"method": "cpu: bench.device_counts stand-in (runner on cpu:0)", "steps": steps,
            "host_syncs_per_step": c.blocking / steps, "launches_per_step": c.launches / steps,
            "h2d_async_per_step": c.h2d_async / steps,
            "sync_sites": dict(c.sites.most_common(SITES_SHOWN))}


def kv_bytes(shape, itemsize: int, rows: int, kv_len: int) -> dict:
    """What attention must read (and the step writes) in the KV cache for
    ``rows`` rows attending over ``kv_len`` positions, from the shapes."""
    per_position = 2 * shape.layers * shape.kv_heads * shape.head_dim * itemsize  # K and V
    return {"read_mib": rows * kv_len * per_position / 2**20,
            "written_kib": rows * per_position / 2**10}


def layer_weight_bytes(shape, itemsize: int) -> int:
    """The decoder layers' matrices (attention and MLP), read once per step."""
    h, kv = shape.hidden, shape.kv_heads * shape.head_dim
    return shape.layers * (2 * h * h + 2 * h * kv + 3 * h * shape.intermediate) * itemsize


def _release_all(driver: Driver) -> None:
    if driver.live:
        driver.step(release=tuple(driver.live), check=False)


def hot_path(runner, batch: int, warm: int, measured: int) -> dict:
    """Syncs, launches and KV bytes per steady decode step of ``batch``
    distinct one-shot jobs (nobody joins, leaves or speaks in the window)."""
    driver = PlanDriver(runner)
    add_jobs(driver, batch, warm + 2 * measured + 2, first=2000)
    for _ in range(warm):
        step(driver)
    counts = count_steps(runner.device, lambda: step(driver), measured)
    plan = driver.last_plan
    longest = max(driver.prompt_len[j] + driver.tokens[j] for j in driver.live)
    itemsize = torch.empty(0, dtype=runner.dtype).element_size()
    weights = layer_weight_bytes(runner.shape, itemsize)
    padded = kv_bytes(runner.shape, itemsize, plan.batch_size, plan.kv_bucket)
    counts.update(batch=batch, plan_shape=[plan.batch_size, plan.kv_bucket], longest=longest,
                  kv_plan_shape=padded, kv_real_rows=kv_bytes(runner.shape, itemsize, batch, longest),
                  layer_weights_mib=weights / 2**20,
                  kv_over_weights=padded["read_mib"] * 2**20 / weights)
    _release_all(driver)
    return counts


def _deferred(runner) -> int:
    """1 when the runner reads EOS flags one step later (realtime/engine/eos_read.py)."""
    eos = getattr(runner, "eos", None)
    return int(bool(eos is not None and eos.deferred))


def streaming_vocoder(runner, streams: int, warm: int, measured: int) -> dict:
    """The streaming vocoder's cost per decode step with ``streams``
    concurrent streams in steady state: the same distinct jobs run once
    one-shot (no audio before they end, after the window) and once
    streaming; the difference of the mean step times is the vocoder's share.
    ``measured`` should be a multiple of the runner's push interval."""
    rows = {}
    vocoder = runner.vocoder
    for streaming in (False, True):
        driver = Driver(runner)
        add_jobs(driver, streams, warm + measured + 2, streaming=streaming, first=3000)
        for _ in range(warm + _deferred(runner)):  # a deferred EOS read: codes count a step later
            step(driver)
        times, calls, samples = [], [], 0
        for _ in range(measured):
            before = getattr(vocoder, "calls", 0)
            sync(runner.device)
            start = time.perf_counter()
            out = step(driver)
            sync(runner.device)
            times.append(time.perf_counter() - start)
            calls.append(getattr(vocoder, "calls", 0) - before)
            samples += sum(len(a) for a in out.audio.values())
        rows[streaming] = (np.array(times) * 1e3, calls, samples)
        _release_all(driver)
    (plain, _, _), (ms, calls, samples) = rows[False], rows[True]
    out = {"streams": streams, "steps": measured, "oneshot_step_ms": float(plain.mean()),
           "streaming_step_ms": float(ms.mean()), "streaming_step_ms_max": float(ms.max()),
           "vocoder_ms_per_step": float(ms.mean() - plain.mean()),
           "audio_s_per_step": samples / SAMPLE_RATE / measured}
    if hasattr(vocoder, "calls"):
        out.update(vocoder_calls_per_step=sum(calls) / measured, vocoder_calls_max=max(calls))
    if not samples:
        raise CheckError(f"{streams} streams produced no audio in {measured} steps")
    return out
