"""int8's forms (fbgemm, oneDNN, weight-only) as candidates of the measured plan and its trial."""

from __future__ import annotations

import pytest
import test_runtime_plan_trial as trial_helpers
import torch
from test_runtime_plan_trial import _per_shape, _weights, _whole_step_clock

from realtime.engine.cpu import forms, plan_trial
from realtime.engine.cpu import int8 as cpu_int8
from realtime.engine.cpu import plan as gemm_plan
from realtime.engine.cpu.plan import PREFILL, GemmPolicy, prepare_matrices

pytestmark = pytest.mark.skipif(cpu_int8.available() is not None,
                                reason=f"int8 unavailable: {cpu_int8.available()}")
CPU = torch.device("cpu")
INT8 = GemmPolicy("int8", batch_sizes=(1, 8), min_measured_bytes=0)
HERE = cpu_int8.backends()


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(gemm_plan, "_CACHE", {})


@pytest.mark.parametrize("backend", [b for b in cpu_int8.PACKERS if b in HERE])
def test_every_int8_form_is_the_fp32_product_within_int8_rounding(backend):
    gen = torch.Generator().manual_seed(2)
    weight, bias = torch.randn(96, 64, generator=gen) * 0.1, torch.randn(96, generator=gen)
    x = torch.randn(8, 64, generator=gen)
    form = forms.PACKERS[backend](weight, 8)
    want = torch.addmm(bias, x, weight.t())
    got = form(x, bias)
    assert got.shape == (8, 96) and got.dtype == torch.float32
    rel = float((got - want).norm() / want.norm())
    assert 1e-4 < rel < 0.03, rel
    assert form.nbytes < weight.numel() * 1.5  # a quarter of fp32's bytes, plus scales


@pytest.mark.skipif("int8_woq" not in HERE, reason="no weight-only int8 kernel or bf16 here")
def test_weight_only_int8_rows_do_not_depend_on_their_batch_mates():
    gen = torch.Generator().manual_seed(3)
    form = cpu_int8.Int8WeightOnly(torch.randn(64, 32, generator=gen))
    x = torch.randn(4, 32, generator=gen)
    mates = torch.cat([x[:1], 100 * torch.randn(3, 32, generator=gen)])  # a loud neighbour
    assert torch.equal(form(x)[:1], form(mates)[:1])


def test_int8_is_measured_among_its_forms(monkeypatch):
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("int8", "int8_woq"))

    def fake(forms_, x):  # weight-only fastest at 1 row, fbgemm elsewhere
        fastest = "int8_woq" if x.shape[0] == 1 else "int8"
        return 1.0 if forms_[0].backend == fastest else 2.0

    monkeypatch.setattr(gemm_plan, "_time_pass", fake)
    weights = _weights()
    mats, choices = prepare_matrices(weights, INT8, CPU, torch.float32)
    assert set(choices) == {(48, 32), (32, 48)}
    for m in mats:
        assert [m.backend_for(r) for r in (1, 2, 8, 64)] == ["int8_woq", "int8", "int8", "int8"]
    assert all(c.backends[PREFILL] == "int8" for c in choices.values())


def test_tiny_int8_shapes_stay_on_fbgemm_unmeasured(monkeypatch):
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("int8", "int8_woq"))
    mats, _ = prepare_matrices(_weights(), GemmPolicy("int8"), CPU, torch.float32)
    assert {m.backend_for(r) for m in mats for r in (1, 8, 64)} == {"int8"}


def test_the_whole_step_trial_judges_int8_forms_too(monkeypatch, tmp_path):
    monkeypatch.setattr(plan_trial, "candidates", lambda *_: ("int8", "int8_woq"))
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("int8", "int8_woq"))
    _per_shape(monkeypatch, {(48, 32): "int8_woq", (32, 48): "int8"})  # a mixed proposal
    _whole_step_clock(monkeypatch, {"int8": 1.0, "int8_woq": 1.1}, 0.0)  # ... that whole steps reject
    policy = GemmPolicy("int8", batch_sizes=(1, 8), min_measured_bytes=0, cache_dir=str(tmp_path))
    begun = plan_trial.begin(_weights(), policy, CPU, torch.float32)
    assert begun.trial
    trial_helpers._trial_matrices[:] = begun.prepared.matrices
    lines = plan_trial.settle(begun, lambda rows: (lambda: None))
    assert {m.backend_for(1) for m in begun.prepared.matrices} == {"int8"}
    assert lines[0].startswith("batch 1: int8 (mixed loses to int8")


def test_a_cached_choice_is_never_shared_between_models(monkeypatch):
    # A trial rewrites its model's choices; a second model hitting the cache
    # (another precision's fp32 heads) must get what was measured, not that.
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("mm", "onednn"))
    monkeypatch.setattr(gemm_plan, "_time_pass", lambda forms_, x: 1.0 if forms_[0].backend == "mm" else 2.0)
    auto = GemmPolicy("auto", batch_sizes=(1, 8), min_measured_bytes=0)
    _, first = prepare_matrices(_weights(), auto, CPU, torch.float32)
    for choice in first.values():
        choice.backends[8] = "int8"  # what a settled trial of another family once wrote
    mats, second = prepare_matrices(_weights(), auto, CPU, torch.float32)
    assert all(c.backends[8] == "mm" for c in second.values())
    assert {m.backend_for(8) for m in mats} == {"mm"}


def test_the_trial_leaves_choices_it_holds_no_forms_of_alone(monkeypatch, tmp_path):
    from realtime.engine.cpu.plan import ShapeChoice

    monkeypatch.setattr(plan_trial, "candidates", lambda *_: ("int8", "int8_woq"))
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("int8", "int8_woq"))
    _per_shape(monkeypatch, {(48, 32): "int8_woq", (32, 48): "int8"})
    _whole_step_clock(monkeypatch, {"int8": 1.0, "int8_woq": 1.1}, 0.0)
    begun = plan_trial.begin(_weights(), INT8, CPU, torch.float32)
    heads = ShapeChoice(backends={1: "mm", 8: "mkl", PREFILL: "onednn"})
    begun.prepared.choices[(60, 32)] = heads  # as the model adds its fp32 heads
    trial_helpers._trial_matrices[:] = begun.prepared.matrices
    plan_trial.settle(begun, lambda rows: (lambda: None))
    assert heads.backends == {1: "mm", 8: "mkl", PREFILL: "onednn"}
