"""The cost model's seed is whole ``execute`` steps: the warm-up's decode
timings plus what a served step adds (the streaming vocoder, the EOS read,
the host), measured at the smallest and largest batch and interpolated."""

from __future__ import annotations

import pytest
from runtime_fixtures import tiny_runner

from realtime.engine import step_cost
from scheduler import CostModel

pytestmark = pytest.mark.usefixtures("one_torch_thread")
DECODE_ONLY = 1e-6  # what the stubbed decode-only timing says: nothing


def test_the_seed_adds_the_whole_steps_overhead_to_every_shape(monkeypatch):
    runner = tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(128, 256))
    monkeypatch.setattr(runner, "_time_decode", lambda batch, kv_len: DECODE_ONLY)
    calls = []
    real = runner.vocoder.start
    monkeypatch.setattr(runner.vocoder, "start",
                        lambda after=None, frame_s=0.0: calls.append(1) or real(after, frame_s))
    table = runner.warmup()
    assert set(table) == {(b, k) for b in (1, 2, 4) for k in (128, 256)}
    # Every entry is a real step's cost now, far above the stub's.
    assert all(t > 100 * DECODE_ONLY for t in table.values())
    assert len(calls) == 1 + 4  # streaming jobs at batch 1 and 4: the vocoder took part
    assert not runner.jobs and not runner.audio.awaiting  # nothing left behind
    assert CostModel.from_table(table).step_time(1, 128) > 100 * DECODE_ONLY


def test_interpolation_is_linear_between_the_measured_batches_and_flat_beyond():
    points = {1: 0.010, 9: 0.090}
    assert step_cost.interpolate(points, 5) == pytest.approx(0.050)
    assert step_cost.interpolate(points, 16) == 0.090 and step_cost.interpolate(points, 1) == 0.010
    assert step_cost.interpolate({4: 0.02}, 64) == 0.02


def test_a_cache_too_short_for_the_jobs_leaves_the_decode_timings(caplog):
    runner = tiny_runner(max_slots=2, batch_sizes=(1,), kv_buckets=(16,))
    with caplog.at_level("WARNING", logger="realtime.engine.step_cost"):
        table = step_cost.with_step_overhead(runner, {(1, 16): 0.004})
    assert table == {(1, 16): 0.004} and "too long" in caplog.text
    assert not runner.jobs


def test_on_a_cpu_every_row_pays_a_streams_vocoder_cost(monkeypatch):
    # The whole steps measured say nothing is added; a stream's vocoder
    # windows still cost every row of a step its share.
    runner = tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(128, 256))
    monkeypatch.setattr(step_cost, "_overhead", lambda runner, batch, table: 0.0)
    monkeypatch.setattr(step_cost, "vocoder_s_per_code", lambda runner: 0.003)
    table = step_cost.with_step_overhead(runner, {(b, 128): 0.010 for b in (1, 2, 4)})
    assert table == {(1, 128): pytest.approx(0.013), (2, 128): pytest.approx(0.016),
                     (4, 128): pytest.approx(0.022)}


def test_the_vocoder_cost_prices_a_sentences_windows_at_a_largest_windows_rate(monkeypatch):
    runner = tiny_runner(max_slots=2, batch_sizes=(1,), kv_buckets=(128,))
    vocoder = runner.vocoder
    rendered: list[int] = []
    clock = iter([0.0, 5.0, 5.0, 6.0, 6.0, 8.0])  # renders of 5, 1 and 2 s: the median is 2
    monkeypatch.setattr(step_cost.time, "perf_counter", lambda: next(clock))
    monkeypatch.setattr(vocoder, "render", lambda hidden: rendered.append(hidden.shape[0]))
    calls = vocoder.calls
    window = vocoder.left_context_steps + vocoder.max_chunk_steps + vocoder.lookahead_steps
    per_code = step_cost.vocoder_s_per_code(runner)
    assert rendered == [window] * 3 and vocoder.calls == calls
    codes = step_cost.SEGMENT_CODES
    assert per_code == pytest.approx(2.0 * vocoder.segment_window_steps(codes) / codes / window)
    # A sentence re-renders more context per code than the steady chunks alone.
    assert per_code > 1 / vocoder.max_chunk_steps
