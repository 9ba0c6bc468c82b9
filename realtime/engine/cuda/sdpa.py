"""Which kernels ``scaled_dot_product_attention`` may use on CUDA, pinned.

Recent torch builds prefer cuDNN attention on Hopper. cuDNN builds an
execution plan per exact shape, and eager decode changes its KV length every
step (the runner attends up to the batch's longest row), so each eager step
may pay a plan build (reported at 40-400 ms), and strided K/V views may be
refused. ``pin_attention`` turns cuDNN attention off for the process, which
leaves flash attention (no mask: the prefill's causal attention) and the
memory-efficient kernel (additive masks: every decode step), with the math
kernel as the last resort; ``backends`` says what is enabled, for the log
and the GPU check's report. The flags are process-wide torch settings.

Thread: any; call before the first CUDA step (``build_runner`` does).
"""

from __future__ import annotations

import logging

import torch

log = logging.getLogger(__name__)

PINNED = "flash (prefill) + mem_efficient (masked decode); cuDNN attention off"


def backends() -> dict[str, bool]:
    """The SDPA backends torch may pick now."""
    cuda = torch.backends.cuda
    return {"cudnn": cuda.cudnn_sdp_enabled(), "flash": cuda.flash_sdp_enabled(),
            "mem_efficient": cuda.mem_efficient_sdp_enabled(), "math": cuda.math_sdp_enabled()}


def pin_attention() -> dict[str, bool]:
    """Disable cuDNN attention (module docstring); returns ``backends()``."""
    torch.backends.cuda.enable_cudnn_sdp(False)
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.enable_mem_efficient_sdp(True)
    torch.backends.cuda.enable_math_sdp(True)
    enabled = backends()
    log.info("attention: %s (enabled: %s)", PINNED, ", ".join(k for k, v in enabled.items() if v))
    return enabled
