"""The memory roofline of a CPU decode step: what no kernel can beat on this machine.

A batch-1 decode step reads every decoder matrix once (ChatTTS's GPT: 20
layers of qkv 2304x768, o 768x768, gate_up 6144x768, down 768x3072, plus the
four logit heads 626x768): 190.6 M weights. At 1-8 rows the multiply does
2-16 flops per weight loaded, far under what the cores can do per byte of
memory bandwidth, so the step cannot be faster than those bytes over the
machine's read bandwidth. This bench measures that bandwidth (a reduction
over a buffer ten times the last-level cache, ``--threads`` threads, best of
``--rounds``) and one fp32 pass of ``torch.mv`` over distinct matrices of
the step's shapes (what a plain library call reaches), then prints, per
precision (fp32 4 bytes a weight, bf16 2, int8 1 plus its fp32 heads):

- ``floor_ms_bs1_<p>``: the weights' bytes over the bandwidth;
- ``floor_rtf_<p>``: that floor over the real-time budget of one code
  (21.3 ms of audio), the lowest realtime factor any decode step at this
  precision can have here, vocoder and server not counted;
- with ``--upstream-ms-bs1 X`` (upstream ChatTTS's measured bs-1 step, from
  ``python -m bench runtime`` in the same hour), ``max_decode_speedup_bs1``:
  X over the fp32 floor, the largest ``decode_speedup_bs1`` this machine
  allows while the codes stay fp32 and identical to upstream's.

Last line: JSON with those keys plus ``read_gbs``, ``mv_pass_ms_fp32``,
``mv_pass_gbs``, ``weights_m``, ``cpu``, ``load_average``, ``threads``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

from realtime.engine.cpu import info
from realtime.engine.model.shapes import FULL, ModelShape
from realtime.engine.vocoder.encoder import CODES_PER_SECOND

BYTES_PER_WEIGHT = {"fp32": 4.0, "bf16": 2.0, "int8": 1.0}


def decoder_shapes(shape: ModelShape = FULL) -> list[tuple[int, int, int]]:
    """(rows out, columns in, count) of every matrix one decode step reads."""
    h, i, n = shape.hidden, shape.intermediate, shape.layers
    return [(3 * h, h, n), (h, h, n), (2 * i, h, n), (h, i, n),
            (shape.num_audio_tokens, h, shape.num_vq)]


def step_bytes(precision: str, shape: ModelShape = FULL) -> float:
    """Bytes of weights one batch-1 step reads; int8 keeps its heads fp32."""
    shapes = decoder_shapes(shape)
    body = sum(o * k * c for o, k, c in shapes[:-1])
    o, k, c = shapes[-1]
    heads = o * k * c * (4.0 if precision == "int8" else BYTES_PER_WEIGHT[precision])
    return body * BYTES_PER_WEIGHT[precision] + heads


def read_gbs(gib: float, rounds: int) -> float:
    """Best read bandwidth of a reduction over ``gib`` GiB (GB/s)."""
    x = torch.ones(int(gib * 2**30) // 4)
    x.sum()  # fault the pages in
    best = min(_timed(x.sum) for _ in range(rounds))
    return x.numel() * 4 / best / 1e9


def mv_pass_ms(rounds: int, shape: ModelShape = FULL) -> float:
    """Median ms of one fp32 ``mv`` over a step's worth of distinct matrices."""
    mats = [torch.randn(o, k) for o, k, c in decoder_shapes(shape) for _ in range(c)]
    vecs = {k: torch.randn(k) for _, k, _ in decoder_shapes(shape)}

    def run() -> None:
        for m in mats:
            torch.mv(m, vecs[m.shape[1]])
    run()
    return statistics.median(_timed(run) for _ in range(rounds)) * 1e3


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(threads: int = 2, gib: float = 1.0, rounds: int = 7,
            upstream_ms_bs1: float | None = None) -> dict:
    torch.set_num_threads(threads)
    bw = read_gbs(gib, rounds)
    mv_ms = mv_pass_ms(rounds)
    budget_ms = 1e3 / CODES_PER_SECOND
    out: dict = dict(cpu=info.describe(), load_average=round(os.getloadavg()[0], 2), threads=threads,
                     read_gbs=round(bw, 2), weights_m=round(step_bytes("fp32") / 4e6, 1),
                     mv_pass_ms_fp32=round(mv_ms, 2),
                     mv_pass_gbs=round(step_bytes("fp32") / mv_ms / 1e6, 2),
                     code_budget_ms=round(budget_ms, 2))
    for precision in BYTES_PER_WEIGHT:
        floor = step_bytes(precision) / bw / 1e6
        out[f"floor_ms_bs1_{precision}"] = round(floor, 2)
        out[f"floor_rtf_{precision}"] = round(floor / budget_ms, 3)
    if upstream_ms_bs1:
        out["upstream_ms_bs1"] = upstream_ms_bs1
        out["max_decode_speedup_bs1"] = round(upstream_ms_bs1 / out["floor_ms_bs1_fp32"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gib", type=float, default=1.0, help="buffer for the bandwidth read")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--upstream-ms-bs1", type=float, default=None,
                        help="upstream's bs-1 step (ms) from bench runtime, for max_decode_speedup_bs1")
    args = parser.parse_args(argv)
    result = measure(args.threads, args.gib, args.rounds, args.upstream_ms_bs1)
    for precision in BYTES_PER_WEIGHT:
        print(f"{precision:5} {step_bytes(precision) / 1e6:7.0f} MB a step  "
              f"floor {result[f'floor_ms_bs1_{precision}']:6.2f} ms  "
              f"rtf >= {result[f'floor_rtf_{precision}']:.3f}")
    print(json.dumps(result))
    return 0
