"""Choosing a GEMM backend per (matrix shape, row class): from timings, forced, or after failures."""

import logging

import pytest
import torch

from realtime.engine.cpu import plan as gemm_plan
from realtime.engine.cpu.gemm import PACKERS, PlainMatrix, backend_available
from realtime.engine.cpu.plan import PREFILL, GemmPolicy, pick, prepare_matrices, table

CPU = torch.device("cpu")
AUTO = GemmPolicy("auto", min_measured_bytes=0)  # the test matrices are small
CLASSES = (1, 2, 4, 8, PREFILL)
ALL_FP32 = all(backend_available(b, CPU, torch.float32) for b in ("mkl", "onednn"))
needs_all = pytest.mark.skipif(not ALL_FP32, reason="this torch lacks MKL or oneDNN packing")


def _any_rows(b):
    return b != "mkl"


@pytest.fixture(autouse=True)
def fresh_cache(monkeypatch):
    monkeypatch.setattr(gemm_plan, "_CACHE", {})


def test_pick_takes_the_fastest_per_row_class():
    seconds = {(1, "mm"): 1.0, (1, "onednn"): 2.0, (1, "mkl"): 3.0,
               (8, "mm"): 5.0, (8, "onednn"): 4.0, (8, "mkl"): 1.0,
               (PREFILL, "mm"): 9.0, (PREFILL, "onednn"): 8.0}
    assert pick(seconds, (1, 8, PREFILL), _any_rows, margin=0.0) == {
        1: "mm", 8: "mkl", PREFILL: "onednn"}


def test_pick_never_gives_prefill_to_a_fixed_row_backend():
    seconds = {(PREFILL, "mkl"): 0.1, (PREFILL, "mm"): 1.0}
    assert pick(seconds, (PREFILL,), _any_rows)[PREFILL] == "mm"


def test_pick_keeps_one_form_where_the_gain_is_within_the_margin():
    # onednn wins three classes; mm is 5% faster at 2 rows: not worth a second copy,
    # mkl is 2x faster at 8 rows: worth it.
    seconds = {(1, "onednn"): 1.0, (1, "mm"): 1.2, (2, "onednn"): 1.0, (2, "mm"): 0.95,
               (8, "onednn"): 2.0, (8, "mkl"): 1.0, (PREFILL, "onednn"): 5.0, (PREFILL, "mm"): 6.0}
    assert pick(seconds, (1, 2, 8, PREFILL), _any_rows, margin=0.1) == {
        1: "onednn", 2: "onednn", 8: "mkl", PREFILL: "onednn"}


def test_pick_without_timings_takes_the_fallback():
    assert pick({}, CLASSES, _any_rows, fallback="onednn") == dict.fromkeys(CLASSES, "onednn")


def _weights(n_layers=3, shapes=((48, 32), (32, 48))):
    gen = torch.Generator().manual_seed(0)
    return [torch.randn(n, k, generator=gen) * 0.1 for _ in range(n_layers) for n, k in shapes]


def _fake_timer(monkeypatch, fastest: dict[int, str]):
    """Time passes as 1 for the backend named per row count, 2 for others."""
    calls = []

    def fake(forms, x):
        calls.append(forms[0].backend)
        rows = x.shape[0] if x.shape[0] in fastest else PREFILL
        return 1.0 if forms[0].backend == fastest.get(rows) else 2.0

    monkeypatch.setattr(gemm_plan, "_time_pass", fake)
    return calls


@needs_all
def test_auto_uses_the_measured_winner_per_row_count(monkeypatch):
    _fake_timer(monkeypatch, {1: "mm", 2: "mkl", 4: "mkl", 8: "mkl", PREFILL: "onednn"})
    weights = _weights()
    mats, choices = prepare_matrices(weights, AUTO, CPU, torch.float32)
    assert set(choices) == {(48, 32), (32, 48)}
    for m in mats:
        assert [m.backend_for(r) for r in (1, 2, 3, 8, 64)] == ["mm", "mkl", "mkl", "mkl", "onednn"]
    x = torch.randn(3, 32)
    torch.testing.assert_close(mats[0](x), x @ weights[0].t(), rtol=1e-5, atol=1e-5)


@needs_all
def test_auto_keeps_only_the_forms_it_uses(monkeypatch):
    _fake_timer(monkeypatch, dict.fromkeys((1, 2, 4, 8, PREFILL), "onednn"))
    mats, _ = prepare_matrices(_weights(), AUTO, CPU, torch.float32)
    assert all({f.backend for f in m.forms} == {"onednn"} for m in mats)


@needs_all
def test_measurements_are_cached_for_the_process(monkeypatch):
    calls = _fake_timer(monkeypatch, dict.fromkeys((1, 2, 4, 8, PREFILL), "mm"))
    prepare_matrices(_weights(), AUTO, CPU, torch.float32)
    first = len(calls)
    assert first > 0
    mats, _ = prepare_matrices(_weights(), AUTO, CPU, torch.float32)
    assert len(calls) == first
    assert mats[0].backend_for(1) == "mm"


@pytest.mark.parametrize("mode", [pytest.param(b, marks=pytest.mark.skipif(
    not backend_available(b, CPU, torch.float32), reason=f"no {b} here")) for b in ("mm", "mkl", "onednn")])
