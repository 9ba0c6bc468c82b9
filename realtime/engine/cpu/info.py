"""What CPU the runtime runs on, in the terms that decide its GEMM speed.

``describe()`` gives one line for logs and benches: the model name, the ISA
flags that matter (AVX2, AVX-512, VNNI, AMX), the kernel level torch's own
code runs at (``ATEN_CPU_CAPABILITY``) and any instruction-set limits set for
MKL, oneDNN or fbgemm in the environment (the way an AVX2-only machine is
emulated on an AVX-512 one).
"""

from __future__ import annotations

import os
import platform

# Environment variables that restrict the instruction set of a library torch uses.
ISA_LIMITS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA",
              "FBGEMM_ENABLE_INSTRUCTIONS")
_FLAGS = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
          "avx_vnni", "amx_tile", "amx_bf16", "amx_int8")


def _cpuinfo() -> tuple[str, set[str], str]:
    """(model name, flags, family/model) from /proc/cpuinfo; blanks elsewhere."""
    name, flags, family, model = platform.processor() or "unknown", set(), "?", "?"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name":
                    name = value
                elif key == "flags":
                    flags = set(value.split())
                elif key == "cpu family":
                    family = value
                elif key == "model":
                    model = value
                if not line.strip() and flags:
                    break  # the first processor is enough
    except OSError:
        pass
    return name, flags, f"family {family} model {model}"


def isa_flags() -> list[str]:
    """The flags of ``_FLAGS`` this CPU has."""
    return [f for f in _FLAGS if f in _cpuinfo()[1]]


def describe() -> str:
    """E.g. ``AMD EPYC (family 25 model 17; avx2 fma avx512f ...; torch AVX512)``."""
    import torch

    name, _, ident = _cpuinfo()
    limits = [f"{k}={os.environ[k]}" for k in ISA_LIMITS if os.environ.get(k)]
    parts = [ident, " ".join(isa_flags()) or "no AVX2",
             f"torch kernels {torch.backends.cpu.get_cpu_capability()}"]
    if limits:
        parts.append("limited by " + " ".join(limits))
    return f"{name} ({'; '.join(parts)}; {os.cpu_count()} CPUs)"
