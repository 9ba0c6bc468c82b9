"""int8 decoder weights on CPU: dynamically quantized linears (fbgemm).

``--precision int8`` stores each decoder matrix as int8 with one scale per
output channel (symmetric, zero point 0) and multiplies with
``torch.ops.quantized.linear_dynamic``: per call, fbgemm quantizes the input
rows to uint8 (one affine scale for the whole [M, K] input, from its min and
max), multiplies in integers and returns fp32. A quarter of the fp32 weight
bytes, so the memory-bound decode step is ~3x faster on two cores (the 80
matrices: 10 / 15 ms at 1 / 8 rows against oneDNN fp32's 37 / 37 ms).

Why these ops: torch's own ``quantize_dynamic`` module swap is deprecated in
favour of torchao, but torchao 0.18's int8 path on CPU is fast only under
``torch.compile`` (eager: 113 ms for the 80 matrices at 1 row, slower than
fp32); the aten quantized ops it would replace are the kernels
``quantize_dynamic`` itself calls, and run eager on AVX2 and AVX-512 alike.
torch marks quantized tensor creation deprecated too: if a future torch drops
these ops, ``available()`` says so and int8 is refused with that reason.

Without AVX-512 VNNI fbgemm's kernels add pairs of uint8 x int8 products in
int16, which saturates past 32767 (255 * 127 * 2 = 64770). torch's own dynamic
quantization avoids that with 7-bit inputs (``reduce_range``); 7-bit weights
([-63, 63]: 255 * 63 * 2 = 32130) avoid it at far less cost, as per-channel
weight scales lose little while the one per-tensor input scale is where int8
loses most. Relative error of a [2304, 768] matrix on 8 rows with outlier
channels: 8-bit weights and inputs 3.4% (VNNI only); 7-bit inputs 6.8%; 7-bit
weights 3.6%. ``weight_max()`` runs a full-range product once per process
and picks 8-bit weights where the kernel is exact, else 7-bit ones (checked
exact too; if a kernel ever saturated even then, inputs go to 7 bits).

Batch mates: the input scale is shared by the rows of one call, so a job's
int8 codes can depend (within int8 rounding) on the jobs batched with it.

Thread: packed once at build; called from the model thread.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

import torch

from realtime.engine.cpu import form_state, isa
from realtime.engine.cpu.gemm import Packed

log = logging.getLogger(__name__)

ENGINE = "fbgemm"
_format: tuple[int, bool] | None = None  # (weight max, reduce_range), measured once


def available() -> str | None:
    """None when int8 linears can run here, else the reason they cannot."""
    if ENGINE not in torch.backends.quantized.supported_engines:
        return f"this torch has no {ENGINE} quantized engine (x86 builds have it)"
    if not (hasattr(torch.ops.quantized, "linear_dynamic")
            and hasattr(torch.ops.quantized, "linear_prepack")):
        return "this torch has no quantized linear_dynamic/linear_prepack ops"
    return None


@contextlib.contextmanager
def _engine(name: str = ENGINE):
    """Pack under the quantized engine ``name`` (the process-wide setting is
    restored): the packed object then carries its engine's kernels."""
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = name
    try:
        with warnings.catch_warnings():
            # "quantized tensor creation is deprecated": said once in our log instead.
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        torch.backends.quantized.engine = before


