"""The vocoder's linears on the GEMM backend measured for them (CPU fp32).

ChatTTS's Decoder and Vocos are ConvNeXt stacks: per block a depthwise
convolution and two ``nn.Linear`` layers over every mel frame (41 linears,
27 M weights). On a CPU those linears are most of a render (70% of a 12-step
window) and run through MKL's ``addmm``, which takes a slow path off Intel:
the same problem as the decoder's matrices, with the same cure. Each linear's
weight goes through ``cpu.plan`` (measured per shape at ``ROWS`` frames, a
64-step window; any row count then runs on the chosen form) and, where a
packed backend wins, the layer is replaced by a ``PackedLinear`` in a copy of
the module (the assets stay untouched: tests compare with upstream on them).
Where plain ``mm`` wins, or the shapes are too small to measure (tiny test
models), the ``nn.Linear`` stays, so the vocoder stays bit-identical to
upstream there.

AMD EPYC Zen 4, 2 threads, full size, side by side: a 12-step window 45.6 ->
33.8 ms, a 123-step window 174 -> 148 ms (oneDNN packed, 40 of the 41);
audio within 1e-7 of the ``addmm`` render (peak ~0.1).

bf16 (``precision int8`` and ``bf16`` only, whose audio already parts from
fp32's, and only where ``cpu.bf16.available()``: native bf16). A
block linear (not the Vocos head's, as ``--vocoder-precision bf16``) whose
shape runs faster with a bf16 copy of its weight (``vocoder_precision.BF16Linear``:
oneDNN's AMX or AVX-512-BF16 kernels; emulated elsewhere, where it loses and
is not taken), timed against its fp32 form at ``ROWS`` frames, runs in bf16;
depthwise convolutions, norms and the ISTFT stay fp32. Intel Xeon (family 6
model 167, AMX), 2 cores shared with other agents, full-size random weights,
a 123-step window, medians of alternating rounds: bf16 linears 0.70x the
time of the fp32 packed render; audio SNR against it 45 dB (int8 dynamic
linears: 0.50x, but 29 dB, so not a candidate).

Thread: build time (the model thread).
"""

from __future__ import annotations

import copy
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import torch

from realtime.engine.cpu import plan_cache
from realtime.engine.cpu.bf16 import available as bf16_available
from realtime.engine.cpu.forms import candidates
from realtime.engine.cpu.gemm import Matrix
from realtime.engine.cpu.plan import GemmPolicy, ShapeChoice, prepare
from realtime.engine.vocoder.precision import BF16Linear, block_linears

log = logging.getLogger(__name__)

ROWS = 128  # mel frames the backends are timed at: a 64-step window
BF16_GAIN = 0.9  # bf16 must take at most this share of the fp32 form's time


class PackedLinear(torch.nn.Module):
    """``nn.Linear`` over a prepared ``Matrix``: ``x`` [..., K] -> [..., N]."""

    def __init__(self, matrix: Matrix, bias: torch.Tensor | None):
        super().__init__()
        self.matrix = matrix
        self.out_features = matrix.shape[1]
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().clone(),
                                                                   requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        return self.matrix(rows, self.bias).view(*x.shape[:-1], self.out_features)


def pack_linears(modules: list[torch.nn.Module], policy: GemmPolicy
                 ) -> tuple[list[torch.nn.Module], dict[tuple[int, int], ShapeChoice]]:
    """``modules`` with their linears on the measured backends: copies where
    any layer changes, the modules themselves otherwise; and the choices
    (for the log). ``policy``: the decoder's, its mode forcing a backend
    (``int8`` runs the vocoder as ``auto`` would, with bf16 linears where
    they measure faster)."""
    reduced = policy.mode in ("int8", "bf16")  # precisions whose audio already parts from fp32's
    mode = "auto" if reduced else policy.mode
    found = [entry for m in modules for entry in _linears(m)]
    if not found or mode == "mm":
        return modules, {}
    weight = found[0][2].weight
    device, dtype = weight.device, weight.dtype  # the vocoder runs where and as it lies
    if device.type != "cpu" or dtype != torch.float32:
        return modules, {}
    plan = replace(policy, mode=mode, batch_sizes=(1,), prefill_rows=ROWS)
    with torch.no_grad():
        weights = [lin.weight.detach().contiguous() for _, _, lin in found]
        matrices, choices = _prepared(weights, plan, device, dtype)
    layers: dict[int, torch.nn.Module] = {
        id(lin): PackedLinear(m, lin.bias) for (_, _, lin), m in zip(found, matrices)
        if m.backend_for(ROWS) != "mm"}
    if reduced and bf16_available() is None:
        # The blocks' linears, as --vocoder-precision bf16 takes them (the head stays fp32).
        blocks = {id(getattr(parent, name)) for m in modules for parent, name in block_linears(m)}
        pairs = [(lin, m) for (_, _, lin), m in zip(found, matrices) if id(lin) in blocks]
        layers.update(bf16_layers([lin for lin, _ in pairs], [m for _, m in pairs],
                                  policy.min_measured_bytes))
    if not layers:
        return modules, choices
    out = []
    for module in modules:
        # A copy walks its modules in the original's order: pair them up.
        clone = copy.deepcopy(module)
        for (_, _, child), (parent, name, _) in zip(_linears(module), _linears(clone)):
            if id(child) in layers:
                setattr(parent, name, layers[id(child)])
        out.append(clone)
    forms = Counter("bf16" if isinstance(layers.get(id(lin)), BF16Linear) else m.backend_for(ROWS)
                    for (_, _, lin), m in zip(found, matrices))
    log.info("vocoder gemm (%s, timed at %d frames): %s", policy.mode if reduced else mode,
             ROWS, ", ".join(f"{b} {n}" for b, n in sorted(forms.items())))
    return out, choices


