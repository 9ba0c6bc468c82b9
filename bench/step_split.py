"""The int8 stream's step on the CPU, split: decode vs vocoder, before and after.

Full-size random weights, ``precision int8``, ``--threads`` CPU threads, one
process. ``streams`` streaming segments of ``CODES`` codes each run to their
end through ``ModelRunner.execute`` (``bench.driver``: prefill, decode,
the streaming vocoder), in two set-ups built from the same weights:

- ``after``: the runner as the server builds it (the vocoder's block linears
  in bf16 where they measure faster, chunks growing by ``CPU_CHUNK_GROWTH``);
- ``before``: the same runner with the vocoder's linears back on their fp32
  form and chunks doubling (the runtime before issue 24).

A step that rendered no vocoder window is a decode step; the vocoder's time
is what the steps that rendered took over the median decode step. Rounds
alternate the set-ups (the CPU is shared); medians are reported. The last
stdout line is JSON: per set-up ``step_ms``, ``decode_step_ms``,
``vocoder_share`` (vocoder time over all step time), ``vocoder_ms_per_code``
and ``runtime_rtf`` (step time over the audio's duration; no server), then
``vocoder_speedup`` (before's vocoder time over after's) and ``cpu``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

from bench.stream_rtf import TEXT

CODES = 300  # 6.4 s of audio per stream: past the growing chunks into the steady ones


def _stream_steps(runner, streams: int, codes: int) -> dict[str, float]:
    """Run ``streams`` streaming segments to their end; the split of their steps."""
    from bench.driver import Driver
    from realtime.runtime.api import SamplingParams, SegmentRequest

    driver = Driver(runner)
    params = SamplingParams(seed=3, min_new_tokens=codes, max_new_tokens=codes)
    for j in range(streams):
        driver.add(j, SegmentRequest(TEXT, streaming=True, params=params))
    vocoder = runner.vocoder
    decode, rendering = [], []
    while driver.live or driver.pending:
        calls = vocoder.calls
        start = time.perf_counter()
        driver.step()
        (rendering if vocoder.calls != calls else decode).append(time.perf_counter() - start)
    base = statistics.median(decode)
    total = sum(decode) + sum(rendering)
    vocoder_s = sum(max(t - base, 0.0) for t in rendering)
    runner.reset()
    return {"step_ms": total / (len(decode) + len(rendering)) * 1e3, "decode_step_ms": base * 1e3,
            "vocoder_share": vocoder_s / total, "vocoder_ms_per_code": vocoder_s / (codes * streams) * 1e3,
            "vocoder_s": vocoder_s, "runtime_rtf": total / (codes * 512 / 24000)}


def _before(runner, assets) -> None:
    """The vocoder as it was: fp32 linears, doubling chunks."""
    from realtime.runtime.cpu.plan import GemmPolicy
    from realtime.runtime.cpu.vocoder_gemm import pack_linears

    (decoder, vocos), _ = pack_linears([assets.decoder.eval(), assets.vocos.eval()], GemmPolicy())
    runner.vocoder.decoder, runner.vocoder.vocos = decoder, vocos
    runner.vocoder.chunk_growth = 2.0


def measure(threads: int = 2, streams: int = 1, rounds: int = 3, codes: int = CODES) -> dict:
    from bench.stream_rtf import RUNNER_OPTIONS
    from realtime.runtime.api import RuntimeOptions
    from realtime.runtime.build import build_runner
    from realtime.runtime.cpu.info import describe
    from realtime.runtime.shapes import FULL
    from realtime.runtime.weights import random_assets

    torch.set_num_threads(threads)
    assets = random_assets(FULL, seed=0)
    options = RuntimeOptions(weights="random", device="cpu", precision="int8", cpu_threads=threads,
                             **RUNNER_OPTIONS)
    runners = {"before": build_runner(options, assets=assets), "after": build_runner(options, assets=assets)}
    _before(runners["before"], assets)
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in runners}
    for r in range(rounds):
        for name in (list(runners) if r % 2 == 0 else list(reversed(runners))):
            rows[name].append(_stream_steps(runners[name], streams, codes))
    result: dict = {"cpu": describe(), "threads": threads, "streams": streams, "codes": codes}
    for name, runs in rows.items():
        for key in runs[0]:
            result[f"{key}_{name}"] = round(statistics.median(r[key] for r in runs), 4)
    result["vocoder_speedup"] = round(result["vocoder_s_before"] / result["vocoder_s_after"], 3)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench step-split", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--streams", type=int, default=1, help="concurrent streaming segments")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--codes", type=int, default=CODES, help="codes per segment")
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.threads, args.streams, args.rounds, args.codes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
