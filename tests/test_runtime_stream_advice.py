"""The CPU's start-up advice: real-time streams of the running set-up (engine
and precision) from whole-step tables (recorded figures, no timing), with the
figures of other set-ups remembered per machine across starts."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from realtime.engine.cpu.stream_advice import describe, log_advice, setup_of, streams
from realtime.engine.model.shapes import FULL, TINY

# Whole steps (s) per (batch, bucket): int8 keeps 2 rows within 16.4 ms (a
# code's 21.3 ms less admission's 30% headroom) at the longest bucket, 4 within
# 21.3 ms; fp32 not even one.
INT8 = {(1, 256): 0.012, (2, 256): 0.014, (4, 256): 0.019, (8, 256): 0.026,
        (1, 512): 0.013, (2, 512): 0.016, (4, 512): 0.021, (8, 512): 0.030}
FP32 = {(1, 256): 0.036, (8, 256): 0.060, (1, 512): 0.038, (8, 512): 0.066}
INT4 = {(1, 512): 0.0138, (2, 512): 0.0225}


def test_streams_is_the_largest_batch_within_a_codes_worth_of_audio_less_the_headroom():
    # What admission takes at most: 4 int8 rows at 21.0 ms are real time without
    # headroom, and two such streams underrun once prefills and jitter come.
    count, step_ms = streams(INT8)
    assert count == 2
    assert step_ms == {1: 13.0, 2: 16.0, 4: 21.0, 8: 30.0}  # the longest bucket's
    assert streams(FP32)[0] == 0
    assert streams({(1, 256): 0.005, (8, 256): 0.016})[0] == 8
    assert streams({(1, 256): 0.005, (8, 256): 0.017})[0] == 1
    assert streams({}) == (0, {})


def _runner(engine: str, precision: str):
    return SimpleNamespace(options=SimpleNamespace(precision=precision), model=SimpleNamespace(engine=engine),
                           shape=FULL, batch_sizes=(1, 2, 4, 8), kv_buckets=(256, 512))


def test_the_set_up_is_the_decoders_engine_and_the_resolved_precision():
    assert setup_of(_runner("ort", "int4")) == "ort int4"
    assert setup_of(_runner("torch", "int8")) == "torch int8"
    assert setup_of(_runner("torch", "auto")) == "torch fp32"  # torch runs auto as fp32


def test_the_line_names_the_running_set_up_and_says_how_to_compare():
    line = describe("ort int4", streams(INT4), {})
    assert line.startswith("this CPU serves 1 real-time stream on ort int4 (")
    assert "whole steps 13.8 ms at batch 1, 22.5 ms at batch 2" in line
    assert "no other set-up measured on this machine yet (python -m bench cpu-streams" in line
    assert "a stream needs a code every 16.4 ms, real time with admission's headroom" in line
    plural = describe("ort int8", streams(INT8), {})
    assert plural.startswith("this CPU serves 2 real-time streams on ort int8")


def test_each_start_keeps_its_figure_for_the_next_one(tmp_path, caplog):
    root = str(tmp_path)
    with caplog.at_level(logging.INFO, logger="realtime.engine.cpu.stream_advice"):
        first = log_advice(_runner("torch", "auto"), FP32, root)
    assert first.startswith("this CPU serves 0 real-time streams on torch fp32")
    assert "no other set-up measured" in first and "cpu streams:" in caplog.text
    second = log_advice(_runner("ort", "int4"), INT4, root)
    assert second.startswith("this CPU serves 1 real-time stream on ort int4")
    assert "earlier starts here: torch fp32 0 (38.0 ms at batch 1, 66.0 ms at batch 8)" in second
    third = log_advice(_runner("torch", "fp32"), FP32, root)
    assert "earlier starts here: ort int4 1 (13.8 ms at batch 1" in third and "torch fp32 0" not in third
    # Another model shape (or batch sizes, threads, machine) is another entry.
    for change in ({"batch_sizes": (1, 8)}, {"shape": TINY}):
        other = _runner("torch", "fp32")
        vars(other).update(change)
        assert "no other set-up measured" in log_advice(other, FP32, root)


def test_without_a_cache_only_this_start_is_known():
    line = log_advice(_runner("torch", "int8"), INT8, None)
    assert line.startswith("this CPU serves 2 real-time streams on torch int8")
    assert "no other set-up measured" in line
