"""bf16 decoder weights on CPU: ``--precision bf16``'s GEMM operands.

Each decoder matrix is kept as bf16 (half the fp32 bytes) and multiplied in
bf16 with fp32 accumulation by oneDNN, which runs AMX tiles or AVX-512-BF16
where the CPU has them; the input rows are rounded to bf16 per call and the
output comes back fp32. Everything else stays fp32: the residual stream,
RMSNorm, RoPE, the K/V cache and attention, the logit heads and sampling (the
GPU's mixed precision keeps its activations in bf16 too; on the CPU the step is
the weights streaming from memory, so fp32 activations cost little and keep
the hidden states closer to fp32's).

Two forms, measured per shape and row count like the fp32 backends
(``cpu.plan``): ``bf16`` (``F.linear`` on the bf16 matrix: oneDNN's matmul
primitive) and ``bf16_onednn`` (oneDNN's blocked copy for the batch size,
``_linear_pointwise``). Offered only where ``cpu.isa.bf16_unavailable()`` is
None: without native bf16 (an AVX2 machine, or ``ONEDNN_MAX_CPU_ISA=AVX2``)
bf16 is emulated and slower than fp32, so ``--precision bf16`` then runs
fp32 and says why.

Thread: packed once at build; called from the model thread.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from realtime.engine.cpu import form_state, isa
from realtime.engine.cpu.gemm import Packed


def available() -> str | None:
    """None when bf16 products run natively here, else the reason they do not."""
    if not torch.backends.mkldnn.is_available():
        return "this torch is built without oneDNN"
    return isa.bf16_unavailable()


def _check(weight: torch.Tensor) -> torch.Tensor:
    if weight.dim() != 2 or weight.device.type != "cpu":
        raise ValueError(f"need a 2-D CPU matrix, got {tuple(weight.shape)} on {weight.device}")
    return weight.detach().to(torch.bfloat16).contiguous()


class Bf16Linear:
    """``bf16``: the weight [N, K] in bf16, ``F.linear`` (oneDNN matmul); any rows."""

    backend = "bf16"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        self._adopt(_check(weight), rows)

    def _adopt(self, w: torch.Tensor, rows: int) -> None:
        self._w = w
        self.nbytes = w.numel() * 2

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        out = F.linear(x.to(torch.bfloat16), self._w).float()
        return out if bias is None else out.add_(bias)

    @classmethod
    def state_form(cls) -> str:
        """What ``state()`` holds (``cpu.form_state``): the same for both bf16 forms."""
        return "bf16 [N, K] rounded from fp32"

    def state(self) -> dict[str, torch.Tensor]:
        return {"w": self._w}

    @classmethod
    def from_state(cls, state, shape: tuple[int, int], rows: int = 0):
        t = form_state.check(state, {"w": (tuple(shape), torch.bfloat16)})
        form = cls.__new__(cls)
        form._adopt(t["w"], rows)
        return form


class Bf16Onednn(Bf16Linear):
    """``bf16_onednn``: oneDNN's blocked bf16 copy of [N, K], tuned for
    ``rows``-row inputs (a hint: any row count runs); its state is the plain
    bf16 matrix (``to_dense``), reordered again from a cached one."""

    backend = "bf16_onednn"

    def _adopt(self, w: torch.Tensor, rows: int) -> None:
        self._packed = torch.ops.mkldnn._reorder_linear_weight(w, max(rows, 1))
        self.nbytes = w.numel() * 2

    def state(self) -> dict[str, torch.Tensor]:
        return {"w": self._packed.to_dense()}

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.ops.mkldnn._linear_pointwise(x.to(torch.bfloat16), self._packed, None,
                                                 "none", [], "").float()
        return out if bias is None else out.add_(bias)


PACKERS: dict[str, type[Packed]] = {"bf16": Bf16Linear, "bf16_onednn": Bf16Onednn}


def backends() -> tuple[str, ...]:
    """The bf16 forms this machine may use (none without native bf16)."""
    if available() is not None:
        return ()
    return ("bf16", "bf16_onednn") if hasattr(torch.ops.mkldnn, "_reorder_linear_weight") else ("bf16",)
