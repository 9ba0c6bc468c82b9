"""Which reduced-precision matrix kernels this CPU runs natively, as the libraries see it.

bf16 and int8 products are only worth a candidate's place where the CPU has
instructions for them: AMX tiles (``amx_bf16``, ``amx_int8``), AVX-512-BF16
or AVX-512 VNNI. Elsewhere oneDNN emulates bf16 (about 3x slower than fp32
on AVX2) and its int8 kernels add uint8 x int8 pairs in int16, which can
saturate (``cpu.int8``'s docstring). The hardware flags alone are not the
answer: ``ONEDNN_MAX_CPU_ISA`` (or ``DNNL_MAX_CPU_ISA``) caps what oneDNN
dispatches to and ``ATEN_CPU_CAPABILITY`` what torch's own kernels use, which
is how an AVX2-only machine is emulated on an AVX-512 one (``cpu.info``'s
``ISA_LIMITS``). So each probe reads both, and a capped library counts as
lacking the instructions: under the AVX2 emulation no AMX or bf16 candidate
is offered, as on a real AVX2 machine.

The probes are pure functions of (flags, environment) so tests can simulate
any CPU; ``flags()``/``os.environ`` are the defaults.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping

# oneDNN's ISA names in increasing order (its documented ``ONEDNN_MAX_CPU_ISA`` values).
ONEDNN_LEVELS = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX2_VNNI_2", "AVX512_CORE",
                 "AVX512_CORE_VNNI", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX10_1_512",
                 "AVX512_CORE_AMX", "AVX10_1_512_AMX", "AVX512_CORE_AMX_FP16",
                 "AVX10_1_512_AMX_FP16", "ALL", "DEFAULT")
_ATEN_OK = ("", "default", "avx512")  # torch kernel levels that leave AVX-512 on


def flags() -> set[str]:
    from realtime.engine.cpu.info import isa_flags

    return set(isa_flags())


def _onednn_cap(env: Mapping[str, str]) -> tuple[int, str]:
    """(rank of the highest ISA oneDNN may use, the variable that says so)."""
    for var in ("ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
        value = env.get(var, "").strip().upper()
        if value:
            rank = ONEDNN_LEVELS.index(value) if value in ONEDNN_LEVELS else len(ONEDNN_LEVELS)
            return rank, f"{var}={value}"
    return len(ONEDNN_LEVELS), ""


def _aten_capped(env: Mapping[str, str]) -> str | None:
    value = env.get("ATEN_CPU_CAPABILITY", "").strip().lower()
    return None if value in _ATEN_OK else f"ATEN_CPU_CAPABILITY={value}"


def _missing(cpu_flags: Collection[str] | None, env: Mapping[str, str] | None,
             needs: dict[str, str], level: str) -> str | None:
    """Why none of ``needs`` (flag -> its name) is usable by oneDNN capped at
    ``env``'s limit, when at least ``level`` is required; None if one is."""
    cpu_flags = flags() if cpu_flags is None else set(cpu_flags)
    env = os.environ if env is None else env
    if not set(needs) & set(cpu_flags):
        return f"this CPU has neither {' nor '.join(needs.values())}"
    rank, var = _onednn_cap(env)
    if rank < ONEDNN_LEVELS.index(level):
        return f"oneDNN is limited by {var} (below {level})"
    return None


def bf16_unavailable(cpu_flags: Collection[str] | None = None,
                     env: Mapping[str, str] | None = None) -> str | None:
    """None where bf16 matrix products run natively (AMX-BF16 or AVX-512-BF16,
    and neither oneDNN nor torch capped below them), else why not (bf16
    would be emulated)."""
    reason = _missing(cpu_flags, env, {"amx_bf16": "AMX-BF16", "avx512_bf16": "AVX-512-BF16"},
                      "AVX512_CORE_BF16")
    capped = _aten_capped(os.environ if env is None else env)
    if reason is None and capped:
        reason = f"torch's kernels are limited by {capped}"
    return None if reason is None else reason + " (bf16 would be emulated)"


def amx_bf16(cpu_flags: Collection[str] | None = None, env: Mapping[str, str] | None = None) -> bool:
    """AMX tiles for bf16 usable by oneDNN (a detail for the log line)."""
    cpu_flags = flags() if cpu_flags is None else set(cpu_flags)
    env = os.environ if env is None else env
    return ("amx_bf16" in cpu_flags and bf16_unavailable(cpu_flags, env) is None
            and _onednn_cap(env)[0] >= ONEDNN_LEVELS.index("AVX512_CORE_AMX"))


def onednn_int8_unavailable(cpu_flags: Collection[str] | None = None,
                            env: Mapping[str, str] | None = None) -> str | None:
    """None where oneDNN's int8 kernels run with exact full-range products
    (AMX-INT8 or AVX-512 VNNI, oneDNN not capped below VNNI), else why not."""
    return _missing(cpu_flags, env, {"amx_int8": "AMX-INT8", "avx512_vnni": "AVX-512 VNNI"},
                    "AVX512_CORE_VNNI")
