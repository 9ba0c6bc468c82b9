"""GPU check: fidelity, CUDA graphs, the hot path's per-step costs, the
streaming vocoder, first audio and throughput, on a GPU.

``python -m tools.gpu_check --out FILE.json`` (a few minutes on an H200 with
full-size random weights; ``--budget`` seconds, default 240, after which the
remaining sections are skipped) measures, each section through the runner's
public contract (``tools/gpu_sections.py``, ``tools/step_counts.py``):

1. ``fidelity``: fp32 vs mixed precision (bf16/fp16) greedy decoding of the
   same prompt, both eager: the first step where codes diverge, and the
   distribution of the hidden-state error over the steps before it;
2. ``graphs``: whole decode steps with CUDA graphs vs eager at batch 1, 8 and
   32 on distinct jobs, codes and hidden states compared;
3. ``serving``: building the serving runner and its ``warmup`` (every graph
   captured), graph count, and graph memory as the graph pool holds it;
4. ``first_audio``: time to first audio for one streaming job on an idle GPU
   (a cold run, the vocoder's first call included, then a warm one);
5. ``hot_path``: host syncs (CUDA's sync debug mode), launches (the
   profiler) and KV bytes (the model's shapes) per steady decode step at
   batch 32 and 64;
6. ``vocoder``: the streaming vocoder's cost per decode step with 32, 64 and
   128 concurrent streams (streaming vs one-shot steps of the same jobs);
7. ``throughput``: background throughput of distinct texts and seeds as a
   realtime factor (audio seconds per wall second, vocoder included) at
   batch 32, 64 and 128.

Each section runs in its own ``try``: a failure is recorded in that section
(``error``, ``traceback``) and the next section still runs. A graph capture
that failed fails its section and every later one that ran on the eagerly
falling-back runner (``graph_error``): they would measure eager decoding.
The JSON report is written before the first section and rewritten after
every one (``running`` names the section under way), so a run killed from
outside still leaves everything measured so far; the exit status is 0 only
when no section failed or was skipped. ``tools/gpu_check.sh`` wraps this
with the install steps and a trap that completes the JSON whatever happens.

``--device cpu --tiny`` runs the same code on tiny weights on the CPU (what
the test suite does), with fewer steps and smaller batches; there the counts
come from ``tools/device_counts.py``'s CPU stand-in.
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

import numpy as np
import torch

from realtime.runtime.shapes import FULL, TINY
from realtime.runtime.weights import random_assets
from tools import gpu_sections as sections
from tools import step_counts

log = logging.getLogger(__name__)
SECTIONS = ("fidelity", "graphs", "serving", "first_audio", "hot_path", "vocoder", "throughput")
# Sections that run on the serving runner: a capture failure there fails them too.
ON_SERVING_RUNNER = ("first_audio", "hot_path", "vocoder", "throughput")


@dataclass(frozen=True)
class Sizes:
    """How much each section does: full on a GPU, small for the CPU smoke run."""

    fidelity_steps: int = 200
    graph_batches: tuple[int, ...] = (1, 8, 32)
    graph_buckets: tuple[int, ...] = (128, 256, 512)
    serving_batches: tuple[int, ...] = (32, 64, 128)
    serving_kv: int = 512
    hot_path_batches: tuple[int, ...] = (32, 64)
    warm_steps: int = 8
    stream_warm_steps: int = 16  # a stream's first audio needs its right context (12 steps)
    measured_steps: int = 16  # a multiple of the runner's push interval (4)
    throughput_steps: int = 200


GPU = Sizes()
CPU_SMOKE = Sizes(fidelity_steps=12, graph_batches=(2,), graph_buckets=(128,),
                  serving_batches=(2, 4), serving_kv=256, hot_path_batches=(4,), warm_steps=4,
                  measured_steps=4, throughput_steps=8)


def _environment(device: str) -> dict:
    env: dict[str, object] = {"device": "cpu", "torch": torch.__version__, "python": sys.version.split()[0]}
    if device == "cuda":
        env.update(device=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                   bf16_supported=torch.cuda.is_bf16_supported(),
                   gpu_memory_gib=torch.cuda.get_device_properties(0).total_memory / 2**30,
                   tf32_matmul=torch.backends.cuda.matmul.allow_tf32)
    return env


def run(device: str, tiny: bool, budget_s: float = 240.0, out_path: str | None = None) -> dict:
    """Run every section; never raises for a section's failure (see module doc)."""
    t0 = time.perf_counter()
    sizes = CPU_SMOKE if tiny and device == "cpu" else GPU
    report: dict = {"complete": False, "running": None, **_environment(device)}

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
        report["running"] = name
        save()  # a run killed now still says where it was
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

    def build_assets():
        assets = random_assets(TINY if tiny else FULL, seed=0)
        return assets, {"kind": assets.kind.value}

    save()
    built = section("assets", build_assets)
    if built is None:
        for name in SECTIONS:
            report[name] = {"skipped": "no assets"}
        save()
        return report
    assets = built[0]
    if device == "cuda":
        mixed = "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    else:
        mixed = "bf16"
    s = sizes
    section("fidelity", lambda: sections.fidelity(assets, device, mixed, s.fidelity_steps))
    section("graphs", lambda: sections.graphs_vs_eager(assets, device, s.graph_batches, s.graph_buckets,
                                                       s.warm_steps, s.measured_steps))
    served = section("serving", lambda: sections.serving(assets, device, s.serving_batches, s.serving_kv))
    if served is None:
        for name in ON_SERVING_RUNNER:
            report[name] = {"skipped": "no serving runner"}
    else:
        _serve(served[0], s, section)
        errors = sections.graph_errors(served[0])
        for name in ON_SERVING_RUNNER:
            if errors and isinstance(report.get(name), dict):
                report[name]["graph_error"] = "ran eagerly: " + "; ".join(errors)
    report["complete"] = all(isinstance(report.get(n), dict) and not _failed(report[n])
                             for n in SECTIONS)
    save()
    return report


def _serve(runner, s: Sizes, section) -> None:
    """The sections that run on the serving runner."""
    batches = s.serving_batches
    section("first_audio", lambda: sections.first_audio(runner))
    section("hot_path", lambda: {f"batch_{b}": _or_error(step_counts.hot_path, runner, b, s.warm_steps,
                                                         s.measured_steps)
                                 for b in s.hot_path_batches})
    section("vocoder", lambda: {f"streams_{n}": _or_error(step_counts.streaming_vocoder, runner, n,
                                                          s.stream_warm_steps, s.measured_steps)
                                for n in batches})
    section("throughput", lambda: {f"batch_{b}": _or_error(sections.throughput, runner, b,
                                                           s.throughput_steps)
                                   for b in batches})


def _or_error(fn, *args):
    try:
        return fn(*args)
    except Exception as exc:  # recorded per batch
        log.exception("gpu_check: %s%s failed", fn.__name__, args[1:])
        return {"error": f"{type(exc).__name__}: {exc}"}


def _failed(entry: dict) -> bool:
    return bool({"error", "skipped", "graph_error"} & set(entry)) or any(
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
