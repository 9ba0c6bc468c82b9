"""``--cpu-engine`` (realtime/engine/cpu/engine.py): which engine runs the CPU decoder.

Pairs that cannot run are one-line start-up errors; ``auto`` times both
engines by whole steps once, keeps the verdict per machine and builds only
the winner afterwards; without onnxruntime ``auto`` falls back to torch.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import pytest
import torch
from runtime_fixtures import tiny_assets

from realtime.engine.api import RuntimeOptions
from realtime.engine.build import build_runner
from realtime.engine.cpu import engine
from realtime.engine.ort.model import OrtGPT

BIG = 10 * engine.TINY_BYTES


@pytest.mark.parametrize("choice, precision, message", [
    ("torch", "int4", "ort engine only"),
    ("torch", "int8", "ort engine only"),
    ("ort", "fp16", "torch engine only"),
    ("turbo", "int8", "unknown cpu engine"),
])
def test_pairs_that_cannot_run_are_refused(choice, precision, message):
    with pytest.raises(ValueError, match=message):
        engine.static_choice(choice, precision, BIG)


def test_static_choices():
    assert engine.static_choice("auto", "int4", BIG)[0] == "ort"
    assert engine.static_choice("auto", "fp16", BIG)[0] == "torch"
    assert engine.static_choice("torch", "fp32", BIG)[0] == "torch"
    assert engine.static_choice("auto", "int8", BIG) == ("ort", "int8 runs on ort only")
    assert engine.static_choice("auto", "fp32", BIG) == (None, "auto: timed")
    assert engine.static_choice("auto", "fp32", 1024)[0] == "ort"  # tiny: not timed
    assert engine.cpu_precision("auto") == engine.DEFAULT_PRECISION == "int8"


def test_without_onnxruntime_auto_runs_torch_fp32_and_the_int_forms_are_refused(monkeypatch):
    monkeypatch.setattr(engine, "ort_missing", lambda: "onnxruntime is not installed")
    chosen, why = engine.static_choice("auto", "fp32", BIG)
    assert chosen == "torch" and "onnxruntime is not installed" in why
    for choice, precision in (("ort", "int8"), ("auto", "int8"), ("auto", "int4"), ("ort", "fp32")):
        with pytest.raises(ValueError, match="onnxruntime is not installed"):
            engine.static_choice(choice, precision, BIG)
    options = RuntimeOptions(weights="tiny-random", device="cpu")
    assert engine.auto_precision(options, tiny_assets()) == "fp32"


class _Slow:
    """A model whose decode step takes ``seconds``."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.shape = tiny_assets().shape

    def new_cache(self, slots, max_len, max_batch):
        return None

    def decode(self, x, slots, pos, cache, kv_len):
        time.sleep(self.seconds)
        return x

    def logits(self, hidden):
        return hidden


def test_measure_picks_the_faster_by_whole_steps():
    chosen, ms = engine.measure({"torch": _Slow(0.004), "ort": _Slow(0.001)}, (1, 4))
    assert chosen == "ort" and ms["torch"] > ms["ort"] > 1.5  # two row classes summed


def test_auto_times_once_then_builds_only_the_cached_winner(monkeypatch, tmp_path, caplog):
    monkeypatch.setattr(engine, "TINY_BYTES", 0)  # time the tiny model as if it were large
    monkeypatch.setattr(engine, "measure", lambda models, rows: ("ort", {"torch": 9.0, "ort": 3.0}))
    options = RuntimeOptions(weights="tiny-random", device="cpu", precision="fp32", max_slots=4,
                             cpu_threads=2, batch_sizes=(1, 2, 4), kv_buckets=(64,), cache_dir=str(tmp_path))
    with caplog.at_level(logging.INFO):
        first = build_runner(options, assets=tiny_assets())
    assert isinstance(first.model, OrtGPT) and "torch 9.0 ms, ort 3.0 ms" in caplog.text
    monkeypatch.setattr(engine, "measure", lambda models, rows: pytest.fail("timed again"))
    caplog.clear()
    with caplog.at_level(logging.INFO):
        second = build_runner(options, assets=tiny_assets())
    assert isinstance(second.model, OrtGPT) and "measured earlier on this machine" in caplog.text
    assert "cpu runtime: precision fp32 (--precision fp32)" in caplog.text


def test_torch_engine_keeps_the_torch_decoder():
    runner = build_runner(RuntimeOptions(weights="tiny-random", device="cpu", precision="fp32",
                                         cpu_engine="torch", max_slots=2, batch_sizes=(1,),
                                         kv_buckets=(64,)), assets=tiny_assets())
    assert not isinstance(runner.model, OrtGPT)
    assert torch.get_num_threads() >= 1


@pytest.mark.parametrize("int8_ms, chosen", [(engine.INT8_STEP_BUDGET_MS - 1, "int8"),
                                             (engine.INT8_STEP_BUDGET_MS + 1, "int4")])
def test_precision_auto_is_int8_where_it_keeps_real_time_else_int4(monkeypatch, tmp_path, caplog,
                                                                   int8_ms, chosen):
    monkeypatch.setattr(engine, "TINY_BYTES", 0)
    monkeypatch.setattr(engine, "measure", lambda models, rows: ("ort", {"ort": int8_ms, "torch": 99.0}))
    options = RuntimeOptions(weights="tiny-random", device="cpu", max_slots=4, batch_sizes=(1, 2, 4),
                             kv_buckets=(64,), cache_dir=str(tmp_path), cpu_threads=2)
    with caplog.at_level(logging.INFO):
        runner = build_runner(options, assets=tiny_assets())
    assert runner.model.form == chosen and runner.options.precision == chosen
    assert f"PRECISION {chosen.upper()} (the default on a CPU" in caplog.text
    assert runner.vocoder.body is not None and runner.vocoder.body.form == "int8"  # beside int8/int4
    monkeypatch.setattr(engine, "measure", lambda models, rows: pytest.fail("timed again"))
    assert build_runner(options, assets=tiny_assets()).model.form == chosen  # kept per machine


def test_an_fp32_decoder_keeps_an_fp32_vocoder():
    options = RuntimeOptions(weights="tiny-random", device="cpu", precision="fp32", cpu_engine="ort",
                             max_slots=2, batch_sizes=(1,), kv_buckets=(64,))
    runner = build_runner(options, assets=tiny_assets())
    assert runner.vocoder.body.form == "fp32"


def test_a_captured_cpu_runner_runs_torch_in_fp32():
    from bench.strict_graphs import StrictCapture

    options = RuntimeOptions(weights="tiny-random", device="cpu", max_slots=2, batch_sizes=(1,),
                             kv_buckets=(64,))
    runner = build_runner(options, assets=tiny_assets(), capture=StrictCapture())
    assert not isinstance(runner.model, OrtGPT) and runner.options.precision == "fp32"
    with pytest.raises(ValueError, match="graphs do not capture"):
        build_runner(dataclasses.replace(options, precision="int8"), assets=tiny_assets(),
                     capture=StrictCapture())
