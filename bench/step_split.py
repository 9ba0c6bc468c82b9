"""A stream's runtime step on the CPU, split (decode, vocoder), engine by engine.

Full-size random weights, ``--threads`` CPU threads, one process, no server.
Each set-up (``--setups``: ``<engine>-<precision>[-<vocoder precision>]``,
e.g. ``ort-int8``, ``torch-fp32`` or ``ort-int4-int8``; the CPU engines of
realtime/engine/cpu/engine.py; with ``ort`` the vocoder runs there too) is
a runner built from the same weights; ``streams`` streaming segments of
``codes`` codes run to their end through ``ModelRunner.execute``
(``bench.driver``: prefill, decode, the streaming vocoder). Rounds alternate
the set-ups (the CPU may be shared); medians are reported.

A step that rendered no vocoder window is a decode step (the decoder,
sampling and bookkeeping of ``streams`` rows); the vocoder's time is what
the steps that rendered took over the median decode step. The last stdout
line is JSON: per set-up ``step_ms``, ``decode_step_ms``, ``vocoder_share``,
``vocoder_ms_per_code`` (per code of one stream) and ``runtime_rtf`` (step
time over the audio's duration of one stream: below 1 keeps real time
before the server's own cost), then ``cpu``, ``load_average`` (before,
after) and ``moved_positions`` (K/V positions the ort engine's row map
copied).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

from bench.stream_rtf import TEXT

CODES = 300  # 6.4 s of audio per stream: past the growing chunks into the steady ones
SETUPS = ("ort-int8", "ort-int4", "ort-fp32", "torch-fp32")


def _stream_steps(runner, streams: int, codes: int) -> dict[str, float]:
    """Run ``streams`` streaming segments to their end; the split of their steps."""
    from bench.driver import Driver
    from realtime.engine.api import SamplingParams, SegmentRequest

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
            "runtime_rtf": total / (codes * 512 / 24000)}


def build(setup: str, assets, threads: int):
    """The runner of ``setup`` (``<engine>-<precision>[-<vocoder precision>]``) over ``assets``."""
    from bench.stream_rtf import RUNNER_OPTIONS
    from realtime.engine.api import RuntimeOptions
    from realtime.engine.build import build_runner

    engine, precision, *vocoder = setup.split("-")
    options = RuntimeOptions(weights="random", device="cpu", precision=precision, cpu_engine=engine,
                             vocoder_precision=vocoder[0] if vocoder else "auto", cpu_threads=threads,
                             **RUNNER_OPTIONS)
    return build_runner(options, assets=assets)


def measure(threads: int = 2, streams: int = 1, rounds: int = 3, codes: int = CODES,
            setups: tuple[str, ...] = SETUPS) -> dict:
    from realtime.engine.cpu.info import describe
    from realtime.engine.model.shapes import FULL
    from realtime.engine.model.weights import random_assets

    torch.set_num_threads(threads)
    assets = random_assets(FULL, seed=0)
    runners = {name: build(name, assets, threads) for name in setups}
    load = os.getloadavg()[0]
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in runners}
    for r in range(rounds):
        for name in (list(runners) if r % 2 == 0 else list(reversed(runners))):
            # As each runner's build left them: torch on one thread beside ONNX Runtime's.
            torch.set_num_threads(1 if name.startswith("ort") else threads)
            rows[name].append(_stream_steps(runners[name], streams, codes))
    result: dict = {"cpu": describe(), "threads": threads, "streams": streams, "codes": codes,
                    "load_average": [round(load, 2), round(os.getloadavg()[0], 2)]}
    for name, runs in rows.items():
        for key in runs[0]:
            result[f"{key}_{name}"] = round(statistics.median(r[key] for r in runs), 4)
        moved = getattr(runners[name].cache, "moved_positions", None)
        if moved is not None:
            result[f"moved_positions_{name}"] = moved
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench step-split", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--streams", type=int, default=1, help="concurrent streaming segments")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--codes", type=int, default=CODES, help="codes per segment")
    parser.add_argument("--setups", default=",".join(SETUPS),
                        help="comma-separated <engine>-<precision> set-ups, side by side")
    args = parser.parse_args(argv)
    setups = tuple(s.strip() for s in args.setups.split(",") if s.strip())
    print(json.dumps(measure(args.threads, args.streams, args.rounds, args.codes, setups)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
