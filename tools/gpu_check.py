"""GPU check: the mission's two figures first, then the serving runner,
attention, the vocoder's precision, fidelity and graphs, on a GPU.

``python -m tools.gpu_check --out FILE.json`` (``--budget`` seconds, default
420, after which the remaining sections are skipped; ``--skip`` names
sections not to run, e.g. on a second run after a fix) runs, in this order:

1. ``server``: the real server (``python -m realtime serve``, full-size
   random weights) with the background lane saturated: interactive first
   audio p50/p99 on the client's clock with N = 1, 16, 64 interactive
   streams; the server's cold start (process start to ``/readyz``), its
   CUDA graphs (``graphs_captured``, ``eager_fallbacks``) and the GPU's
   busy fraction (``tools/gpu_server.py``; the server's whole log beside
   the report, ``server.log``);
2. ``streams``: the largest number of concurrent streams that stays real
   time (p99 step time <= 16 ms with the vocoder, and the audio keeps up),
   at 512 and 1,024 positions, on a runner sized to the free memory, swept
   until a count fails or memory ends (``tools/gpu_streams.py``);
3. ``sdpa_kernels``: the GPU kernels the model's attention launches (a
   profiler probe: after the two figures, since a probe that hangs would
   otherwise cost them);
4. ``serving``: the serving runner (up to 512 slots, 1,024 and 2,048
   positions) built and warmed: cold start and graph capture time, graph
   count and memory; then on it ``first_audio``, ``throughput`` (every job
   run to its end), ``vocoder`` (streaming vs one-shot step cost),
   ``hot_path`` (host syncs, launches, KV bytes per step), ``overlap``
   (step p50/p99 with the vocoder on its own stream, audio one step later,
   vs at once; the audio must agree: ``tools/gpu_audio.py``), each of which
   resets the runner and must leave it empty;
5. ``attention``: the model's decode attention (SDPA over the bucket) vs the
   live-length kernels (``realtime.engine.cuda.live_attention``), timed and
   compared on one layer's cache (``tools/gpu_attention.py``);
6. ``vocoder_precision`` (the vocoder's linears in TF32 and bf16: SNR
   against fp32 and packed-call time, ``tools/gpu_audio.py``), ``fidelity``
   (fp32 vs bf16 greedy codes) and ``graphs`` (graphs vs eager).

Each section runs in its own ``try``: a failure is recorded in that section
(``error``, ``traceback``) and the next section still runs, except after a
CUDA error that breaks the context (``torch.AcceleratorError``, a device
assert): the run then stops, the remaining sections say why, and the report
keeps what was measured. A graph capture that failed fails its section and
every later one that ran on the eagerly falling-back runner (``graph_error``).
The JSON report is written before the first section, after every section and,
in ``server`` and ``streams``, after every round and stream count
(``running`` names the section under way, ``partial`` marks an entry still
being measured), so a run killed from outside still leaves everything
measured so far; the exit status is 0 only when no section failed or was
skipped (``--skip`` ones aside). The report's top level names the torch,
CUDA and cuDNN versions, the device, and the versions and places of the
packages the run imported (``packages``: the carried wheels' or the
machine's).
``tools/gpu_check.sh`` wraps this with the install steps and a trap that
completes the JSON whatever happens.

``--device cpu --tiny`` runs the same code on tiny weights on the CPU (what
the test suite and ``tools/gpu_rehearsal.sh`` do), with fewer steps, smaller
batches and counts; there the counts come from ``bench/device_counts.py``'s
CPU stand-in.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from realtime.engine.model.shapes import FULL, TINY
from realtime.engine.model.weights import random_assets
from tools import gpu_audio, gpu_streams, step_counts
from tools import gpu_sections as sections
from tools.gpu_attention import attention_section
from tools.gpu_env import attention_kernels, environment, packages
from tools.gpu_server import ServerPlan, server_args, server_section

log = logging.getLogger(__name__)
SECTIONS = ("server", "streams", "sdpa_kernels", "serving", "first_audio", "throughput", "vocoder",
            "hot_path", "overlap", "attention", "vocoder_precision", "fidelity", "graphs")
# Sections that run on the serving runner: a capture failure there fails them too.
ON_SERVING_RUNNER = ("first_audio", "throughput", "vocoder", "hot_path", "overlap")
# Sections that need the model's assets (built once, after the server).
NEED_ASSETS = SECTIONS[1:2] + SECTIONS[3:]


@dataclass(frozen=True)
class Sizes:
    """How much each section does: full on a GPU, small for the CPU smoke run."""

    server: ServerPlan
    fidelity_steps: int = 200
    graph_batches: tuple[int, ...] = (1, 8, 32)
    graph_buckets: tuple[int, ...] = (128, 256, 512)
    serving_batches: tuple[int, ...] = (1, 8, 16, 32, 64, 128, 192, 256, 384, 512)
    serving_kv: tuple[int, ...] = (1024, 2048)
    # Steps of 32 where real time ended on the H200 (128 streams at 512
    # positions, 2026-12-04), then on past what its memory holds (about
    # 3,400 slots at 512 positions): a faster runtime still finds its limit.
    stream_counts: tuple[int, ...] = (16, 32, 64, 96, 128, 160, 192, 224, 256, 384, 512, 1024, 2048,
                                      3072, 4096)
    stream_kv: tuple[int, ...] = (512, 1024)
    stream_limit_ms: float = 16.0
    stream_measured: int = 32
    stream_deadline_s: float = 150.0
    batches: tuple[int, ...] = (32, 64, 128)  # vocoder streams and throughput batches
    hot_path_batches: tuple[int, ...] = (32, 64)
    warm_steps: int = 8
    stream_warm_steps: int = 16  # a stream's first audio needs its right context (12 steps)
    measured_steps: int = 16  # a multiple of the runner's push interval (4)
    throughput_steps: int = 200
    attention_shapes: tuple[tuple[int, int], ...] = ((1, 2048), (8, 2048), (32, 2048), (64, 2048),
                                                     (128, 2048), (256, 2048), (64, 1024), (256, 1024))
    attention_slots: int = 512
    attention_repeats: int = 20
    overlap_streams: tuple[int, ...] = (64, 256)
    overlap_kv: int = 1024
    overlap_measured: int = 32
    overlap_rounds: int = 2
    precision_repeats: int = 10


# On the GPU the server's shapes are the hardware profile's (realtime.engine.cuda.profile:
# 512 slots, batches to 256 on an H200); the background lane gets more than its rows.
GPU_SERVER = ServerPlan(server_args("cuda", tiny=False), interactive=(1, 16, 64), rounds=(8, 3, 2),
                        background=384, settle_s=3.0, round_timeout_s=10.0, start_timeout_s=150.0,
                        deadline_s=75.0)
# On the CPU: few shapes to warm up; short background sentences, three times the
# lane's 4 rows in flight so that its queue never runs dry between two of them.
CPU_SERVER = ServerPlan(server_args("cpu", tiny=True) + (
    "--max-slots", "8", "--batch-sizes", "1,2,4", "--kv-buckets", "256,512"),
    interactive=(1, 2), rounds=(2, 2), background=12, settle_s=1.0, round_timeout_s=60.0,
    start_timeout_s=120.0, deadline_s=150.0,
    background_text="A small boat drifted slowly across the quiet lake.")
GPU = Sizes(server=GPU_SERVER)
CPU_SMOKE = Sizes(server=CPU_SERVER, fidelity_steps=12, graph_batches=(2,), graph_buckets=(128,),
                  serving_batches=(1, 2, 4), serving_kv=(256,), stream_counts=(2, 4), stream_kv=(256,),
                  stream_limit_ms=10_000.0, stream_measured=8, batches=(2, 4),
                  hot_path_batches=(4,), warm_steps=4, measured_steps=4, throughput_steps=8,
                  attention_shapes=((2, 128), (4, 256)), attention_slots=8, attention_repeats=1,
                  overlap_streams=(2,), overlap_kv=256, overlap_measured=4, overlap_rounds=1,
                  precision_repeats=1)


def _device_lost(exc: BaseException) -> bool:
    """A CUDA error after which the context is unusable (not out of memory)."""
    from realtime.engine.api import DeviceFailure
    return isinstance(exc, DeviceFailure) or (
        isinstance(exc, torch.AcceleratorError) and not isinstance(exc, torch.OutOfMemoryError))


def run(device: str, tiny: bool, budget_s: float = 420.0, out_path: str | None = None,
        sizes: Sizes | None = None, skip: tuple[str, ...] = ()) -> dict:
    """Run every section; never raises for a section's failure (see module doc)."""
    t0 = time.perf_counter()
    s = sizes or (CPU_SMOKE if tiny and device == "cpu" else GPU)
    report: dict = {"complete": False, "running": None, **environment(device),
                    "sections": [n for n in SECTIONS if n not in skip], "skipped_by_request": list(skip)}
    out_dir = Path(out_path).parent if out_path else Path(".")
    lost: list[str] = []

    def save():
        report["seconds"] = time.perf_counter() - t0
        if out_path:
            _write(out_path, report)

    def keep(name):
        def partial(entry: dict) -> None:
            report[name] = dict(entry, partial=True)
            save()
        return partial

    def section(name, fn):
        if name in skip:
            return None
        left = budget_s - (time.perf_counter() - t0)
        if lost or left <= 0:
            why = f"the device was lost in {lost[0]}" if lost else f"time budget of {budget_s:.0f} s spent"
            report[name] = {"skipped": why}
            log.warning("gpu_check: %s skipped (%s)", name, why)
            save()
            return None
        log.info("gpu_check: %s (%.0f s of budget left)", name, left)
        report["running"] = name
        save()  # a run killed now still says where it was
        start = time.perf_counter()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
        try:
            value = fn()
        except Exception as exc:  # recorded; the next section still runs
            log.exception("gpu_check: %s failed", name)
            kept = report.get(name) if isinstance(report.get(name), dict) else {}
            report[name] = {**kept, "error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc(limit=8)}
            report[name].pop("partial", None)
            if _device_lost(exc):
                lost.append(name)
                report["device_lost"] = name
            else:
                try:
                    sections.free(device)
                except Exception:  # a broken context: the next sections will say so
                    log.exception("gpu_check: device unusable after %s", name)
            report["running"] = None
            save()
            return None
        # A section returns its report entry, or (object for later sections, entry).
        entry = value[1] if isinstance(value, tuple) else value
        entry["section_s"] = time.perf_counter() - start
        if device == "cuda":
            entry["peak_gpu_mib"] = torch.cuda.max_memory_allocated() / 2**20
        report[name] = entry
        report["running"] = None
        save()
        return value

    save()
    # 1-2. The mission's figures: first audio through the server, streams per GPU.
    section("server", lambda: server_section(s.server, device, out_dir, keep("server")))
    report["packages"] = packages()  # what this process and the server imported

    def build_assets():
        assets = random_assets(TINY if tiny else FULL, seed=0)
        return assets, {"kind": assets.kind.value}

    built = section("assets", build_assets) if set(NEED_ASSETS) - set(skip) else None
    if built is not None:
        section("streams", lambda: _streams(built[0], device, s, keep("streams"),
                                            budget_s - (time.perf_counter() - t0)))
    # 3. The profiler probe, once the figures are safe.
    section("sdpa_kernels", lambda: attention_kernels(device))
    if built is None:
        for name in NEED_ASSETS:
            if name not in skip:
                report[name] = report.get(name) or {"skipped": "no assets"}
        save()
        return _done(report, save)
    assets = built[0]
    # On the CPU (the rehearsal) the section runs fp32 against itself: bf16 is a GPU precision.
    mixed = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if device == "cuda" else "fp32"
    # 4. The serving runner and what runs on it.
    served = section("serving", lambda: sections.serving(assets, device, s.serving_batches, s.serving_kv))
    if served is None:
        for name in ON_SERVING_RUNNER:
            if name not in skip:
                report[name] = report.get(name) or {"skipped": "no serving runner"}
    else:
        _serve(served[0], s, section)
        errors = sections.graph_errors(served[0])
        for name in ON_SERVING_RUNNER:
            if errors and isinstance(report.get(name), dict):
                report[name]["graph_error"] = "ran eagerly: " + "; ".join(errors)
        del served
        sections.free(device)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[mixed] if device == "cuda" else torch.float32
    section("attention", lambda: attention_section(assets.shape, device, dtype, s.attention_slots,
                                                   s.attention_shapes, s.attention_repeats))
    section("vocoder_precision", lambda: gpu_audio.vocoder_precision(assets, device, s.precision_repeats))
    section("fidelity", lambda: sections.fidelity(assets, device, mixed, s.fidelity_steps))
    section("graphs", lambda: sections.graphs_vs_eager(assets, device, s.graph_batches, s.graph_buckets,
                                                       s.warm_steps, s.measured_steps))
    return _done(report, save)


def _streams(assets, device: str, s: Sizes, keep, left_s: float) -> dict:
    """The stream sweep on runners of its own, sized to the free memory."""
    def make(want: int, batches: tuple[int, ...], kv_len: int):
        dtype_bytes = 2 if device == "cuda" else 4
        slots = gpu_streams.slots_that_fit(assets.shape, kv_len, dtype_bytes, want, device)
        runner = sections.make_runner(assets, device, "auto", device == "cuda", slots,
                                      tuple(b for b in batches if b <= slots) or (1,), (kv_len,))
        runner.warmup()
        return runner

    deadline = time.monotonic() + min(s.stream_deadline_s, left_s)
    return gpu_streams.realtime_streams(make, s.stream_counts, s.stream_kv, s.stream_warm_steps,
                                        s.stream_measured, s.stream_limit_ms, deadline, keep)


def _done(report: dict, save) -> dict:
    wanted = [n for n in SECTIONS if n not in report["skipped_by_request"]]
    present = [n for n in ("assets",) + SECTIONS if n in report]
    report["complete"] = all(n in report for n in wanted) and all(
        isinstance(report[n], dict) and not _failed(report[n]) for n in present)
    save()
    return report


def _serve(runner, s: Sizes, section) -> None:
    """The sections that run on the serving runner, each starting and
    ending with it empty (``_clean``)."""
    section("first_audio", _clean(runner, lambda: sections.first_audio(runner)))
    section("throughput", _clean(runner, lambda: {
        f"batch_{b}": _or_error(sections.throughput, runner, b, s.throughput_steps) for b in s.batches}))
    section("vocoder", _clean(runner, lambda: {
        f"streams_{n}": _or_error(step_counts.streaming_vocoder, runner, n, s.stream_warm_steps,
                                  s.measured_steps) for n in s.batches}))
    section("hot_path", _clean(runner, lambda: {
        f"batch_{b}": _or_error(step_counts.hot_path, runner, b, s.warm_steps, s.measured_steps)
        for b in s.hot_path_batches}))
    section("overlap", _clean(runner, lambda: gpu_audio.overlap(
        runner, s.overlap_streams, s.overlap_kv, s.stream_warm_steps, s.overlap_measured,
        s.overlap_rounds)))


def _clean(runner, fn):
    """``fn`` on an empty runner; an entry whose section left jobs in the
    runner gets an ``error`` (the runner is reset either way)."""
    def run_clean():
        runner.reset()
        try:
            entry = fn()
            left = sections.left_in(runner)
        finally:
            runner.reset()
        if left:
            entry["error"] = f"the section left {left} jobs in the runner"
        return entry
    return run_clean


def _or_error(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # recorded per batch
        log.exception("gpu_check: %s%s failed", fn.__name__, args[1:])
        return {"error": f"{type(exc).__name__}: {exc}"}


def _failed(entry: dict) -> bool:
    return bool({"error", "skipped", "graph_error", "partial"} & set(entry)) or any(
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
    parser.add_argument("--budget", type=float, default=420.0,
                        help="seconds after which remaining sections are skipped (default 420)")
    parser.add_argument("--skip", default="", help="comma-separated sections not to run "
                        f"(of {', '.join(SECTIONS)})")
    args = parser.parse_args(argv)
    skip = tuple(n for n in args.skip.split(",") if n)
    unknown = set(skip) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.device == "cuda" and not torch.cuda.is_available():
        _write(args.out, {"complete": False, "error": "no CUDA device", "torch": torch.__version__})
        print("no CUDA device: use --device cpu --tiny for a smoke run", file=sys.stderr)
        return 2
    report = run(args.device, args.tiny, args.budget, args.out, skip=skip)
    print(json.dumps(report, default=_json_default))
    return 0 if report["complete"] else 1


if __name__ == "__main__":
    sys.exit(main())