def _prepack(weight: torch.Tensor, weight_max: int, engine: str = ENGINE):
    """fp32 [N, K] -> ``engine``'s packed per-channel int8 weight in [-weight_max, weight_max]."""
    w = weight.detach().float().contiguous()
    scale = (w.abs().amax(dim=1) / weight_max).clamp_min(1e-12).double()
    zero = torch.zeros(w.shape[0], dtype=torch.long)
    with _engine(engine):
        q = torch.quantize_per_channel(w, scale, zero, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(q, None)


def _repack(q: torch.Tensor, scale: torch.Tensor, engine: str):
    """int8 [N, K] and float64 scales [N] (a ``_prepack``'s, unpacked) ->
    ``engine``'s packed weight again; only the packing is paid (fbgemm: ~30%
    of ``_prepack``'s time on the decoder's matrices)."""
    with _engine(engine):
        qt = torch._make_per_channel_quantized_tensor(q, scale, torch.zeros_like(scale, dtype=torch.long), 0)
        return torch.ops.quantized.linear_prepack(qt, None)


def _unpacked(packed) -> dict[str, torch.Tensor]:
    """The int8 values and scales a packed weight was made from."""
    q, _ = torch.ops.quantized.linear_unpack(packed)
    return {"q": q.int_repr().contiguous(), "scale": q.q_per_channel_scales().contiguous()}


def _exact(weight_max: int, reduce_range: bool, engine: str = ENGINE) -> bool:
    """Ones (uint8 255) times ones (int8 ``weight_max``) over 64 inputs give 64?"""
    packed = _prepack(torch.ones(8, 64), weight_max, engine)
    y = torch.ops.quantized.linear_dynamic(torch.ones(1, 64), packed, reduce_range)
    return bool((y - 64.0).abs().max() <= 0.5)


def int8_format() -> tuple[int, bool]:
    """(largest weight step, 7-bit inputs?) for this CPU's fbgemm kernels:
    (127, False) where full-range products are exact (AVX-512 VNNI), else
    (63, False); (63, True) only if even 7-bit weights saturate. Measured once."""
    global _format
    if _format is None:
        found = next(((w, r) for w, r in ((127, False), (63, False)) if _exact(w, r)), (63, True))
        bits = 8 if found[0] == 127 else 7
        log.log(logging.WARNING if found[1] else logging.INFO,
                "int8: %d-bit weights x %d-bit inputs (%s)", bits, 7 if found[1] else 8,
                "exact full-range products" if bits == 8 else "this CPU's kernels saturate "
                "on 8-bit weights x 8-bit inputs (no VNNI)")
        _format = found
    return _format


class Int8Packed:
    """``int8``: a fp32 CPU weight [N, K] as fbgemm's per-channel int8 copy;
    any row count. ``rows`` is unused (the API of the fp32 forms)."""

    backend = "int8"
    any_rows = True

    engine = ENGINE

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        if weight.dim() != 2 or weight.device.type != "cpu":
            raise ValueError(f"need a 2-D CPU matrix, got {tuple(weight.shape)} on {weight.device}")
        weight_max, self._reduce = self._format()
        self._packed = _prepack(weight, weight_max, self.engine)
        self.nbytes = weight.numel() + weight.shape[0] * 8  # int8 + per-channel scales

    @staticmethod
    def _format() -> tuple[int, bool]:
        return int8_format()

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.ops.quantized.linear_dynamic(x, self._packed, self._reduce)
        return out if bias is None else out.add_(bias)

    @classmethod
    def state_form(cls) -> str:
        """What ``state()`` holds (``cpu.form_state``): the same for every
        engine packing the same values (fbgemm's and oneDNN's on VNNI)."""
        weight_max = cls._format()[0]
        return f"int8 per-channel [-{weight_max}, {weight_max}] [N, K]; scale float64 [N]"

    def state(self) -> dict[str, torch.Tensor]:
        return _unpacked(self._packed)

    @classmethod
    def from_state(cls, state, shape: tuple[int, int], rows: int = 0) -> Int8Packed:
        n, k = shape
        t = form_state.check(state, {"q": ((n, k), torch.int8), "scale": ((n,), torch.float64)})
        form = cls.__new__(cls)
        form._reduce = cls._format()[1]
        form._packed = _repack(t["q"], t["scale"], cls.engine)
        form.nbytes = n * k + n * 8
        return form


_onednn_exact: bool | None = None  # oneDNN's full-range product checked once


def _onednn_unavailable() -> str | None:
    """None where oneDNN's dynamic int8 linears are a candidate: its engine is
    built in, the CPU has AMX-INT8 or VNNI for it (``cpu.isa``) and a
    full-range product is exact."""
    global _onednn_exact
    if "onednn" not in torch.backends.quantized.supported_engines:
        return "this torch has no onednn quantized engine"
    reason = isa.onednn_int8_unavailable()
    if reason is not None:
        return reason
    if _onednn_exact is None:
        _onednn_exact = _exact(127, False, "onednn")
    return None if _onednn_exact else "oneDNN's int8 product saturates on full-range values"


class Int8Onednn(Int8Packed):
    """``int8_onednn``: the same per-channel 8-bit weight and per-call input
    quantization as ``int8``, packed for oneDNN's kernels (AMX-INT8 or VNNI)."""

    backend = "int8_onednn"
    engine = "onednn"

    @staticmethod
    def _format() -> tuple[int, bool]:
        return 127, False  # exact where offered (``_onednn_unavailable``)


class Int8WeightOnly:
    """``int8_woq``: per-channel 8-bit weights dequantized inside the kernel
    (``aten._weight_int8pack_mm``), inputs rounded to bf16 instead of
    quantized: no per-call input scale, so a job's result does not depend on
    its batch mates."""

    backend = "int8_woq"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        if weight.dim() != 2 or weight.device.type != "cpu":
            raise ValueError(f"need a 2-D CPU matrix, got {tuple(weight.shape)} on {weight.device}")
        w = weight.detach().float()
        scale = (w.abs().amax(dim=1) / 127).clamp_min(1e-12)
        self._adopt(torch.round(w / scale[:, None]).clamp_(-127, 127).to(torch.int8).contiguous(),
                    scale.to(torch.bfloat16))

    def _adopt(self, q: torch.Tensor, scale: torch.Tensor) -> None:
        self._q, self._scale = q, scale
        self.nbytes = self._q.numel() + self._scale.numel() * 2

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        out = torch.ops.aten._weight_int8pack_mm(x.to(torch.bfloat16), self._q, self._scale).float()
        return out if bias is None else out.add_(bias)

    @classmethod
    def state_form(cls) -> str:
        """What ``state()`` holds (``cpu.form_state``)."""
        return "int8 per-channel [-127, 127] rounded [N, K]; scale bf16 [N]"

    def state(self) -> dict[str, torch.Tensor]:
        return {"q": self._q, "scale": self._scale}

    @classmethod
    def from_state(cls, state, shape: tuple[int, int], rows: int = 0) -> Int8WeightOnly:
        n, k = shape
        t = form_state.check(state, {"q": ((n, k), torch.int8), "scale": ((n,), torch.bfloat16)})
        form = cls.__new__(cls)
        form._adopt(t["q"], t["scale"])
        return form


PACKERS: dict[str, type[Packed]] = {"int8": Int8Packed, "int8_onednn": Int8Onednn,
                                    "int8_woq": Int8WeightOnly}


def backends() -> tuple[str, ...]:
    """The int8 forms this machine may use, fbgemm's first (empty when int8
    cannot run); the others where the CPU has the instructions they need."""
    if available() is not None:
        return ()
    out = ["int8"]
    reason = _onednn_unavailable()
    if reason is None:
        out.append("int8_onednn")
    else:
        log.debug("int8: oneDNN's kernels not a candidate (%s)", reason)
    if hasattr(torch.ops.aten, "_weight_int8pack_mm") and isa.bf16_unavailable() is None:
        out.append("int8_woq")
    return tuple(out)
