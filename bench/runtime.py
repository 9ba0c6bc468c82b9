"""Runtime benchmark: our static-KV decode vs upstream ChatTTS, same weights, CPU.

Full-size random weights (the real architecture), fp32, side by side in one
process:
- decode steps per second at batch 1 and 8: ours through ``ModelRunner.execute``
  (sampling and the per-step host read included) vs upstream ``GPT.generate``
  (its per-step cost: the time difference between two generation lengths,
  so its prefill cancels out);
- time to first audio and total vocoder time for a streamed 20 s utterance,
  from ``bench.vocoder.measure`` (ours vs upstream's stream scheme);
- peak resident memory.

Prints a table and, as the last line, one JSON object with
``decode_speedup_bs1``, ``decode_speedup_bs8``, ``first_audio_ratio``,
``vocoder_ratio`` and ``peak_rss_mb``. ``--quick`` finishes in under a minute.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time

import torch

PROMPT_TEXT = ("The quick brown fox jumps over the lazy dog, and then it runs far away "
               "into the forest where nobody can find it again.")


def _ours_step_s(runner, batch: int, steps: int) -> float:
    from realtime.runtime.api import SamplingParams, SegmentRequest
    from tools.driver import Driver
    driver = Driver(runner)
    ids = list(range(1000, 1000 + batch))
    params = SamplingParams(seed=1, min_new_tokens=steps + 5, max_new_tokens=steps + 5)
    for j in ids:
        driver.add(j, SegmentRequest(PROMPT_TEXT, params=params))
    driver.step()  # prefill
    driver.step()  # warm
    start = time.perf_counter()
    for _ in range(steps):
        out = driver.step()
        assert not out.finished, out.finished
    elapsed = (time.perf_counter() - start) / steps
    driver.step(release=tuple(ids))
    return elapsed


def _upstream_runs_s(upstream, prompt, batch: int, short: int, long: int) -> tuple[float, float]:
    """Seconds of one ``short``- and one ``long``-code upstream generation."""
    prompts = [prompt] * batch

    def run(n):
        start = time.perf_counter()
        upstream.generate(prompts, min_new_tokens=n, max_new_tokens=n, seed=1)
        return time.perf_counter() - start

    run(2)  # warm
    return run(short), run(long)


def measure(quick: bool, threads: int = 2) -> dict:
    import realtime.runtime.compat  # noqa: F401
    from realtime.runtime.api import RuntimeOptions, SegmentRequest
    from realtime.runtime.build import build_runner
    from realtime.runtime.shapes import FULL
    from realtime.runtime.weights import random_assets
    from tools.upstream import UpstreamGPT

    torch.set_num_threads(threads)
    assets = random_assets(FULL, seed=0)
    runner = build_runner(RuntimeOptions(weights="random", device="cpu", max_slots=8,
                                         kv_buckets=(512,)), assets=assets)
    runner.front.warmup()
    upstream = UpstreamGPT(assets)
    prompt = runner.prepare(SegmentRequest(PROMPT_TEXT)).work.prompt
    steps = 8 if quick else 40
    short, long = (4, 12) if quick else (10, 50)
    rounds = 2 if quick else 3
    result = {"prompt_tokens": prompt.length, "threads": threads}
    for batch in (1, 8):
        # Alternate and keep the best of each: other processes share this CPU.
        # Upstream's per-step cost is a difference of two run times: keep the
        # best of each run length, then subtract (the best difference would
        # reward a stall in a short run, even below zero).
        ours, up_short, up_long = float("inf"), float("inf"), float("inf")
        for _ in range(rounds):
            ours = min(ours, _ours_step_s(runner, batch, steps))
            t_short, t_long = _upstream_runs_s(upstream, prompt, batch, short, long)
            up_short, up_long = min(up_short, t_short), min(up_long, t_long)
        up = (up_long - up_short) / (long - short)
        result[f"ours_step_ms_bs{batch}"] = round(ours * 1e3, 2)
        result[f"upstream_step_ms_bs{batch}"] = round(up * 1e3, 2)
        result[f"decode_speedup_bs{batch}"] = round(up / ours, 3)
    try:
        from bench.vocoder import measure as vocoder_measure
    except ImportError:
        vocoder_measure = None
    if vocoder_measure is not None:
        voc = vocoder_measure(quick, gpt_step_s=result["ours_step_ms_bs1"] / 1e3)
        result["first_audio_ratio"] = voc.get("first_audio_ratio")
        result["vocoder_ratio"] = voc.get("vocoder_ratio")
        result["vocoder_rows"] = voc.get("rows", [])
    else:
        result["first_audio_ratio"] = result["vocoder_ratio"] = None
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def _num(x) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def _table(r: dict) -> str:
    lines = [f"{'measure':<38}{'ours':>12}{'upstream':>12}{'ratio':>10}"]
    for b in (1, 8):
        lines.append(f"{f'decode step ms, batch {b}':<38}{r[f'ours_step_ms_bs{b}']:>12}"
                     f"{r[f'upstream_step_ms_bs{b}']:>12}{r[f'decode_speedup_bs{b}']:>9}x")
    for name, ours, up, ratio in r.get("vocoder_rows", []):
        lines.append(f"{name[:37]:<38}{_num(ours):>12}{_num(up):>12}{_num(ratio):>10}")
    lines.append(f"{'peak RSS MB':<38}{r['peak_rss_mb']:>12}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench runtime", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps (under a minute)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    result = measure(args.quick, args.threads)
    print(_table(result))
    summary = {k: v for k, v in result.items() if k != "vocoder_rows"}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
