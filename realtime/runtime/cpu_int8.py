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
int16 and saturate on large inputs; ``needs_reduce_range()`` detects that once
per process by running a known product, and then inputs are quantized to 7
bits (``reduce_range``), as torch's own dynamic quantization does on x86.

Batch mates: the input scale is shared by the rows of one call, so a job's
int8 codes can depend (within int8 rounding) on the jobs batched with it.

Thread: packed once at build; called from the model thread.
"""

from __future__ import annotations

import contextlib
import logging
import warnings

import torch

log = logging.getLogger(__name__)

ENGINE = "fbgemm"
_reduce_range: bool | None = None  # measured once per process


def available() -> str | None:
    """None when int8 linears can run here, else the reason they cannot."""
    if ENGINE not in torch.backends.quantized.supported_engines:
        return f"this torch has no {ENGINE} quantized engine (x86 builds have it)"
    if not (hasattr(torch.ops.quantized, "linear_dynamic")
            and hasattr(torch.ops.quantized, "linear_prepack")):
        return "this torch has no quantized linear_dynamic/linear_prepack ops"
    return None


@contextlib.contextmanager
def _fbgemm():
    """Pack under the fbgemm engine (the process-wide setting is restored):
    the packed object then carries its engine's kernels."""
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = ENGINE
    try:
        with warnings.catch_warnings():
            # "quantized tensor creation is deprecated": said once in our log instead.
            warnings.simplefilter("ignore", UserWarning)
            yield
    finally:
        torch.backends.quantized.engine = before


def _prepack(weight: torch.Tensor):
    """fp32 [N, K] -> fbgemm's packed per-channel int8 weight."""
    w = weight.detach().float().contiguous()
    scale = (w.abs().amax(dim=1) / 127.0).clamp_min(1e-12).double()
    zero = torch.zeros(w.shape[0], dtype=torch.long)
    with _fbgemm():
        q = torch.quantize_per_channel(w, scale, zero, 0, torch.qint8)
        return torch.ops.quantized.linear_prepack(q, None)


def needs_reduce_range() -> bool:
    """True where fbgemm's int8 kernel saturates at full 8-bit inputs (CPUs
    without AVX-512 VNNI, or ``FBGEMM_ENABLE_INSTRUCTIONS=AVX2``). Measured once:
    ones (uint8 255) times ones (int8 127) over 64 inputs must give 64."""
    global _reduce_range
    if _reduce_range is None:
        packed = _prepack(torch.ones(8, 64))
        y = torch.ops.quantized.linear_dynamic(torch.ones(1, 64), packed, False)
        _reduce_range = bool((y - 64.0).abs().max() > 0.5)
        log.info("int8: fbgemm kernels %s; inputs quantized to %d bits",
                 "saturate at 8-bit inputs (no VNNI)" if _reduce_range else "exact at 8 bits",
                 7 if _reduce_range else 8)
    return _reduce_range


class Int8Packed:
    """``int8``: a fp32 CPU weight [N, K] as fbgemm's per-channel int8 copy;
    any row count. ``rows`` is unused (the API of the fp32 forms)."""

    backend = "int8"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        if weight.dim() != 2 or weight.device.type != "cpu":
            raise ValueError(f"need a 2-D CPU matrix, got {tuple(weight.shape)} on {weight.device}")
        self._reduce = needs_reduce_range()
        self._packed = _prepack(weight)
        self.nbytes = weight.numel() + weight.shape[0] * 8  # int8 + per-channel scales

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.quantized.linear_dynamic(x, self._packed, self._reduce)
