"""The CPU's start-up advice: real-time streams per precision from whole-step
tables (recorded figures, no timing), remembered per machine across starts."""

from __future__ import annotations

import logging
from types import SimpleNamespace

from realtime.engine.cpu.stream_advice import describe, log_advice, streams
from realtime.engine.model.shapes import FULL, TINY

# Whole steps (s) per (batch, bucket): int8 keeps 4 rows within 21.3 ms at the
# longest bucket; fp32 not even one.
INT8 = {(1, 256): 0.012, (2, 256): 0.014, (4, 256): 0.019, (8, 256): 0.026,
        (1, 512): 0.013, (2, 512): 0.016, (4, 512): 0.021, (8, 512): 0.030}
FP32 = {(1, 256): 0.036, (8, 256): 0.060, (1, 512): 0.038, (8, 512): 0.066}


def test_streams_is_the_largest_batch_within_a_codes_worth_of_audio():
    count, step_ms = streams(INT8)
    assert count == 4
    assert step_ms == {1: 13.0, 2: 16.0, 4: 21.0, 8: 30.0}  # the longest bucket's
    assert streams(FP32)[0] == 0
    assert streams({(1, 256): 0.005, (8, 256): 0.02})[0] == 8
    assert streams({}) == (0, {})


def test_the_line_names_both_precisions_and_where_each_figure_came_from():
    line = describe({"int8": streams(INT8), "fp32": None}, running="int8")
    assert line.startswith("this CPU serves 4 real-time streams in int8, ? in fp32 (")
    assert "int8: this start, whole steps 13.0 ms at batch 1" in line
    assert "fp32: not measured on this machine yet (start once with the default precision" in line


def _runner(precision: str):
    return SimpleNamespace(options=SimpleNamespace(precision=precision), shape=FULL,
                           batch_sizes=(1, 2, 4, 8), kv_buckets=(256, 512))


def test_each_start_keeps_its_figure_for_the_next_one(tmp_path, caplog):
    root = str(tmp_path)
    with caplog.at_level(logging.INFO, logger="realtime.engine.cpu.stream_advice"):
        first = log_advice(_runner("auto"), FP32, root)
    assert "serves ? real-time streams in int8, 0 in fp32" in first
    assert "start once with --precision int8" in first and "cpu streams:" in caplog.text
    second = log_advice(_runner("int8"), INT8, root)
    assert "serves 4 real-time streams in int8, 0 in fp32" in second and "fp32: an earlier start" in second
    third = log_advice(_runner("fp32"), FP32, root)
    assert "serves 4 real-time streams in int8, 0 in fp32" in third and "int8: an earlier start" in third
    # Another model shape (or batch sizes, threads, machine) is another entry.
    for change in ({"batch_sizes": (1, 8)}, {"shape": TINY}):
        other = _runner("fp32")
        vars(other).update(change)
        assert "serves ? real-time" in log_advice(other, FP32, root)


def test_without_a_cache_only_this_start_is_known():
    line = log_advice(_runner("int8"), INT8, None)
    assert "serves 4 real-time streams in int8, ? in fp32" in line
