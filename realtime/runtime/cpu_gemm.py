"""Right-hand matrices of the decoder's linears, pre-packed for MKL on CPU fp32.

A decode step multiplies a few rows (one per job) by every weight matrix.
At 2-8 rows MKL's plain sgemm repacks the weight on every call and runs far
below memory speed; MKL can instead pack a weight once for a fixed row count
(``cblas_sgemm_pack``, exposed as ``torch.ops.mkl._mkl_reorder_linear_weight``)
and multiply against the packed copy (``torch.ops.mkl._mkl_linear``). On a
2-core AVX-512 host this takes the 80 decoder matrices from ~67 ms to ~53 ms
per step at 8 rows, and its results are bit-identical to ``torch.mm``'s.

One packed copy serves every batch from 2 to ``rows``: smaller batches are
zero-padded up to ``rows`` (still faster than ``torch.mm`` at 2-7 rows, and
padding rows do not touch the real rows' results). One row (memory-bound,
where ``torch.mm`` is fastest) and more than ``rows`` rows (prefill) use
``torch.mm`` on the plain matrix, which is kept. MKL's packed layout is
about 1.9x the plain matrix, so packing costs that much extra memory.

Thread: built once; ``apply`` from the model thread.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

PACK_ROWS = 8  # the decode batch the packed copy is built for
_unavailable = False  # set when MKL refused to pack once: stop trying


def packing_supported(device: torch.device, dtype: torch.dtype) -> bool:
    """True where MKL's packed sgemm can run: CPU, fp32, a torch built with MKL."""
    return (device.type == "cpu" and dtype == torch.float32 and torch.backends.mkl.is_available()
            and hasattr(torch.ops.mkl, "_mkl_linear"))


class PackedMatrix:
    """A linear's ``weight`` [N, K] (out, in; fp32, CPU) as ``w_t`` [K, N] plus
    MKL's packed copy for ``rows``-row inputs.

    ``apply(x)`` computes ``x @ w_t`` for ``x`` [M, K] and returns [M, N].
    Raises RuntimeError from MKL if packing fails (the caller falls back).
    """

    def __init__(self, weight: torch.Tensor, rows: int = PACK_ROWS):
        if weight.dim() != 2 or weight.dtype != torch.float32 or weight.device.type != "cpu":
            raise ValueError(f"need a 2-D fp32 CPU matrix, got {tuple(weight.shape)} "
                             f"{weight.dtype} on {weight.device}")
        self.rows = rows
        self._packed = torch.ops.mkl._mkl_reorder_linear_weight(weight.contiguous(), rows)
        self.w_t = weight.t().contiguous()
        # The op reads only the sizes of this plain matrix while the row count matches.
        self._w = self.w_t.t()

    @property
    def shape(self) -> torch.Size:
        return self.w_t.shape

    @property
    def packed_nbytes(self) -> int:
        return self._packed.numel() * 4

    def apply(self, x: torch.Tensor) -> torch.Tensor:
        m = x.shape[0]
        if m == self.rows:
            return torch.ops.mkl._mkl_linear(x, self._packed, self._w, None, self.rows)
        if 1 < m < self.rows:
            padded = F.pad(x, (0, 0, 0, self.rows - m))
            return torch.ops.mkl._mkl_linear(padded, self._packed, self._w, None, self.rows)[:m]
        return torch.mm(x, self.w_t)


def matmul(x: torch.Tensor, w: torch.Tensor | PackedMatrix) -> torch.Tensor:
    """``x`` [M, K] @ ``w`` [K, N]: a plain matrix or a ``PackedMatrix``."""
    if isinstance(w, PackedMatrix):
        return w.apply(x)
    return torch.mm(x, w)


def prepare(weight: torch.Tensor, rows: int = PACK_ROWS) -> torch.Tensor | PackedMatrix:
    """A linear's ``weight`` [N, K] as the right-hand matrix of ``matmul``:
    packed where supported (and ``rows`` > 1), else the plain ``weight.t()`` [K, N]."""
    global _unavailable
    if _unavailable or rows <= 1 or not packing_supported(weight.device, weight.dtype):
        return weight.t().contiguous()
    try:
        return PackedMatrix(weight, rows)
    except RuntimeError as exc:  # e.g. an MKL build without the packed API
        log.warning("MKL weight packing unavailable (%s); using torch.mm", exc)
        _unavailable = True
        return weight.t().contiguous()
