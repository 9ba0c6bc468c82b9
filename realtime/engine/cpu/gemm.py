"""The decoder's weight matrices as GEMM operands, one packed form per backend.

A decode step multiplies a few rows (one per job) by every weight matrix; on a
CPU that is 85-90% of the step, and which library multiplies fastest depends
on the machine (measured on 2 cores, the decoder's 80 matrices, 1 / 8 rows):

- ``mm``: ``torch.mm`` against the pre-transposed matrix (MKL's sgemm).
  AMD EPYC Zen 4: 47 / 135 ms (MKL takes a slow path off Intel).
- ``mkl``: MKL's packed sgemm (``cblas_sgemm_pack``, exposed as
  ``torch.ops.mkl._mkl_reorder_linear_weight`` / ``_mkl_linear``), packed for
  one row count; fewer rows are zero-padded up to it (padding rows never touch
  the real rows' results). Helps on Intel AVX-512 (~67 -> ~53 ms at 8 rows),
  nothing on AMD (115 ms at 8 rows). Its layout is ~1.9x the plain matrix.
- ``onednn``: oneDNN's blocked weight (``torch.ops.mkldnn._reorder_linear_weight``
  with the row count as a hint, then ``_linear_pointwise``): one copy the size
  of the plain matrix, any row count. AMD Zen 4: 37 / 37 ms (AVX2 only: 38 / 59).

Results of all three are within fp32 rounding of each other (not bit-identical:
the accumulation order differs). ``cpu.plan`` measures them per matrix shape
and row count at start-up and builds a ``Matrix`` from the winners; this module
only packs and multiplies. The int8 form lives in ``cpu.int8``.

Thread: packed once at build; ``Matrix.__call__`` from the model thread.
"""

from __future__ import annotations

from typing import Protocol

import torch
import torch.nn.functional as F

from realtime.engine.api import CPU_GEMMS

FP32_BACKENDS = CPU_GEMMS[1:]  # every mode but auto


class PlainMatrix:
    """``mm``: the weight [N, K] stored transposed, [K, N], for ``torch.mm``."""

    backend = "mm"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        self.w_t = weight.t().contiguous()
        self.nbytes = self.w_t.numel() * self.w_t.element_size()

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return torch.mm(x, self.w_t) if bias is None else torch.addmm(bias, x, self.w_t)


class MklPacked:
    """``mkl``: MKL's packed copy of a fp32 CPU weight [N, K] for ``rows``-row
    inputs; 1..rows rows run (padded) against it, more rows are refused."""

    backend = "mkl"
    any_rows = False

    def __init__(self, weight: torch.Tensor, rows: int):
        _check_fp32_cpu(weight)
        self.rows = rows
        self._packed = torch.ops.mkl._mkl_reorder_linear_weight(weight.contiguous(), rows)
        # The op reads only the sizes of the plain matrix while the row count
        # matches (always, thanks to the padding): a zero-stride stand-in
        # keeps the packed copy from pinning the plain one in memory.
        self._sizes = torch.zeros((), dtype=weight.dtype).expand(weight.shape)
        self.nbytes = self._packed.numel() * 4

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        m = x.shape[0]
        if m == self.rows:
            return torch.ops.mkl._mkl_linear(x, self._packed, self._sizes, bias, self.rows)
        if m > self.rows:
            raise ValueError(f"MKL weight packed for {self.rows} rows got {m}")
        padded = F.pad(x, (0, 0, 0, self.rows - m))
        return torch.ops.mkl._mkl_linear(padded, self._packed, self._sizes, bias, self.rows)[:m]


class OnednnPacked:
    """``onednn``: oneDNN's blocked copy of a fp32 CPU weight [N, K], tuned for
    ``rows``-row inputs (a hint: any row count runs)."""

    backend = "onednn"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int):
        _check_fp32_cpu(weight)
        self._packed = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), max(rows, 1))
        self.nbytes = weight.numel() * 4  # blocked, same element count

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return torch.ops.mkldnn._linear_pointwise(x, self._packed, bias, "none", [], "")


class Packed(Protocol):
    """A weight in the form one backend multiplies by: ``x [M, K] -> [M, N]``,
    plus ``bias`` [N] when given (``cpu_int8.Int8Packed`` is one too)."""

    backend: str
    any_rows: bool  # False: only row counts up to the packing's run
    nbytes: int

    def __init__(self, weight: torch.Tensor, rows: int) -> None: ...

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor: ...


PACKERS: dict[str, type[Packed]] = {
    "mm": PlainMatrix, "mkl": MklPacked, "onednn": OnednnPacked}


def _check_fp32_cpu(weight: torch.Tensor) -> None:
    if weight.dim() != 2 or weight.dtype != torch.float32 or weight.device.type != "cpu":
        raise ValueError(f"need a 2-D fp32 CPU matrix, got {tuple(weight.shape)} "
                         f"{weight.dtype} on {weight.device}")


def backend_available(name: str, device: torch.device, dtype: torch.dtype) -> bool:
    """True where ``name`` can run: ``mm`` everywhere; the packed forms on CPU
    fp32 with a torch built with MKL (``mkl``) or oneDNN (``onednn``)."""
    if name == "mm":
        return True
    if device.type != "cpu" or dtype != torch.float32:
        return False
    if name == "mkl":
        return torch.backends.mkl.is_available() and hasattr(torch.ops.mkl, "_mkl_linear")
    if name == "onednn":
        return (torch.backends.mkldnn.is_available()
                and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))
    return False


class Matrix:
    """A linear's weight [N, K] as the right-hand side of ``x`` [M, K] -> [M, N],
    with the packed form each row count M runs on.

    ``by_rows[m]`` serves M = m; larger M (prefill) goes to ``large``. Holds only
    the forms some row count uses (memory: each is about a full fp32 copy).
    """

    __slots__ = ("shape", "_by_rows", "_large", "forms")

    def __init__(self, shape: tuple[int, int], by_rows: dict[int, Packed], large: Packed):
        self.shape = shape  # (K, N): in, out
        self._by_rows = dict(by_rows)
        self._large = large
        forms = {id(p): p for p in (*by_rows.values(), large)}
        self.forms = tuple(forms.values())

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        return self._by_rows.get(x.shape[0], self._large)(x, bias)

    def set_form(self, rows: range | None, form: Packed) -> None:
        """Serve row counts ``rows`` (None: the larger ones, prefill) with
        ``form`` from now on (``cpu.plan_trial`` tries whole plans this way)."""
        if rows is None:
            self._large = form
        else:
            self._by_rows.update(dict.fromkeys(rows, form))
        forms = {id(p): p for p in (*self._by_rows.values(), self._large)}
        self.forms = tuple(forms.values())

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.forms)

    def backend_for(self, rows: int) -> str:
        return self._by_rows.get(rows, self._large).backend


def plain(weight: torch.Tensor) -> Matrix:
    """``weight`` [N, K] multiplied with ``torch.mm`` at every row count (any
    device and dtype: CUDA, bf16, or CPU fp32 without packing)."""
    form = PlainMatrix(weight)
    return Matrix((weight.shape[1], weight.shape[0]), {}, form)


def matmul(x: torch.Tensor, w: Matrix) -> torch.Tensor:
    """``x`` [M, K] @ the matrix ``w`` [K, N] -> [M, N]."""
    return w(x)
