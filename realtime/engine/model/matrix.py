"""A linear layer's weight as the right-hand side of ``x @ W^T``, transposed once.

``Matrix(weight)`` keeps ``weight`` [N, K] as a contiguous [K, N] tensor (no
copy when it already is one: ``prepared_weights`` hands out such views) and
multiplies with ``torch.mm``, the BLAS product ``nn.Linear`` runs, on any
device and dtype. On a CPU, torch's decoder
(``--cpu-engine torch``) is the fp32 reference whose codes match upstream's;
the fast CPU forms are ONNX Runtime's (``ort``), which beat our own GEMM plans,
int8 and bf16 forms on every CPU measured, so those were retired
(docs/runtime.md, "Retired").

Thread: built once; called from the model thread.
"""

from __future__ import annotations

import torch


class Matrix:
    """``weight`` [N, K] as the right-hand side of ``x`` [M, K] -> [M, N]."""

    __slots__ = ("w_t", "shape", "nbytes")

    def __init__(self, weight: torch.Tensor):
        self.w_t = weight.t().contiguous()  # [K, N]
        self.shape = tuple(self.w_t.shape)  # (K, N): in, out
        self.nbytes = self.w_t.numel() * self.w_t.element_size()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.mm(x, self.w_t)


def matmul(x: torch.Tensor, w: Matrix) -> torch.Tensor:
    """``x`` [M, K] @ the matrix ``w`` [K, N] -> [M, N]."""
    return w(x)
