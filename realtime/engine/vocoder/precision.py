"""The vocoder's linears in a lower precision, the head and the ISTFT in fp32.

Most of the Decoder's and Vocos's work is their ConvNeXt blocks' pointwise
linears (``pwconv1``/``pwconv2``: 768 -> 3072 -> 768 in the Decoder, 512 ->
1536 -> 512 in Vocos, per frame). ``with_precision`` returns copies of the
two models whose block linears run as asked:

- ``fp32``: unchanged;
- ``tf32`` (CUDA only): the same fp32 weights, each linear's matmul with
  TF32 allowed for just that call (``torch.backends.cuda.matmul.allow_tf32``
  set around it and restored), so nothing else of the process changes (the
  GPT's fp32 logits stay exact fp32);
- ``bf16``: weights stored in bf16, inputs cast to bf16 for the matmul, the
  product back in fp32 plus the fp32 bias.

Never touched: Vocos's head (``head.out``, whose output is exponentiated
into the magnitude spectrum: a relative error there is a gain error), the
ISTFT, the convolutions and the norms. ``auto``: tf32 on CUDA, fp32
elsewhere. Error against fp32 (tiny random models of the real depth): the
figures are in tests/test_vocoder_precision.py and docs/runtime.md; the
first GPU run measures the full-size ones (``tools/gpu_sections.py``'s
``vocoder_precision``).

Thread: any (modules are built once, then used from the model thread).
"""

from __future__ import annotations

import copy
import logging

import torch
import torch.nn.functional as F

from realtime.engine.api import VOCODER_PRECISIONS

log = logging.getLogger(__name__)


def vocoder_precision_for(name: str, device: torch.device) -> str:
    """The precision ``name`` means on ``device``; ``tf32`` off CUDA, ``int8``
    off the CPU (it is the ONNX Runtime vocoder's: ``ort.vocoder``), or an
    unknown name, raises ``ValueError``."""
    if name not in VOCODER_PRECISIONS:
        raise ValueError(f"unknown vocoder precision {name!r} ({', '.join(VOCODER_PRECISIONS)})")
    if name == "auto":
        return "tf32" if device.type == "cuda" else "fp32"
    if name == "tf32" and device.type != "cuda":
        raise ValueError(f"vocoder precision tf32 is a CUDA mode, not for {device}")
    if name == "int8" and device.type != "cpu":
        raise ValueError(f"vocoder precision int8 is a CPU mode (ONNX Runtime), not for {device}")
    return name


class TF32Linear(torch.nn.Module):
    """``linear`` with TF32 allowed for its matmul only."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.linear = linear

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        matmul = torch.backends.cuda.matmul
        before = matmul.allow_tf32
        matmul.allow_tf32 = True
        try:
            return self.linear(x)
        finally:
            matmul.allow_tf32 = before


class BF16Linear(torch.nn.Module):
    """``linear`` with bf16 weights and matmul, fp32 in, out and bias."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight = torch.nn.Parameter(linear.weight.detach().to(torch.bfloat16), requires_grad=False)
        bias = linear.bias
        self.bias = None if bias is None else torch.nn.Parameter(bias.detach().float(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.linear(x.to(torch.bfloat16), self.weight).float()
        return y if self.bias is None else y.add_(self.bias)


_WRAPPERS = {"tf32": TF32Linear, "bf16": BF16Linear}


def block_linears(model: torch.nn.Module) -> list[tuple[torch.nn.Module, str]]:
    """(parent, attribute) of every ``nn.Linear`` in ``model`` outside a
    Vocos head (``head.out`` stays fp32)."""
    head = getattr(model, "head", None)
    skip = set() if head is None else {id(m) for m in head.modules()}
    found = []
    for parent in model.modules():
        if id(parent) in skip:
            continue
        for name, child in parent.named_children():
            if isinstance(child, torch.nn.Linear) and id(child) not in skip:
                found.append((parent, name))
    return found


def with_precision(decoder: torch.nn.Module, vocos: torch.nn.Module, precision: str
                   ) -> tuple[torch.nn.Module, torch.nn.Module]:
    """The two models with their block linears in ``precision`` (copies;
    the models themselves when ``fp32``). ``precision`` is resolved
    (``vocoder_precision_for``)."""
    if precision == "fp32":
        return decoder, vocos
    wrap = _WRAPPERS[precision]
    out = []
    for model in (decoder, vocos):
        model = copy.deepcopy(model)
        linears = block_linears(model)
        for parent, name in linears:
            setattr(parent, name, wrap(getattr(parent, name)))
        out.append(model)
        log.debug("vocoder: %d linears of %s in %s", len(linears), type(model).__name__, precision)
    log.info("vocoder: block linears in %s; the head and the ISTFT in fp32", precision)
    return out[0], out[1]
