"""The CPU decoder's whole decode step and a prompt, engine by engine and form by form.

Full-size random weights, ``--threads`` threads, one process: our torch
decoder (``torch-fp32``: upstream's codes) and ONNX Runtime's (``ort-int4``, ``ort-int8``,
``ort-fp32``), all built from the same weights (``cpu.engine.decoder_on``).
A step is ``cpu.engine.whole_step``: the decoder and the logits of ``b``
rows at position ``kv - 1`` (no sampling or vocoder: ``bench step-split``
has those). A prompt is ``prefill`` of one prompt of ``t`` tokens
(``--prompt``); an ort int form runs it on the graph its start-up chose
(``ort.prompts``), ``<setup>:decode`` (e.g. ``ort-int4:decode``) on its
decode graph, for the comparison. Rounds alternate the set-ups; each round
times ``--steps`` steps (and ``--prompt-runs`` prompts) after a warm one;
medians of the rounds.

The last stdout line is JSON: ``step_ms_<setup>_bs<b>_kv<kv>`` per set-up,
batch size (``--batch``) and position (``--kv``), ``prompt_ms_<setup>_t<t>``
per prompt length, ``cpu``, ``threads`` and ``load_average`` (before, after).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

SETUPS = ("torch-fp32", "ort-int4", "ort-int8", "ort-fp32")


def whole_prompt(model, tokens: int):
    """One prompt of ``tokens`` tokens into slot 0 (``prefill``)."""
    cache = model.new_cache(1, tokens, 1)
    x = torch.randn(1, tokens, model.shape.hidden, generator=torch.Generator().manual_seed(0)) * 0.1
    slot = torch.tensor([0])

    @torch.no_grad()
    def run() -> None:
        model.prefill(x, slot, cache)
    return run


def measure(setups: tuple[str, ...], batches: tuple[int, ...], kvs: tuple[int, ...], rounds: int,
            steps: int, threads: int, prompts: tuple[int, ...] = (), prompt_runs: int = 3) -> dict:
    from realtime.engine.api import RuntimeOptions
    from realtime.engine.cpu import engine
    from realtime.engine.cpu.info import describe
    from realtime.engine.model.shapes import FULL
    from realtime.engine.model.weights import random_assets

    torch.set_num_threads(threads)
    assets = random_assets(FULL, seed=0)
    models = {}
    for setup in setups:
        name, precision = setup.split(":")[0].split("-")
        options = RuntimeOptions(weights="random", device="cpu", precision=precision, cpu_engine=name,
                                 batch_sizes=tuple(sorted({1, *batches})), max_slots=max(batches))
        models[setup] = engine.decoder_on(name, options, assets, prompts=not setup.endswith(":decode"))
    cases = [(b, kv) for b in batches for kv in kvs]
    runs = {setup: {(f"step_ms_{setup}_bs{b}_kv{kv}", steps): engine.whole_step(m, b, kv) for b, kv in cases}
            for setup, m in models.items()}
    for setup, m in models.items():
        runs[setup].update({(f"prompt_ms_{setup}_t{t}", prompt_runs): whole_prompt(m, t) for t in prompts})
    times: dict[str, list[float]] = {}
    load = os.getloadavg()[0]
    for r in range(rounds):
        for setup in (setups if r % 2 == 0 else tuple(reversed(setups))):
            for (key, n), run in runs[setup].items():
                run()
                started = time.perf_counter()
                for _ in range(n):
                    run()
                times.setdefault(key, []).append((time.perf_counter() - started) / n * 1e3)
    result: dict = {"cpu": describe(), "threads": threads,
                    "load_average": [round(load, 2), round(os.getloadavg()[0], 2)]}
    for key, ms in times.items():
        result[key] = round(statistics.median(ms), 2)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench engines", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--setups", default=",".join(SETUPS))
    parser.add_argument("--batch", type=int, action="append", help="repeatable (default 1 and 4)")
    parser.add_argument("--kv", type=int, action="append", help="repeatable (default 200 and 600)")
    parser.add_argument("--prompt", type=int, action="append",
                        help="prompt tokens, repeatable (default: none)")
    parser.add_argument("--prompt-runs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    setups = tuple(s.strip() for s in args.setups.split(",") if s.strip())
    result = measure(setups, tuple(args.batch or (1, 4)), tuple(args.kv or (200, 600)), args.rounds,
                     args.steps, args.threads, tuple(args.prompt or ()), args.prompt_runs)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
