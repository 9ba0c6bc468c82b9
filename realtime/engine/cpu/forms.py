"""Every form a decoder matrix can take, grouped in the families a mode measures among.

A measured mode (``cpu.plan``) chooses per (matrix shape, row class) among
one family's forms: ``auto`` among fp32's backends (``cpu.gemm``), ``int8``
among the int8 forms (``cpu.int8``), ``bf16`` among the bf16 ones
(``cpu.bf16``). Which forms a family offers depends on what this CPU runs
natively (``cpu.isa``): no AMX, VNNI or bf16 form is offered where the
instructions are missing or a library is capped below them.
"""

from __future__ import annotations

from collections import ChainMap

import torch

from realtime.engine.cpu import bf16 as cpu_bf16
from realtime.engine.cpu import gemm as cpu_gemm
from realtime.engine.cpu import int8 as cpu_int8
from realtime.engine.cpu.gemm import FP32_BACKENDS, Packed

# Every form a matrix can take: fp32 (``cpu.gemm``), int8 (``cpu.int8``), bf16
# (``cpu.bf16``); a live view of the three (a test's stand-in in one shows here).
PACKERS: ChainMap[str, type[Packed]] = ChainMap(cpu_gemm.PACKERS, cpu_int8.PACKERS,
                                                cpu_bf16.PACKERS)
# Modes whose backend is measured among a family's forms; the first is the
# family's plain form (unmeasured tiny shapes, a failed packing).
FAMILIES = {"auto": "mm", "int8": "int8", "bf16": "bf16"}


def candidates(device: torch.device, dtype: torch.dtype, mode: str = "auto") -> tuple[str, ...]:
    """The forms mode ``mode``'s measurement chooses among here: fp32's
    available backends for ``auto``; for ``int8`` and ``bf16`` on a CPU the
    forms this CPU runs natively (``cpu.int8.backends``, ``cpu.bf16.backends``;
    none where it lacks the instructions)."""
    if mode == "int8":
        return cpu_int8.backends() if device.type == "cpu" else ()
    if mode == "bf16":
        return cpu_bf16.backends() if device.type == "cpu" and dtype == torch.float32 else ()
    return tuple(b for b in FP32_BACKENDS if cpu_gemm.backend_available(b, device, dtype))


def family_of(mode: str) -> str:
    """The family (``FAMILIES``' key) a mode or a single backend belongs to."""
    if mode in FAMILIES:
        return mode
    return "int8" if mode in cpu_int8.PACKERS else "bf16" if mode in cpu_bf16.PACKERS else "auto"