def _prepared(weights: list[torch.Tensor], plan: GemmPolicy, device: torch.device,
              dtype: torch.dtype) -> tuple[list[Matrix], dict[tuple[int, int], ShapeChoice]]:
    """``cpu.plan.prepare_matrices``, from the choices this machine measured
    at an earlier start when ``plan.cache_dir`` holds them (``cpu.plan_cache``,
    kind ``VOCODER_KIND``: keyed by the shapes, threads, candidates, torch and
    CPU); what it measured is stored there for the next start."""
    key = None
    if plan.mode == "auto" and plan.cache_dir:
        key = plan_cache.key(weights, plan, device, dtype, candidates(device, dtype),
                             kind=plan_cache.VOCODER_KIND)
    fixed = plan_cache.load(plan.cache_dir, key) or {}
    prepared = prepare(weights, plan, device, dtype, fixed=fixed or None)
    # Shapes too small to measure are decided by size alone (no entry needed);
    # the shapes a budget left unmeasured are measured at the next start.
    measured = {s: c.backends for s, c in prepared.choices.items() if c.complete and s not in fixed}
    if fixed:
        log.info("vocoder gemm plan from this machine's cache: %d of %d shapes", len(fixed),
                 len(prepared.choices))
    if measured:
        plan_cache.store(plan.cache_dir, key, {**fixed, **measured}, [f"timed at {ROWS} frames"])
    return prepared.matrices, prepared.choices


def bf16_layers(linears: list[torch.nn.Linear], matrices: list[Matrix], min_bytes: int,
                timer: Callable[[Callable[[], object]], float] | None = None
                ) -> dict[int, torch.nn.Module]:
    """A ``BF16Linear`` per linear (by ``id``) whose shape's bf16 form took at
    most ``BF16_GAIN`` of its fp32 form's time at ``ROWS`` frames; shapes
    whose weights total under ``min_bytes`` stay fp32 unmeasured (tiny test
    models stay exact and deterministic). ``timer``: seconds of a call."""
    timer = timer or _best_of
    groups: dict[tuple[int, int], list[int]] = {}
    for i, lin in enumerate(linears):
        groups.setdefault((int(lin.weight.shape[0]), int(lin.weight.shape[1])), []).append(i)
    out: dict[int, torch.nn.Module] = {}
    with torch.inference_mode():
        for (n, k), idx in groups.items():
            if len(idx) * n * k * 4 < min_bytes:
                continue
            if _bf16_faster(linears[idx[0]], matrices[idx[0]], timer):
                out.update((id(linears[i]), BF16Linear(linears[i])) for i in idx)
    return out


def _bf16_faster(linear: torch.nn.Linear, matrix: Matrix,
                 timer: Callable[[Callable[[], object]], float]) -> bool:
    n, k = linear.weight.shape
    x = torch.randn(ROWS, k, generator=torch.Generator().manual_seed(0))
    bf16 = BF16Linear(linear)
    fp32_s = timer(lambda: matrix(x, linear.bias))
    bf16_s = timer(lambda: bf16(x))
    log.debug("vocoder linear %dx%d at %d frames: fp32 %.3f ms, bf16 %.3f ms",
              k, n, ROWS, fp32_s * 1e3, bf16_s * 1e3)
    return bf16_s <= BF16_GAIN * fp32_s


def _best_of(call: Callable[[], object], repeats: int = 5) -> float:
    call()  # first-use costs (oneDNN's primitive for this shape)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def _linears(module: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.nn.Linear]]:
    return [(parent, name, child) for parent in module.modules()
            for name, child in parent.named_children() if isinstance(child, torch.nn.Linear)]
