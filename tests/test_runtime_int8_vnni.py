"""Our kernels (cpu.vnni): ``int8_vnni``'s products, its rows' independence,
where it is offered, its build, a tiny model run on it staying within int8's
divergence bounds, whole steps deciding; ``avx512``'s fp32 products on every
size (its codes against upstream: tests/test_runtime_decoder.py)."""

from __future__ import annotations

import pytest
import test_runtime_int8 as int8_helpers
import test_runtime_plan_trial as trial_helpers
import torch
from test_runtime_plan_trial import _per_shape, _weights, _whole_step_clock

from realtime.runtime.cpu import int8 as cpu_int8
from realtime.runtime.cpu import plan as gemm_plan
from realtime.runtime.cpu import plan_trial, vnni
from realtime.runtime.cpu.plan import GemmPolicy

CPU = torch.device("cpu")
# Skipped only where the kernel cannot exist here (the CPU, an ISA limit, no
# compiler); a kernel that fails its build or its check fails these tests.
CANNOT = vnni.isa_unavailable() or (None if vnni.compiler() else "no C++ compiler")
needs_kernel = pytest.mark.skipif(CANNOT is not None, reason=f"int8_vnni cannot run here: {CANNOT}")
ALL_FLAGS = set(vnni.NEEDS)


def _form(n: int = 96, k: int = 64, seed: int = 2):
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(n, k, generator=gen) * 0.1
    return weight, vnni.Int8Vnni(weight), gen


@needs_kernel
def test_the_kernel_builds_checks_out_and_is_an_int8_candidate():
    assert vnni.available() is None
    assert "int8_vnni" in cpu_int8.backends()


@needs_kernel
@pytest.mark.parametrize("rows", [1, 3, 8, 11, 64])
def test_the_product_is_fp32_within_int8_rounding_at_every_row_count(rows):
    weight, form, gen = _form()
    bias = torch.randn(96, generator=gen)
    x = torch.randn(rows, 64, generator=gen)
    want = torch.addmm(bias, x, weight.t())
    got = form(x, bias)
    assert got.shape == (rows, 96) and got.dtype == torch.float32
    rel = float((got - want).norm() / want.norm())
    assert 1e-4 < rel < 0.02, rel
    # Rows past the kernel's 8-row blocks agree with the same rows alone.
    assert torch.equal(got[-1:], form(x[-1:], bias))


@needs_kernel
def test_rows_do_not_depend_on_their_batch_mates():
    _, form, gen = _form()
    x = torch.randn(4, 64, generator=gen)
    mates = torch.cat([x[:1], 100 * torch.randn(3, 64, generator=gen)])  # a loud neighbour
    assert torch.equal(form(x)[:1], form(mates)[:1])


@needs_kernel
def test_a_strided_input_reads_its_own_rows():
    # The MLP hands the kernel the gate half of [B, 2I]: rows spaced 2I apart.
    _, form, gen = _form()
    wide = torch.randn(5, 128, generator=gen)
    assert torch.equal(form(wide[:, :64]), form(wide[:, :64].contiguous()))
    assert form(torch.empty(0, 64)).shape == (0, 96)


@needs_kernel
def test_sizes_off_the_kernel_blocks_are_refused():
    with pytest.raises(ValueError):
        vnni.Int8Vnni(torch.randn(2504, 768))  # the logit heads: 2504 is no multiple of 16


@pytest.mark.parametrize("flags, env, expect", [
    (ALL_FLAGS, {}, None),
    (ALL_FLAGS - {"avx512_vnni"}, {}, "lacks avx512_vnni"),
    ({"avx2", "avx_vnni"}, {}, "lacks avx512f"),
    (ALL_FLAGS, {"ATEN_CPU_CAPABILITY": "avx2"}, "ATEN_CPU_CAPABILITY=avx2"),
    (ALL_FLAGS, {"ATEN_CPU_CAPABILITY": "avx512"}, None),
])
def test_offered_only_where_the_cpu_and_torch_run_avx512_vnni(flags, env, expect):
    reason = vnni.isa_unavailable(flags, env)
    assert reason is None if expect is None else expect in reason


@pytest.fixture
def fresh_kernel(monkeypatch, tmp_path):
    """The kernel's per-process state reset, built into ``tmp_path``."""
    monkeypatch.setenv(vnni.ENV_DIR, str(tmp_path))
    monkeypatch.setattr(vnni, "_tried", False)
    monkeypatch.setattr(vnni, "_lib", None)
    monkeypatch.setattr(vnni, "_reason", None)
    return tmp_path


@needs_kernel
def test_without_a_compiler_the_form_is_not_offered(fresh_kernel, monkeypatch):
    monkeypatch.setattr(vnni, "compiler", lambda: None)
    assert "no C++ compiler" in (vnni.available() or "")
    assert "int8_vnni" not in cpu_int8.backends()
    with pytest.raises(RuntimeError):
        vnni.Int8Vnni(torch.randn(16, 16))


@needs_kernel
def test_a_failing_compile_is_a_reason_not_a_crash(fresh_kernel, monkeypatch):
    monkeypatch.setattr(vnni, "FLAGS", (*vnni.FLAGS, "-DBROKEN", "-include", "/nonexistent.h"))
    assert "kernel not built" in (vnni.available() or "")


@needs_kernel
def test_the_kernel_is_built_once_and_a_torn_one_rebuilt(fresh_kernel, monkeypatch):
    path = vnni.kernel_path(vnni.compiler(), str(fresh_kernel))
    with open(path, "wb") as f:
        f.write(b"\x7fELF torn")  # a write cut short by a crash
    assert vnni.available() is None  # rebuilt over the damaged file
    built = fresh_kernel / path.rsplit("/", 1)[1]
    assert built.stat().st_size > 1000
    stamp = built.stat().st_mtime_ns
    monkeypatch.setattr(vnni, "_tried", False)
    assert vnni.available() is None and built.stat().st_mtime_ns == stamp  # reused


