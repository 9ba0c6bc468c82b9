"""``--precision bf16`` on a CPU: bf16 matrices where the ISA has them, fp32 where it does not.

The bf16 forms run on any x86 torch (emulated without AVX-512-BF16), so the
decode tests force ``cpu.bf16.available`` to "native" and run everywhere; the
ISA probe is a pure function of (flags, environment) and is tested on
simulated CPUs.
"""

from __future__ import annotations

import logging

import pytest
import torch
from runtime_fixtures import tiny_runner
from test_runtime_int8 import against_fp32, decodes_and_streams

from realtime.engine.build import pick_dtype
from realtime.engine.cpu import bf16 as cpu_bf16
from realtime.engine.cpu import forms, isa
from realtime.engine.cpu import plan as gemm_plan
from realtime.engine.cpu.plan import policy_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CPU = torch.device("cpu")
SPR = {"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"}
ZEN4 = {"avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16"}
AVX2_ONLY = {"avx2", "fma"}
AVX2_EMULATION = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                  "ONEDNN_MAX_CPU_ISA": "AVX2", "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2"}


@pytest.fixture
def native(monkeypatch):
    """bf16 offered as on an AMX / AVX-512-BF16 machine, whatever this one is."""
    monkeypatch.setattr(cpu_bf16, "available", lambda: None)
    monkeypatch.setattr(gemm_plan, "_CACHE", {})


# --- the ISA probe on simulated CPUs -----------------------------------------------------

@pytest.mark.parametrize("flags, env, native_bf16, native_int8", [
    (SPR, {}, True, True),
    (ZEN4, {}, True, True),  # AVX-512-BF16 and VNNI, no AMX
    (AVX2_ONLY, {}, False, False),
    (SPR, AVX2_EMULATION, False, False),  # the AVX2 emulation must hide AMX
    (SPR, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_VNNI"}, False, True),
    (SPR, {"DNNL_MAX_CPU_ISA": "avx512_core_amx"}, True, True),
    (SPR, {"ATEN_CPU_CAPABILITY": "avx2"}, False, True),
])
def test_the_probe_sees_the_instructions_and_the_limits(flags, env, native_bf16, native_int8):
    assert (isa.bf16_unavailable(flags, env) is None) is native_bf16
    assert (isa.onednn_int8_unavailable(flags, env) is None) is native_int8


def test_amx_is_named_only_where_onednn_may_use_it():
    assert isa.amx_bf16(SPR, {})
    assert not isa.amx_bf16(ZEN4, {})
    assert not isa.amx_bf16(SPR, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"})


def test_under_the_avx2_emulation_no_amx_or_bf16_candidate_is_offered(monkeypatch):
    for var, value in AVX2_EMULATION.items():
        monkeypatch.setenv(var, value)
    assert forms.candidates(CPU, torch.float32, "bf16") == ()
    assert set(forms.candidates(CPU, torch.float32, "int8")) <= {"int8"}  # fbgemm alone
    assert policy_for(_options("bf16")).mode == "auto"  # fp32, measured as usual


def _options(precision: str):
    from realtime.engine.api import RuntimeOptions

    return RuntimeOptions(precision=precision)


# --- the forms ---------------------------------------------------------------------------

# oneDNN's reorder refuses to run without AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT
# (an AVX2 EPYC raised "bf16 path needs the cpu support ..."); ``bf16`` runs anywhere.
@pytest.mark.parametrize("backend", [
    "bf16",
    pytest.param("bf16_onednn", marks=pytest.mark.skipif(cpu_bf16.available() is not None,
                                                         reason="no native bf16 on this CPU")),
])
def test_a_bf16_form_is_the_fp32_product_within_bf16_rounding(backend):
    gen = torch.Generator().manual_seed(1)
    weight, bias = torch.randn(96, 64, generator=gen), torch.randn(96, generator=gen)
    x = torch.randn(5, 64, generator=gen)
    form = forms.PACKERS[backend](weight, 8)
    want = torch.addmm(bias, x, weight.t())
    got = form(x, bias)
    assert got.dtype == torch.float32 and got.shape == (5, 96)
    rel = float((got - want).norm() / want.norm())
    assert 1e-5 < rel < 1e-2  # bf16 (8-bit mantissa) rounding, not fp32's and not garbage
    assert form.nbytes == weight.numel() * 2


# --- the precision end to end on tiny weights ---------------------------------------------

def test_bf16_on_a_cpu_keeps_fp32_activations():
    assert pick_dtype("bf16", CPU) == torch.float32


def test_bf16_runner_decodes_with_bf16_matrices_and_fp32_logits(native):
    runner = tiny_runner(precision="bf16")
    assert runner.dtype == torch.float32
    heads = runner.model.heads.backend_for(1)
    assert heads == "mm" and set(runner.model.backends(1)) == {"bf16", heads}
    decodes_and_streams(runner)


def test_bf16_logits_stay_close_to_fp32_on_tiny_weights(native):
    h32, a, h16, b = against_fp32("bf16")
    assert not torch.equal(h32, h16)  # it is bf16
    # The documented metric (docs/runtime.md, bench precision): hidden-state
    # relative error. Measured here ~2e-3 (bf16's 8-bit mantissa).
    rel = (h16 - h32).norm(dim=-1) / h32.norm(dim=-1)
    assert rel.max() < 1e-2, rel
    assert torch.equal(a.argmax(-1), b.argmax(-1))


def test_bf16_without_native_kernels_runs_fp32_and_says_why(monkeypatch, caplog):
    monkeypatch.setattr(cpu_bf16, "available", lambda: "this CPU has neither AMX-BF16 nor "
                        "AVX-512-BF16 (bf16 would be emulated)")
    with caplog.at_level(logging.WARNING):
        runner = tiny_runner(precision="bf16")
    assert not any(b.startswith("bf16") for b in runner.model.backends(1))
    said = [r.getMessage() for r in caplog.records if "precision bf16 asked" in r.getMessage()]
    assert said and "neither AMX-BF16" in said[0] and "running fp32" in said[0]


def test_bf16_says_so_loudly(native, caplog):
    with caplog.at_level(logging.INFO):
        tiny_runner(precision="bf16")
    loud = [r for r in caplog.records if "PRECISION BF16" in r.getMessage()]
    assert loud and loud[0].levelno == logging.WARNING
