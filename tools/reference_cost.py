"""What ``params.reference: "first"`` costs: one DVAE encode per utterance and
longer prompts for sentences 2..n. Run: ``python -m tools.reference_cost
[tiny|full] [seconds of sentence 1]``; prints one row per figure (best of 5).

Thread: main.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch

from realtime.engine.api import RuntimeOptions, SamplingParams, SegmentRequest, VoiceSample
from realtime.engine.build import build_runner
from realtime.engine.model.shapes import FULL, TINY
from realtime.engine.model.weights import random_assets
from realtime.engine.vocoder.encoder import SampleEncoder

TEXT = "Here is the second sentence of a longer answer, spoken in the same voice."
FIRST = "This is the first sentence, the one the others follow."


def best(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    size = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    assets = random_assets(TINY if size == "tiny" else FULL, seed=0)
    runner = build_runner(RuntimeOptions(weights="random", device="cpu", max_slots=1, batch_sizes=(1,),
                                         kv_buckets=(1024,)), assets=assets)
    wav = (0.2 * np.sin(np.linspace(0, 2 * np.pi * 220 * seconds, int(24000 * seconds)))).astype(np.float32)
    encoder = SampleEncoder(assets.dvae)
    spk_smp = encoder.encode(wav)
    print(f"{size}: torch threads {torch.get_num_threads()}, sentence 1 of {seconds:.1f} s")
    print(f"  DVAE encode: {best(lambda: encoder.encode(wav)) * 1000:.1f} ms")
    plain = SegmentRequest(TEXT, params=SamplingParams(max_new_tokens=1))
    refd = SegmentRequest(TEXT, params=SamplingParams(max_new_tokens=1), sample=VoiceSample(spk_smp, FIRST))
    for name, req in (("none", plain), ("first", refd)):
        job = runner.prepare(req)
        x = torch.zeros(1, job.prompt_len, assets.shape.hidden)
        slots = torch.zeros(1, dtype=torch.int64)
        with torch.no_grad():
            t = best(lambda x=x, slots=slots: runner.model.prefill(x, slots, runner.cache))
        print(f"  prefill, reference {name}: {job.prompt_len} prompt tokens, {t * 1000:.1f} ms")


if __name__ == "__main__":
    main()
