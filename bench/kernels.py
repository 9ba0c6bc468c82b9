"""The decoder's matrix kernels side by side: us per call and ms per step, per form.

Every form the runtime can give a matrix (``realtime.engine.cpu.forms``:
fp32 ``mm``/``mkl``/``onednn``, int8 ``int8`` (fbgemm) / ``int8_onednn`` /
``int8_woq``, bf16 ``bf16``/``bf16_onednn``, each where this CPU offers it)
plus two int8 paths the runtime does not use, for the record: ``int_mm``
(``torch._int_mm`` on per-row quantized inputs) and ``onednn_qlinear``
(``torch.ops.onednn.qlinear_pointwise`` over ``qlinear_prepack``'d weights,
inputs quantized per call in Python). Full-size shapes (ChatTTS's GPT: qkv
2304x768, o 768x768, gate_up 6144x768, down 768x3072, 20 layers each, and the
heads 2504x768), at 1 and 8 rows; per shape a pass over distinct matrices
worth ~32 MiB (as a step streams them), candidates alternating within each of
``--rounds`` rounds, medians. The step total weights each shape by its count.
Relative error against the fp32 product is printed beside each time.

Last line: JSON with ``cpu``, ``load_average``, ``us_per_call`` (rows ->
shape -> form) and ``step_ms`` (rows -> form).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import torch

SHAPES = {"qkv": (2304, 768, 20), "o": (768, 768, 20), "gate_up": (6144, 768, 20),
          "down": (768, 3072, 20), "heads": (2504, 768, 1)}  # name: (N, K, count per step)


def _q8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = (w.abs().amax(1) / 127).clamp_min(1e-12)
    return torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8), scale


def _int_mm(w: torch.Tensor, rows: int) -> Callable[[torch.Tensor], torch.Tensor]:
    q, s = _q8(w)
    qt = q.t().contiguous()

    def run(x: torch.Tensor) -> torch.Tensor:
        xs = x.abs().amax(1, keepdim=True).clamp_min(1e-12) / 127
        return torch._int_mm(torch.round(x / xs).to(torch.int8), qt).float().mul_(xs).mul_(s)
    return run


def _onednn_qlinear(w: torch.Tensor, rows: int) -> Callable[[torch.Tensor], torch.Tensor]:
    q, s = _q8(w)
    packed = torch.ops.onednn.qlinear_prepack(q, [rows, w.shape[1]])
    zp = torch.zeros(w.shape[0], dtype=torch.long)

    def run(x: torch.Tensor) -> torch.Tensor:
        lo, hi = torch.aminmax(x)
        sc = (torch.maximum(hi, -lo) / 127).clamp_min(1e-12)
        xq = torch.round(x / sc).clamp_(-127, 127).add_(128).to(torch.uint8)
        return torch.ops.onednn.qlinear_pointwise.tensor(xq, sc, torch.tensor(128), packed, s, zp, None,
                                                         1.0, 0, torch.float32, "none", [], "")
    return run


EXTRAS = {"int_mm": _int_mm, "onednn_qlinear": _onednn_qlinear}


def _makers() -> dict[str, Callable]:
    from realtime.engine.cpu import forms

    cpu = torch.device("cpu")
    names = [*forms.candidates(cpu, torch.float32), *forms.candidates(cpu, torch.float32, "int8"),
             *forms.candidates(cpu, torch.float32, "bf16")]
    makers: dict[str, Callable] = {n: forms.PACKERS[n] for n in names}
    return {**makers, **EXTRAS}


def _time(fs: list, x: torch.Tensor) -> float:
    for f in fs[:2]:
        f(x)
    start = time.perf_counter()
    for f in fs:
        f(x)
    return (time.perf_counter() - start) / len(fs)


def measure(rows_list: tuple[int, ...] = (1, 8), rounds: int = 7) -> dict:
    warnings.simplefilter("ignore")  # quantized tensor creation is deprecated: said in cpu/int8.py
    from realtime.engine.cpu.info import describe

    gen = torch.Generator().manual_seed(0)
    makers = _makers()
    us: dict[int, dict[str, dict[str, float]]] = {}
    errors: dict[int, dict[str, dict[str, float]]] = {}
    with torch.inference_mode():
        for rows in rows_list:
            for shape, (n, k, _) in SHAPES.items():
                count = max(1, min(SHAPES[shape][2], (32 << 20) // (n * k * 4) + 1))
                ws = [torch.randn(n, k, generator=gen) * 0.02 for _ in range(count)]
                x = torch.randn(rows, k, generator=gen)
                want = x @ ws[0].t()
                built: dict[str, list] = {}
                for name, make in makers.items():
                    try:
                        built[name] = [make(w, rows) for w in ws]
                        got = built[name][0](x)
                    except (RuntimeError, ValueError, AttributeError) as exc:
                        print(f"# {name} {shape}: {type(exc).__name__}: {str(exc)[:100]}", file=sys.stderr)
                        built.pop(name, None)
                        continue
                    err = float((got - want).norm() / want.norm())
                    errors.setdefault(rows, {}).setdefault(shape, {})[name] = err
                times: dict[str, list[float]] = {name: [] for name in built}
                for r in range(rounds):
                    order = list(built)[r % len(built):] + list(built)[:r % len(built)]
                    for name in order:
                        times[name].append(_time(built[name], x))
                us.setdefault(rows, {})[shape] = {name: round(statistics.median(t) * 1e6, 1)
                                                  for name, t in times.items()}
    step = {rows: {name: round(sum(us[rows][s][name] * SHAPES[s][2] for s in SHAPES) / 1e3, 2)
                   for name in us[rows][next(iter(SHAPES))]
                   if all(name in us[rows][s] for s in SHAPES)} for rows in us}
    return {"cpu": describe(), "threads": torch.get_num_threads(), "load_average": os.getloadavg(),
            "us_per_call": us, "rel_error": errors, "step_ms": step}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench kernels", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = measure(rounds=args.rounds)
    print(f"cpu: {result['cpu']}, load {result['load_average']}")
    for rows, by_shape in result["us_per_call"].items():
        for shape, cells in by_shape.items():
            err = result["rel_error"][rows][shape]
            print(f"rows {rows} {shape:<8}" + "  ".join(
                f"{n} {t:.0f}us ({err[n]:.0e})" for n, t in sorted(cells.items(), key=lambda kv: kv[1])))
        print(f"rows {rows} step ms: " + ", ".join(
            f"{n} {t}" for n, t in sorted(result["step_ms"][rows].items(), key=lambda kv: kv[1])))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