@needs_kernel
def test_a_tiny_model_on_the_kernel_stays_within_int8s_bounds(monkeypatch):
    # Every decoder matrix on int8_vnni (tiny shapes are measured here), the
    # same bounds as fbgemm's int8 (test_runtime_int8.py).
    monkeypatch.setattr(gemm_plan, "_CACHE", {})
    for module in (gemm_plan, plan_trial):
        monkeypatch.setattr(module, "candidates", lambda *_: ("int8_vnni",))
    h32, a, h8, b = _against_fp32_on_the_kernel()
    assert not torch.equal(h32, h8)
    rel = (h8 - h32).norm(dim=-1) / h32.norm(dim=-1)
    assert rel.max() < 1e-3, rel
    kl = torch.nn.functional.kl_div(b.log_softmax(-1), a.log_softmax(-1), log_target=True,
                                    reduction="none").sum(-1)
    assert kl.max() < 1e-4, kl.max()
    assert torch.equal(a.argmax(-1), b.argmax(-1))


def _against_fp32_on_the_kernel():
    from runtime_fixtures import tiny_assets

    from realtime.runtime.model import StaticGPT
    from realtime.runtime.shapes import TINY

    assets = tiny_assets()
    fp32 = StaticGPT(TINY, assets.gpt_state, assets.embed, CPU, torch.float32, GemmPolicy("mm"))
    policy = GemmPolicy("int8", batch_sizes=(1, 8), min_measured_bytes=0, step_budget_s=0.0)
    kernel = StaticGPT(TINY, assets.gpt_state, assets.embed, CPU, torch.float32, policy)
    assert {m.backend_for(1) for m in kernel.matrices[:-1]} == {"int8_vnni"}
    return (*int8_helpers._hidden_and_logits(fp32), *int8_helpers._hidden_and_logits(kernel))


@needs_kernel
@pytest.mark.parametrize("vnni_cost, expect", [(1.1, "int8"), (0.8, "int8_vnni")])
def test_whole_steps_decide_whether_the_kernel_is_used(monkeypatch, tmp_path, vnni_cost, expect):
    # The isolated timings propose the kernel for one shape; whole steps in
    # which it is slower than fbgemm keep fbgemm, faster ones take it for all.
    monkeypatch.setattr(gemm_plan, "_CACHE", {})
    for module in (gemm_plan, plan_trial):
        monkeypatch.setattr(module, "candidates", lambda *_: ("int8", "int8_vnni"))
    _per_shape(monkeypatch, {(48, 32): "int8_vnni", (32, 48): "int8"})
    _whole_step_clock(monkeypatch, {"int8": 1.0, "int8_vnni": vnni_cost}, 0.0)
    policy = GemmPolicy("int8", batch_sizes=(1, 8), min_measured_bytes=0, cache_dir=str(tmp_path))
    begun = plan_trial.begin(_weights(), policy, CPU, torch.float32)
    trial_helpers._trial_matrices[:] = begun.prepared.matrices
    lines = plan_trial.settle(begun, lambda rows: (lambda: None))
    assert {m.backend_for(1) for m in begun.prepared.matrices} == {expect}
    assert lines[0].startswith(f"batch 1: {expect} (")


@needs_kernel
@pytest.mark.parametrize("n, k, rows", [(40, 63, 1), (2504 // 8, 96, 3), (16, 1, 8), (96, 64, 11)])
def test_the_fp32_kernel_is_fp32_on_ragged_sizes_and_any_rows(n, k, rows):
    gen = torch.Generator().manual_seed(4)
    weight, bias = torch.randn(n, k, generator=gen), torch.randn(n, generator=gen)
    wide = torch.randn(rows, 2 * k, generator=gen)
    x = wide[:, :k]  # strided rows, as the MLP's gate half
    form = vnni.F32Avx512(weight)
    torch.testing.assert_close(form(x, bias), torch.addmm(bias, x, weight.t()), rtol=1e-5, atol=1e-5)
    assert form.nbytes == -(-n // 16) * 16 * k * 4
    with pytest.raises(ValueError):  # a wrong width would read past the rows
        form(torch.randn(rows, k + 1))


@needs_kernel
def test_both_forms_take_a_transposed_view_as_the_prepared_cache_hands_them():
    # The prepared-weights cache keeps [K, N] and hands forms its transpose.
    gen = torch.Generator().manual_seed(5)
    stored = torch.randn(64, 48, generator=gen)  # [K, N]
    x = torch.randn(3, 64, generator=gen)
    for form in (vnni.F32Avx512(stored.t()), vnni.Int8Vnni(stored.t())):
        rel = float((form(x) - x @ stored).norm() / (x @ stored).norm())
        assert rel < 0.02, (form.backend, rel)


def test_the_kernel_is_kept_under_the_servers_cache_dir(monkeypatch, tmp_path):
    from realtime.runtime.api import RuntimeOptions
    from realtime.runtime.cpu.plan import policy_for

    monkeypatch.delenv(vnni.ENV_DIR, raising=False)
    monkeypatch.setattr(vnni, "_cache_dir", None)
    policy_for(RuntimeOptions(cache_dir=str(tmp_path)))
    assert vnni.kernel_dir() == str(tmp_path / "kernels")
    policy_for(RuntimeOptions(cache_dir=""))  # off: the default place
    assert vnni.kernel_dir().endswith("realtime-tts/kernels")
