"""GPU check: fidelity, CUDA-graph speed, first audio and throughput on a GPU.

``python -m tools.gpu_check --out FILE.json`` (about two minutes on
an H200 with full-size random weights; ``--budget`` seconds, default 240, after
which the remaining sections are skipped) measures:

1. ``fidelity``: fp32 vs mixed precision (bf16/fp16) greedy decoding of the
   same prompt, both eager: the first step where codes diverge, and the
   distribution of the hidden-state error over the steps before it;
2. ``graphs``: decode step time, CUDA graphs vs eager, at batch 1, 8 and 32,
   and the largest difference between a graph's and eager's hidden states;
3. ``serving``: building a serving runner and its ``warmup`` (every graph
   captured), with graph count and memory;
4. ``first_audio``: time to first audio for one streaming job on an idle GPU
   (a cold run, the vocoder's first call included, then a warm one);
5. ``throughput``: background throughput as a realtime factor (audio seconds
   produced per wall second, vocoder included) at batch 32 and 64.

Each section runs in its own ``try``: a failure is recorded in that section
(``error``, ``traceback``) and the next section still runs. The JSON report
is rewritten after every section, so a run killed from outside still leaves
everything measured so far; the exit status is 0 only when no section failed
or was skipped.

``--device cpu --tiny`` runs the same code on tiny weights on the CPU (what
the test suite does), with fewer steps and smaller batches.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import sys
import time
import traceback

import numpy as np
import torch

import realtime.runtime.compat  # noqa: F401
from realtime.runtime.api import SAMPLE_RATE, RuntimeOptions, SamplingParams, SegmentRequest
from realtime.runtime.build import build_runner
from realtime.runtime.shapes import FULL, TINY
from realtime.runtime.weights import random_assets
from scheduler import Lane
from tools.driver import Driver

log = logging.getLogger(__name__)
TEXT = "The quick brown fox jumps over the lazy dog, then runs into the forest."
SECTIONS = ("fidelity", "graphs", "serving", "first_audio", "throughput")
MAX_STEPS_TO_AUDIO = 200  # a stream that has not spoken by then is a failure


class CheckError(RuntimeError):
    """A section saw the runtime misbehave (a failed job, no audio)."""


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _free(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _runner(assets, device, precision, graphs, slots, batches, buckets):
    opts = RuntimeOptions(weights=assets.kind.value, device=device, precision=precision,
                          cuda_graphs=graphs, max_slots=slots, batch_sizes=batches,
                          kv_buckets=buckets)
    return build_runner(opts, assets=assets)


def _check_step(out, job_ids) -> None:
    bad = {j: out.failed[j] for j in job_ids if j in out.failed}
    if out.oom or bad:
        raise CheckError(f"step failed: oom={out.oom} failed={bad}")


# --- 1. fidelity ------------------------------------------------------------------------

def _greedy_run(runner, steps: int):
    params = SamplingParams(temperature=1e-5, min_new_tokens=steps, max_new_tokens=steps)
    driver = Driver(runner, Lane.INTERACTIVE)
    driver.add(1, SegmentRequest(TEXT, params=params))
    _check_step(driver.step(check=False), (1,))
    slot = runner.jobs[1].slot
    for _ in range(steps - 1):
        _check_step(driver.step(check=False), (1,))
    if 1 not in runner.finished_codes:
        raise CheckError(f"greedy job did not finish after {steps} steps")
    hidden = runner.hidden[slot, :steps].float().cpu().clone()
    return runner.finished_codes.pop(1), hidden


def fidelity(assets, device: str, mixed: str, steps: int) -> dict:
    ref = _runner(assets, device, "fp32", False, 2, (1,), (512,))
    codes32, hid32 = _greedy_run(ref, steps)
    del ref
    _free(device)
    low = _runner(assets, device, mixed, False, 2, (1,), (512,))
    codes_lo, hid_lo = _greedy_run(low, steps)
    del low
    _free(device)
    same = (codes32 == codes_lo).all(dim=1)
    first_diff = int((~same).nonzero()[0, 0]) if (~same).any() else None
    upto = first_diff if first_diff is not None else steps
    out = {"precision": mixed, "steps": steps, "first_divergent_step": first_diff,
           "steps_compared": upto}
    if upto:
        err = (hid32[:upto] - hid_lo[:upto]).abs()
        rel = err.norm(dim=1) / hid32[:upto].norm(dim=1).clamp(min=1e-12)
        for q in (0.5, 0.9, 0.99):
            out[f"hidden_abs_err_p{round(q * 100)}"] = float(torch.quantile(err.flatten(), q))
        out.update(hidden_abs_err_max=float(err.max()),
                   hidden_rel_err_p50=float(torch.quantile(rel, 0.5)),
                   hidden_rel_err_max=float(rel.max()),
                   # Per step, so a growing error shows as a trend.
                   hidden_rel_err_by_step=[round(float(r), 6) for r in rel])
    return out


# --- 2. graph vs eager ------------------------------------------------------------------

def _decode_inputs(runner, batch: int, kv_len: int):
    m = runner.model
    dev = m.device
    gen = torch.Generator().manual_seed(batch)
    x = (torch.randn(batch, m.shape.hidden, generator=gen) * 0.02).to(dev, m.dtype)
    slots = torch.arange(batch, device=dev, dtype=torch.int64) % runner.max_slots
    pos = torch.full((batch,), kv_len - 1, device=dev, dtype=torch.int64)
    return x, slots, pos


def _step_time(run, device: str, repeats: int) -> float:
    with torch.no_grad():
        for _ in range(3):
            run()
        _sync(device)
        start = time.perf_counter()
        for _ in range(repeats):
            run()
        _sync(device)
    return (time.perf_counter() - start) / repeats


def graph_speed(assets, device: str, precision: str, batches, kv_len: int, repeats: int) -> dict:
    use_graphs = device == "cuda"
    r = _runner(assets, device, precision, use_graphs, max(batches), tuple(batches), (kv_len,))
    m, c = r.model, r.cache
    out = {"kv_len": kv_len, "dtype": str(r.dtype).removeprefix("torch.")}
    for b in batches:
        x, slots, pos = _decode_inputs(r, b, kv_len)
        eager = _step_time(lambda x=x, slots=slots, pos=pos: m.decode(x, slots, pos, c, kv_len),
                           device, repeats)
        row = {"eager_ms": eager * 1e3}
        out[f"batch_{b}"] = row
        if not use_graphs:
            continue
        try:
            r.graphs.capture_decode(b, kv_len)
            graph = _step_time(lambda x=x, slots=slots, pos=pos: r.graphs.decode(x, slots, pos, kv_len),
                               device, repeats)
            with torch.no_grad():
                want = m.decode(x, slots, pos, c, kv_len).clone()
                got = r.graphs.decode(x, slots, pos, kv_len).clone()
            row.update(graph_ms=graph * 1e3, speedup=eager / graph,
                       max_abs_diff_vs_eager=float((want - got).abs().max()))
        except Exception as exc:  # recorded; eager numbers stay
            log.exception("graph capture/replay failed at batch %d", b)
            row["graph_error"] = f"{type(exc).__name__}: {exc}"
    r = m = c = None  # free the runner's device memory for the next section
    _free(device)
    return out


# --- 3-5. a serving runner --------------------------------------------------------------

def serving(assets, device: str, batches, kv_len: int) -> tuple[object, dict]:
    start = time.perf_counter()
    runner = _runner(assets, device, "auto", device == "cuda", max(batches),
                     (1,) + tuple(batches), (kv_len,))
    timings = runner.warmup()
    info = {"warmup_s": time.perf_counter() - start, "dtype": str(runner.dtype).removeprefix("torch."),
            "decode_step_ms": {f"{b}x{k}": t * 1e3 for (b, k), t in sorted(timings.items())},
            "kv_cache_mib": runner.cache.nbytes / 2**20}
    if runner.graphs is not None:
        info.update(decode_graphs=len(runner.graphs.decode_graphs),
                    prefill_graphs=len(runner.graphs.prefill_graphs),
                    graph_mib=runner.graphs.nbytes / 2**20,
                    capture_errors=list(runner.graphs.errors))
    return runner, info


def _time_to_audio(runner, job_id: int) -> dict:
    driver = Driver(runner, Lane.INTERACTIVE)
    driver.add(job_id, SegmentRequest(TEXT, streaming=True, params=SamplingParams(
        seed=1, min_new_tokens=MAX_STEPS_TO_AUDIO, max_new_tokens=MAX_STEPS_TO_AUDIO)))
    _sync(runner.device)
    start = time.perf_counter()
    out = driver.step(check=False)
    steps = 1
    while True:
        _check_step(out, (job_id,))
        if len(out.audio.get(job_id, ())):
            break
        if steps >= MAX_STEPS_TO_AUDIO or job_id in out.finished:
            raise CheckError(f"no audio after {steps} steps")
        out = driver.step(check=False)
        steps += 1
    elapsed = time.perf_counter() - start
    driver.step(release=(job_id,))
    return {"first_audio_s": elapsed, "steps_before_audio": steps,
            "first_chunk_samples": len(out.audio[job_id])}


def first_audio(runner) -> dict:
    """A cold run (the vocoder's first call on this device), then the measure."""
    cold = _time_to_audio(runner, 6)
    warm = _time_to_audio(runner, 7)
    return dict(warm, cold_first_audio_s=cold["first_audio_s"])


def throughput(runner, batch: int, steps: int) -> dict:
    ids = tuple(range(1000, 1000 + batch))
    params = SamplingParams(seed=3, min_new_tokens=steps, max_new_tokens=steps)
    driver = Driver(runner)
    for j in ids:
        driver.add(j, SegmentRequest(TEXT, params=params))
    _sync(runner.device)
    start = time.perf_counter()
    out = driver.step(check=False)
    _check_step(out, ids)
    samples = sum(len(a) for a in out.audio.values())
    done = set(out.finished)
    for _ in range(steps - 1):
        live = tuple(driver.live)
        if not live:
            break
        out = driver.step(check=False)
        _check_step(out, live)
        samples += sum(len(a) for a in out.audio.values())
        done.update(out.finished)
    _sync(runner.device)
    elapsed = time.perf_counter() - start
    if len(done) != batch:
        raise CheckError(f"{batch - len(done)} of {batch} jobs unfinished after {steps} steps")
    audio_s = samples / SAMPLE_RATE
    return {"batch": batch, "steps": steps, "wall_s": elapsed, "audio_s": audio_s,
            "realtime_factor": audio_s / elapsed}


# --- the run ----------------------------------------------------------------------------

def _environment(device: str) -> dict:
    env = {"device": "cpu", "torch": torch.__version__, "python": sys.version.split()[0]}
    if device == "cuda":
        env.update(device=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                   bf16_supported=torch.cuda.is_bf16_supported(),
                   gpu_memory_gib=torch.cuda.get_device_properties(0).total_memory / 2**30,
                   tf32_matmul=torch.backends.cuda.matmul.allow_tf32)
    return env


def run(device: str, tiny: bool, budget_s: float = 240.0, out_path: str | None = None) -> dict:
    """Run every section; never raises for a section's failure (see module doc)."""
    t0 = time.perf_counter()
    small = tiny and device == "cpu"
    report: dict = {"complete": False, **_environment(device)}

    def save():
        report["seconds"] = time.perf_counter() - t0
        if out_path:
            _write(out_path, report)

    def section(name, fn):
        left = budget_s - (time.perf_counter() - t0)
        if left <= 0:
            report[name] = {"skipped": f"time budget of {budget_s:.0f} s spent"}
            log.warning("gpu_check: %s skipped (budget spent)", name)
            save()
            return None
        log.info("gpu_check: %s (%.0f s of budget left)", name, left)
        start = time.perf_counter()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            value = fn()
        except Exception as exc:  # recorded; the next section still runs
            log.exception("gpu_check: %s failed", name)
            report[name] = {"error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc(limit=8)}
            try:
                _free(device)
            except Exception:  # a broken context: the next sections will say so
                log.exception("gpu_check: device unusable after %s", name)
            save()
            return None
        # A section returns its report entry, or (object for later sections, entry).
        entry = value[1] if isinstance(value, tuple) else value
        if isinstance(entry, dict):
            entry["section_s"] = time.perf_counter() - start
            if device == "cuda":
                entry["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
        report[name] = entry
        save()
        return value

    def build_assets():
        assets = random_assets(TINY if tiny else FULL, seed=0)
        return assets, {"kind": assets.kind.value}

    built = section("assets", build_assets)
    assets = built[0] if built else None
    if assets is None:
        for name in SECTIONS:
            report[name] = {"skipped": "no assets"}
        save()
        return report
    if device == "cuda":
        mixed = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    else:
        mixed = "bf16"
    section("fidelity", lambda: fidelity(assets, device, mixed, 12 if small else 200))
    section("graphs", lambda: graph_speed(assets, device, "auto", (1, 2) if small else (1, 8, 32),
                                          64 if small else 1024, 3 if small else 50))
    batches = (2, 4) if small else (32, 64)
    served = section("serving", lambda: serving(assets, device, batches, 256 if small else 512))
    runner = served[0] if served else None
    if runner is None:
        report["first_audio"] = report["throughput"] = {"skipped": "no serving runner"}
    else:
        section("first_audio", lambda: first_audio(runner))
        steps = 8 if small else 200
        section("throughput", lambda: {f"batch_{b}": _or_error(throughput, runner, b, steps)
                                       for b in batches})
    report["complete"] = all(isinstance(report.get(n), dict) and not _failed(report[n])
                             for n in SECTIONS)
    save()
    return report


def _or_error(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # recorded per batch
        log.exception("gpu_check: %s%s failed", fn.__name__, args[1:])
        return {"error": f"{type(exc).__name__}: {exc}"}


def _failed(entry: dict) -> bool:
    return "error" in entry or "skipped" in entry or any(
        isinstance(v, dict) and ("error" in v or "graph_error" in v) for v in entry.values())


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    return str(o)


def _write(path: str, report: dict) -> None:
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1, default=_json_default)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.gpu_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON report file")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny weights (smoke run)")
    parser.add_argument("--budget", type=float, default=240.0,
                        help="seconds after which remaining sections are skipped (default 240)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.device == "cuda" and not torch.cuda.is_available():
        _write(args.out, {"complete": False, "error": "no CUDA device", "torch": torch.__version__})
        print("no CUDA device: use --device cpu --tiny for a smoke run", file=sys.stderr)
        return 2
    report = run(args.device, args.tiny, args.budget, args.out)
    print(json.dumps(report, default=_json_default))
    return 0 if report["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
