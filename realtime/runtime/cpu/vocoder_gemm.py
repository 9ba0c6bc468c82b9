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

Thread: build time (the model thread).
"""

from __future__ import annotations

import copy
import logging
from collections import Counter
from dataclasses import replace

import torch

from realtime.runtime.cpu.gemm import Matrix
from realtime.runtime.cpu.plan import GemmPolicy, ShapeChoice, prepare_matrices

log = logging.getLogger(__name__)

ROWS = 128  # mel frames the backends are timed at: a 64-step window


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
    (``int8`` runs the vocoder fp32 as ``auto`` would)."""
    mode = "auto" if policy.mode == "int8" else policy.mode
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
        matrices, choices = prepare_matrices(weights, plan, device, dtype)
    packed = {id(lin): m for (_, _, lin), m in zip(found, matrices) if m.backend_for(ROWS) != "mm"}
    if not packed:
        return modules, choices
    out = []
    for module in modules:
        # A copy walks its modules in the original's order: pair them up.
        clone = copy.deepcopy(module)
        for (_, _, child), (parent, name, _) in zip(_linears(module), _linears(clone)):
            if id(child) in packed:
                setattr(parent, name, PackedLinear(packed[id(child)], child.bias))
        out.append(clone)
    backends = Counter(m.backend_for(ROWS) for m in matrices)
    log.info("vocoder gemm (%s, timed at %d frames): %s", mode, ROWS,
             ", ".join(f"{b} {n}" for b, n in sorted(backends.items())))
    return out, choices


def _linears(module: torch.nn.Module) -> list[tuple[torch.nn.Module, str, torch.nn.Linear]]:
    return [(parent, name, child) for parent in module.modules()
            for name, child in parent.named_children() if isinstance(child, torch.nn.Linear)]
