"""GPU check: fidelity, CUDA-graph speed, first audio and throughput on a GPU.

``python -m realtime.runtime.gpu_check --out FILE.json`` (a few minutes on an
H200, full-size random weights) measures:

1. fidelity: fp32 vs mixed precision (bf16/fp16) greedy decoding of the same
   prompt: the first step where codes diverge, and the distribution of the
   hidden-state error over the steps before it;
2. decode step time, CUDA graphs vs eager, at batch 1, 8 and 32;
3. time to first audio for one streaming job on an idle GPU;
4. background throughput as a realtime factor (audio seconds produced per
   wall second, vocoder included) at batch 32 and 64.

``--device cpu --tiny`` runs the same code on tiny weights on the CPU (what
the test suite does), with fewer steps and smaller batches.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

import numpy as np
import torch

import realtime.runtime.compat  # noqa: F401
from realtime.runtime.api import RuntimeOptions, SamplingParams, SegmentRequest
from realtime.runtime.build import build_runner
from realtime.runtime.shapes import FULL, TINY
from realtime.runtime.weights import random_assets
from scheduler.plan import Lane, StepPlan

log = logging.getLogger(__name__)
TEXT = "The quick brown fox jumps over the lazy dog, then runs into the forest."
STEPS_PER_SECOND = 46.875


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _runner(assets, device, precision, graphs, slots, batches, buckets):
    opts = RuntimeOptions(weights=assets.kind, device=device, precision=precision,
                          cuda_graphs=graphs, max_slots=slots, batch_sizes=batches,
                          kv_buckets=buckets)
    return build_runner(opts, assets=assets)


def _greedy_run(runner, steps: int):
    params = SamplingParams(temperature=1e-5, min_new_tokens=steps, max_new_tokens=steps)
    runner.record_codes = True
    runner.prepare(1, SegmentRequest(TEXT, params=params))
    runner.execute(StepPlan(Lane.INTERACTIVE, prefill=(1,)))
    slot = runner.jobs[1].slot
    for _ in range(steps - 1):
        runner.execute(StepPlan(Lane.INTERACTIVE, decode=(1,)))
    hidden = runner.hidden[slot, :steps].float().cpu().clone()
    return runner.finished_codes.pop(1), hidden


def fidelity(assets, device: str, mixed: str, steps: int) -> dict:
    ref = _runner(assets, device, "fp32", False, 2, (1,), (512,))
    codes32, hid32 = _greedy_run(ref, steps)
    del ref
    low = _runner(assets, device, mixed, False, 2, (1,), (512,))
    codes_lo, hid_lo = _greedy_run(low, steps)
    same = (codes32 == codes_lo).all(dim=1)
    first_diff = int((~same).nonzero()[0]) if (~same).any() else None
    upto = first_diff if first_diff is not None else steps
    err = (hid32[:upto] - hid_lo[:upto]).abs()
    rel = err.norm(dim=1) / hid32[:upto].norm(dim=1).clamp(min=1e-12)
    pct = (lambda t, q: float(torch.quantile(t.flatten().float(), q))) if upto else (lambda t, q: None)
    return {"precision": mixed, "steps": steps, "first_divergent_step": first_diff,
            "hidden_abs_err_p50": pct(err, 0.5), "hidden_abs_err_p99": pct(err, 0.99),
            "hidden_abs_err_max": float(err.max()) if upto else None,
            "hidden_rel_err_p50": pct(rel, 0.5), "hidden_rel_err_max": float(rel.max()) if upto else None}


def _step_time(runner, batch: int, kv_len: int, repeats: int, graphs: bool) -> float:
    m, c = runner.model, runner.cache
    dev = m.device
    x = torch.zeros(batch, m.shape.hidden, dtype=m.dtype, device=dev)
    slots = torch.arange(batch, device=dev) % runner.max_slots
    pos = torch.full((batch,), kv_len - 1, device=dev)
    run = ((lambda: runner.graphs.decode(x, slots, pos, kv_len)) if graphs
           else (lambda: m.decode(x, slots, pos, c, kv_len)))
    with torch.no_grad():
        for _ in range(3):
            run()
        _sync(runner.device)
        start = time.perf_counter()
        for _ in range(repeats):
            run()
        _sync(runner.device)
    return (time.perf_counter() - start) / repeats


def graph_speed(assets, device: str, precision: str, batches, kv_len: int, repeats: int) -> dict:
    use_graphs = device == "cuda"
    r = _runner(assets, device, precision, use_graphs, max(batches), tuple(batches), (kv_len,))
    if use_graphs:
        for b in batches:
            r.graphs.capture_decode(b, kv_len)
    out = {}
    for b in batches:
        eager = _step_time(r, b, kv_len, repeats, graphs=False)
        row = {"eager_ms": eager * 1e3}
        if use_graphs:
            graph = _step_time(r, b, kv_len, repeats, graphs=True)
            row.update(graph_ms=graph * 1e3, speedup=eager / graph)
        out[f"batch_{b}"] = row
    return out


def first_audio(runner) -> dict:
    runner.prepare(7, SegmentRequest(TEXT, streaming=True, params=SamplingParams(
        seed=1, min_new_tokens=200, max_new_tokens=200)))
    _sync(runner.device)
    start = time.perf_counter()
    out = runner.execute(StepPlan(Lane.INTERACTIVE, prefill=(7,)))
    steps = 1
    while not len(out.audio.get(7, ())):
        out = runner.execute(StepPlan(Lane.INTERACTIVE, decode=(7,)))
        steps += 1
    elapsed = time.perf_counter() - start
    runner.execute(StepPlan(Lane.INTERACTIVE, release=(7,)))
    return {"first_audio_s": elapsed, "steps_before_audio": steps}


def throughput(runner, batch: int, steps: int) -> dict:
    ids = tuple(range(100, 100 + batch))
    params = SamplingParams(seed=3, min_new_tokens=steps, max_new_tokens=steps)
    for j in ids:
        runner.prepare(j, SegmentRequest(TEXT, params=params))
    _sync(runner.device)
    start = time.perf_counter()
    runner.execute(StepPlan(Lane.BACKGROUND, prefill=ids, batch_size=batch))
    audio = 0
    for _ in range(steps - 1):
        out = runner.execute(StepPlan(Lane.BACKGROUND, decode=ids, batch_size=batch))
        audio += sum(len(a) for a in out.audio.values())
    _sync(runner.device)
    elapsed = time.perf_counter() - start
    audio_s = batch * steps / STEPS_PER_SECOND
    return {"batch": batch, "steps": steps, "wall_s": elapsed, "audio_s": audio_s,
            "realtime_factor": audio_s / elapsed, "audio_samples": audio}


def run(device: str, tiny: bool) -> dict:
    shape = TINY if tiny else FULL
    assets = random_assets(shape, seed=0)
    mixed = "bf16" if device == "cuda" and torch.cuda.is_bf16_supported() else "fp16"
    if device == "cpu":
        mixed = "bf16"
    small = tiny and device == "cpu"
    report = {"device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
              "weights": assets.kind, "torch": torch.__version__}
    t = time.perf_counter()
    report["fidelity"] = fidelity(assets, device, mixed, 12 if small else 200)
    report["graphs"] = graph_speed(assets, device, "auto", (1, 2) if small else (1, 8, 32),
                                   64 if small else 1024, 3 if small else 50)
    batches = (2, 4) if small else (32, 64)
    serving = _runner(assets, device, "auto", device == "cuda", max(batches),
                      (1,) + batches, (256,) if small else (512,))
    serving.warmup()
    report["first_audio"] = first_audio(serving)
    report["throughput"] = [throughput(serving, b, 8 if small else 200) for b in batches]
    report["seconds"] = time.perf_counter() - t
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realtime.runtime.gpu_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="JSON report file")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--tiny", action="store_true", help="tiny weights (smoke run)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device: use --device cpu --tiny for a smoke run", file=sys.stderr)
        return 2
    report = run(args.device, args.tiny)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1, default=lambda o: float(o) if isinstance(o, np.floating) else str(o))
    print(json.dumps(report, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