def test_a_forced_backend_is_used_for_every_decode_row_count(monkeypatch, mode):
    calls = _fake_timer(monkeypatch, {})
    mats, _ = prepare_matrices(_weights(), GemmPolicy(mode), CPU, torch.float32)
    assert not calls  # nothing measured
    for m in mats:
        assert {m.backend_for(r) for r in range(1, 9)} == {mode}
        assert m.backend_for(64) == ("mm" if mode == "mkl" else mode)


def test_a_backend_that_fails_to_pack_is_dropped(monkeypatch, caplog):
    def refuse(weight, rows):
        raise RuntimeError("no packed sgemm in this build")

    monkeypatch.setitem(PACKERS, "onednn", refuse)
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("mm", "onednn"))
    _fake_timer(monkeypatch, dict.fromkeys((1, 2, 4, 8, PREFILL), "onednn"))
    with caplog.at_level(logging.WARNING, logger="realtime.engine.cpu.plan"):
        mats, choices = prepare_matrices(_weights(), AUTO, CPU, torch.float32)
    assert all(m.backend_for(r) == "mm" for m in mats for r in (1, 8, 64))
    assert "no packed sgemm" in next(iter(choices.values())).dropped["onednn"]
    assert "cannot pack" in caplog.text
    forced, _ = prepare_matrices(_weights(), GemmPolicy("onednn"), CPU, torch.float32)
    assert all(m.backend_for(1) == "mm" for m in forced)


class _FakeOnednn(PlainMatrix):
    backend = "onednn"


def test_a_late_packing_failure_falls_back_for_that_matrix(monkeypatch, caplog):
    packed = []

    def flaky(weight, rows):
        packed.append(weight)
        if len(packed) == 3:
            raise RuntimeError("out of memory")
        return _FakeOnednn(weight, rows)

    flaky.any_rows = True
    monkeypatch.setitem(PACKERS, "onednn", flaky)
    monkeypatch.setattr(gemm_plan, "candidates", lambda *_: ("mm", "onednn"))
    weights = _weights(n_layers=4, shapes=((48, 32),))
    with caplog.at_level(logging.WARNING, logger="realtime.engine.cpu.plan"):
        mats, _ = prepare_matrices(weights, GemmPolicy("onednn"), CPU, torch.float32)
    assert [m.backend_for(1) for m in mats] == ["onednn", "onednn", "mm", "onednn"]
    assert "failed to pack matrix 2" in caplog.text
    x = torch.randn(2, 32)
    for m, w in zip(mats, weights):
        torch.testing.assert_close(m(x), x @ w.t())


def test_no_time_budget_means_no_measurement_and_the_fallback_order(monkeypatch):
    calls = _fake_timer(monkeypatch, {})
    policy = GemmPolicy("auto", budget_s=0.0, min_measured_bytes=0)
    mats, _ = prepare_matrices(_weights(), policy, CPU, torch.float32)
    expected = "onednn" if backend_available("onednn", CPU, torch.float32) else "mm"
    assert not calls
    assert mats[0].backend_for(1) == expected


def test_small_matrices_are_not_measured(monkeypatch):
    calls = _fake_timer(monkeypatch, dict.fromkeys((1, 2, 4, 8, PREFILL), "onednn"))
    mats, _ = prepare_matrices(_weights(), GemmPolicy("auto"), CPU, torch.float32)
    assert not calls
    assert all(m.backend_for(r) == "mm" for m in mats for r in (1, 8, 64))


def test_other_dtypes_and_unknown_modes():
    mats, choices = prepare_matrices(_weights(), AUTO, CPU, torch.float64)
    assert not choices and all(m.backend_for(r) == "mm" for m in mats for r in (1, 64))
    with pytest.raises(ValueError, match="unknown cpu gemm"):
        prepare_matrices(_weights(), GemmPolicy("fastest"), CPU, torch.float32)
    with pytest.raises(ValueError, match="CPU only"):
        prepare_matrices(_weights(), GemmPolicy("int8"), torch.device("cuda"), torch.float32)


@needs_all
def test_the_table_shows_every_shape_and_row_class_with_the_choice(monkeypatch):
    _fake_timer(monkeypatch, {1: "mm", 2: "onednn", 4: "onednn", 8: "onednn", PREFILL: "onednn"})
    policy = AUTO
    _, choices = prepare_matrices(_weights(), policy, CPU, torch.float32)
    text = table(choices, policy)
    lines = text.splitlines()
    assert len(lines) == 1 + 2 * len(CLASSES)
    assert "mkl" in lines[0] and "64 (prefill)" in text
    one_row = next(line for line in lines if line.startswith("32x48") and line.split()[1] == "1")
    assert one_row.split()[2].endswith("*")  # mm, the first column, chosen at 1 row


def test_policy_from_runtime_options():
    from realtime.engine.api import RuntimeOptions

    p = gemm_plan.policy_for(RuntimeOptions(batch_sizes=(1, 4, 16), max_slots=8, cpu_gemm="mkl"))
    assert (p.mode, p.batch_sizes, p.pack_rows) == ("mkl", (1, 4), 4)
    assert gemm_plan.policy_for(RuntimeOptions(precision="int8")).mode == "int8"


def test_every_cpu_gemm_the_config_offers_is_a_mode_the_plan_forces():
    from realtime.engine.api import RuntimeOptions
    from realtime.server.config import CPU_GEMMS

    assert CPU_GEMMS[0] == "auto"
    for mode in CPU_GEMMS[1:]:
        assert gemm_plan.policy_for(RuntimeOptions(cpu_gemm=mode)).mode == mode
