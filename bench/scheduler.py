"""Scheduler benchmark: our two-lane scheduler vs continuous batching and a dynamic batcher.

    python -m bench scheduler [--quick] [--out DIR] [--cpu-steps FILE.json]

Replays the same simulated arrivals (see ``bench.sim``) against our
``Scheduler``, against continuous (iteration-level) batching with one FCFS
queue (what vLLM, TGI and Orca do: jobs join and leave at step boundaries,
max batch 8, no lanes, no admission) and against a dynamic batcher (max
batch 8, max wait 50 ms and 80 ms, static batches) over a load sweep, on a
GPU-like profile and a CPU profile (defaults
from measured steps, or ``--cpu-steps`` with measured steps as
``[{"batch": 1, "bucket": 256, "seconds": 0.043}, ...]`` or
``{"1,256": 0.043, ...}``). Prints a table, writes ``scheduler_bench.json``
and ``scheduler_bench.png`` to ``--out``, and prints one JSON object as the
last line:

- ``ttfa_p99_ratio``: our interactive first-audio p99 over the better
  batcher's, at 80% load, GPU profile (lower is better);
- ``deadline_miss_ratio``: background utterances not delivered by their
  deadline, refused ones included, ours over the better batcher's, as
  (our misses + 1) / (the batcher's misses + 1), so that it stays defined
  when either is 0;
- ``ttfa_p99_ratio_cb`` and ``deadline_miss_ratio_cb``: the same two against
  continuous batching (targets at 80% load, GPU profile: both <= 0.5).

Our first-audio figures are over the interactive utterances we admitted;
``ours_interactive_refusal_rate`` says how many were refused (``overloaded``
at once, with a retry hint, instead of being served late).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

from bench import sim
from bench.results import write_results
from scheduler.config import SchedulerConfig
from scheduler.cost import CostModel

BATCHER_WAITS = (0.05, 0.08)
KEY_LOAD = 0.8


def load_cpu_steps(path: str) -> CostModel:
    data = json.loads(pathlib.Path(path).read_text())
    if isinstance(data, dict):
        table = {tuple(int(x) for x in k.split(",")): float(v) for k, v in data.items()}
        return CostModel.from_table(table)
    return CostModel.from_json_rows(data)


def sweep(name: str, cost: CostModel, loads, bursts: int, seed: int) -> list[dict]:
    rows = []
    config = SchedulerConfig()
    for load in loads:
        duration = sim.workload_duration(load, cost, bursts)
        arrivals = sim.workload(load, cost, duration, seed)
        # Random draws offer a little more or less than asked: spread or
        # squeeze the arrivals so each point offers exactly its load.
        factor = sim.realized_load(arrivals, cost, duration) / load
        arrivals, duration = sim.stretch(arrivals, factor), duration * factor
        outcomes = [sim.run_ours(arrivals, cost, config, duration, seed),
                    sim.run_continuous(arrivals, cost, duration, seed, config)]
        outcomes += [sim.run_batcher(arrivals, cost, duration, 8, wait, seed) for wait in BATCHER_WAITS]
        for outcome in outcomes:
            row = {"profile": name, "load": load, "policy": outcome.name,
                   "realized_load": round(sim.realized_load(arrivals, cost, duration), 3),
                   "duration_s": round(duration, 1),
                   "background_offered": outcome.background_offered,
                   "background_missed": outcome.background_missed,
                   "interactive_utterances": len(outcome.first_audio)}
            row.update(sim.summarize(outcome))
            rows.append(row)
    return rows


def print_table(rows: list[dict]) -> None:
    head = (f"{'profile':7} {'load':>5} {'real':>5} {'policy':14} {'ttfa p50 ms':>11} "
            f"{'p95 ms':>8} {'p99 ms':>8} {'i refused':>9} "
            f"{'bg miss':>8} {'refused':>8} {'late':>6} {'codes/s':>8} {'stall s':>8}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['profile']:7} {r['load']:5.0%} {r['realized_load']:5.0%} {r['policy']:14} "
              f"{r['ttfa_p50_ms']:11.0f} "
              f"{r['ttfa_p95_ms']:8.0f} {r['ttfa_p99_ms']:8.0f} {r['interactive_refusal_rate']:9.1%} "
              f"{r['bg_miss_rate']:8.1%} "
              f"{r['bg_refusal_rate']:8.1%} {r['bg_late_rate']:6.1%} {r['codes_per_s']:8.0f} "
              f"{r['gap_s_per_utt']:8.2f}")


def plot(rows: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    profiles = sorted({r["profile"] for r in rows}, key=lambda p: p != "gpu")
    fig, axes = plt.subplots(2, len(profiles), figsize=(6 * len(profiles), 8), squeeze=False)
    for col, profile in enumerate(profiles):
        for policy in sorted({r["policy"] for r in rows}):
            pts = [r for r in rows if r["profile"] == profile and r["policy"] == policy]
            loads = [100 * r["load"] for r in pts]
            axes[0][col].plot(loads, [r["ttfa_p99_ms"] for r in pts], marker="o", label=policy)
            axes[1][col].plot(loads, [100 * r["bg_miss_rate"] for r in pts], marker="o", label=policy)
        axes[0][col].set_yscale("log")
        axes[0][col].set_title(f"{profile}: interactive first audio p99")
        axes[0][col].set_ylabel("ms")
        axes[1][col].set_title(f"{profile}: background deadline misses (refused + late)")
        axes[1][col].set_ylabel("% of background utterances")
        for ax in (axes[0][col], axes[1][col]):
            ax.set_xlabel("offered load, % of peak throughput")
            ax.grid(True, alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def headline(rows: list[dict]) -> dict:
    at = [r for r in rows if r["profile"] == "gpu" and abs(r["load"] - KEY_LOAD) < 1e-9]
    ours = next(r for r in at if r["policy"] == "two-lane")
    cb = next(r for r in at if r["policy"] == "continuous")
    batchers = [r for r in at if r["policy"].startswith("batcher")]
    best_ttfa = min(r["ttfa_p99_ms"] for r in batchers)
    best_miss = min(r["background_missed"] for r in batchers)
    return {
        "ttfa_p99_ratio": round(ours["ttfa_p99_ms"] / best_ttfa, 4),
        "deadline_miss_ratio": round((ours["background_missed"] + 1) / (best_miss + 1), 4),
        "ttfa_p99_ratio_cb": round(ours["ttfa_p99_ms"] / cb["ttfa_p99_ms"], 4),
        "deadline_miss_ratio_cb": round((ours["background_missed"] + 1) / (cb["background_missed"] + 1), 4),
        "load": KEY_LOAD,
        "profile": "gpu",
        "ours_ttfa_p99_ms": round(ours["ttfa_p99_ms"], 1),
        "batcher_ttfa_p99_ms": round(best_ttfa, 1),
        "ours_bg_miss_rate": round(ours["bg_miss_rate"], 4),
        "ours_bg_refusal_rate": round(ours["bg_refusal_rate"], 4),
        "ours_bg_late_rate": round(ours["bg_late_rate"], 4),
        "batcher_bg_miss_rate": round(min(r["bg_miss_rate"] for r in batchers), 4),
        "cb_ttfa_p99_ms": round(cb["ttfa_p99_ms"], 1),
        "cb_bg_miss_rate": round(cb["bg_miss_rate"], 4),
        "ours_interactive_refusal_rate": round(ours["interactive_refusal_rate"], 4),
        "background_offered": ours["background_offered"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench scheduler", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, fewer loads")
    parser.add_argument("--out", default="out", help="directory for the JSON and PNG (default out/)")
    parser.add_argument("--cpu-steps", help="JSON file of measured CPU step times")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bursts", type=int, help="background bursts per load point (sets the duration)")
    args = parser.parse_args(argv)

    loads = (0.4, 0.8, 1.2) if args.quick else (0.2, 0.4, 0.6, 0.8, 1.0, 1.2)
    bursts = args.bursts or (8 if args.quick else 30)
    cpu = load_cpu_steps(args.cpu_steps) if args.cpu_steps else CostModel.default_cpu()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    rows = sweep("gpu", CostModel.default_gpu(), loads, bursts, args.seed)
    rows += sweep("cpu", cpu, loads, bursts, args.seed)
    print_table(rows)
    return write_results(out, "scheduler_bench", rows, plot, headline, started)


if __name__ == "__main__":
    sys.exit(main())
