"""The GPU check's runner sections finish what they start: more jobs than the
packed vocoder renders in one step all end, and the runner is left empty; a
lost device ends the run with what was measured; the busy sampler and the
attention pin (CPU, tiny weights, stand-ins for the GPU's readings)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
import torch
from runtime_fixtures import tiny_runner

from realtime.engine.api import DeviceFailure
from realtime.engine.cuda import sdpa
from tools import gpu_audio, gpu_check, gpu_sections, gpu_streams
from tools.gpu_busy import BusySampler

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _runner(budget: int):
    runner = tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(128, 256))
    runner.audio.steps_per_call = budget  # the packed vocoder's hidden steps per step
    return runner


def test_throughput_runs_every_job_to_its_end_past_the_vocoder_budget():
    runner = _runner(budget=8)  # 4 one-shot jobs of 8 codes: 32 hidden steps, 8 per step
    entry = gpu_sections.throughput(runner, 4, 8)
    assert entry["steps_run"] > 8  # the finishes took more steps than the decoding
    assert entry["audio_s"] == pytest.approx(4 * (8 * 512 - 256) / 24000)
    assert gpu_sections.left_in(runner) == 0
    # The next batch runs on a clean runner.
    assert gpu_sections.throughput(runner, 2, 8)["audio_s"] == pytest.approx(2 * (8 * 512 - 256) / 24000)


def test_a_step_cap_too_small_says_how_many_jobs_were_left():
    runner = _runner(budget=8)
    driver = gpu_sections.Driver(runner)
    gpu_sections.add_jobs(driver, 4, 8)
    with pytest.raises(gpu_sections.CheckError, match="4 jobs unfinished after 3 steps"):
        gpu_sections.finish_all(driver, 3)


def _sweep(runner, counts, kv_len, limit_ms=1e6, deadline_s=600.0, measured=8, kept=None):
    """The sweep over one pre-built runner (``make`` hands it out as is)."""
    def keep(entry):  # a copy, as the report's file keeps it
        if kept is not None:
            kept.append(json.loads(json.dumps(entry)))

    return gpu_streams.realtime_streams(lambda slots, batches, kv: runner, counts, (kv_len,), warm=16,
                                        measured=measured, limit_ms=limit_ms,
                                        deadline=time.monotonic() + deadline_s, keep=keep)


def test_stream_sweep_finishes_each_count_and_leaves_the_runner_empty():
    runner = _runner(budget=16)  # 4 streams' windows do not fit one step
    kept: list[dict] = []
    kv = _sweep(runner, (2, 4), 256, kept=kept)["kv_256"]
    assert kv["max_realtime_streams"] == 4 and kv["stopped"] == "every count swept"
    assert kv["streams_4"]["plan_shape"] == [4, 256] and kv["streams_4"]["underruns"] == 0
    assert kv["streams_4"]["drain_steps"] >= 1 and kv["slots"] == 4
    assert gpu_sections.left_in(runner) == 0 and not runner.jobs
    # The sweep so far after the runner's build and after every count.
    assert [sorted(k for k in e["kv_256"] if k.startswith("streams_")) for e in kept[:3]] == [
        [], ["streams_2"], ["streams_2", "streams_4"]]


def test_stream_sweep_stops_at_the_first_count_over_the_limit():
    runner = _runner(budget=2048)
    kv = _sweep(runner, (2, 4), 128, limit_ms=1e-6, measured=4)["kv_128"]
    assert kv["max_realtime_streams"] == 0 and kv["streams_2"]["realtime"] is False
    assert kv["stopped"] == "not real time at 2 streams"
    assert "streams_4" not in kv and gpu_sections.left_in(runner) == 0


def test_streams_whose_chunks_come_late_underrun_and_are_not_real_time(monkeypatch):
    # Steps slower than the audio they make (30 ms for 21.3 ms a code): a
    # listener runs dry, whatever the step-time limit says.
    real = gpu_streams.step

    def slow(driver):
        time.sleep(0.03)
        return real(driver)

    monkeypatch.setattr(gpu_streams, "step", slow)
    kv = _sweep(_runner(budget=2048), (2,), 128, measured=4)["kv_128"]
    row = kv["streams_2"]
    assert row["underruns"] > 0 and row["streams_underrun"] == 2 and row["stall_ms_max"] > 0
    assert row["realtime"] is False and kv["max_realtime_streams"] == 0


def test_stream_sweep_stops_where_memory_or_time_ends(monkeypatch):
    kv = _sweep(_runner(budget=2048), (2, 4, 8), 128, measured=4)["kv_128"]
    assert kv["max_realtime_streams"] == 4 and kv["stopped"] == "memory: 4 slots fit at 128 positions"
    kv = _sweep(_runner(budget=2048), (2, 4), 128, deadline_s=-1.0)["kv_128"]
    assert kv == {"max_realtime_streams": 0, "stopped": "deadline"}

    def oom(*args):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(gpu_streams, "_point", oom)
    kv = _sweep(_runner(budget=2048), (2, 4), 128)["kv_128"]
    assert kv["stopped"].startswith("memory: out of memory at 2 streams") and kv["max_realtime_streams"] == 0


def test_a_section_that_leaves_jobs_behind_fails_and_the_runner_is_reset():
    runner = _runner(budget=2048)

    def leaky():
        driver = gpu_sections.Driver(runner)
        gpu_sections.add_jobs(driver, 2, 8)
        gpu_sections.step(driver)
        return {"measured": 1}

    entry = gpu_check._clean(runner, leaky)()
    assert entry["error"] == "the section left 2 jobs in the runner" and gpu_check._failed(entry)
    assert gpu_sections.left_in(runner) == 0


def test_a_lost_device_ends_the_run_with_what_was_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "server_section",
                        lambda plan, device, log_dir, keep: {"first_audio_ms": 12.5})

    def lost(*args):
        raise DeviceFailure("AcceleratorError: CUDA error: an illegal memory access")

    monkeypatch.setattr(gpu_sections, "serving", lost)
    out = tmp_path / "report.json"
    assert gpu_check.main(["--out", str(out), "--device", "cpu", "--tiny"]) == 1
    report = json.loads(out.read_text())
    assert report["server"]["first_audio_ms"] == 12.5  # kept
    assert report["device_lost"] == "serving" and "illegal memory" in report["serving"]["error"]
    for name in ("fidelity", "graphs"):
        assert report[name] == {"skipped": "the device was lost in serving"}
    assert all("skipped" in report[n] for n in gpu_check.ON_SERVING_RUNNER)


def test_busy_sampler_reports_the_mean_fraction_or_none_on_the_cpu():
    readings = iter([50.0, 100.0] + [100.0] * 1000)
    with BusySampler("cuda", period_s=0.001, reader=lambda: next(readings)) as busy:
        while len(busy.samples) < 2:
            pass
    report = busy.report()
    assert report["busy_samples"] >= 2 and 0.5 <= report["gpu_busy_fraction"] <= 1.0
    with BusySampler("cpu") as idle:
        pass
    assert idle.report() == {"gpu_busy_fraction": None, "busy_note": "not a GPU"}


def test_pin_attention_turns_cudnn_attention_off():
    before = sdpa.backends()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        enabled = sdpa.pin_attention()
        assert enabled == {"cudnn": False, "flash": True, "mem_efficient": True, "math": True}
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before["cudnn"])


def test_attention_section_times_both_paths_and_they_agree():
    from realtime.engine.cuda import live_attention
    from realtime.engine.model.shapes import TINY
    from tools.gpu_attention import attention_section

    entry = attention_section(TINY, "cpu", torch.float32, 8, ((2, 128), (4, 256)), repeats=1)
    gathered, in_place = entry["b2_kv128"], entry["b4_kv256"]
    assert gathered["current_path"] == "gathered" and in_place["current_path"] == "in place"
    for row in (gathered, in_place):
        assert row["current_read_mib"] > row["live_read_mib"] > 0 and row["current_us"] > 0
        if live_attention.available("cpu") is None:
            assert row["max_abs_diff"] < 1e-4 and row["live_us"] > 0


def test_overlap_section_times_both_modes_and_restores_the_runner():
    runner = _runner(budget=2048)
    entry = gpu_audio.overlap(runner, (2, 8), 256, 16, 4, 1)
    row = entry["streams_2"]
    assert row["audio_identical"] is True and row["deferred_audio_identical"] is True
    assert "error" not in row and "deferred_p99_gain_ms" in row
    assert row["off_step_ms_p99"] >= row["off_step_ms_p50"] > 0 and row["on_step_ms_p50"] > 0
    assert row["deferred_step_ms_p99"] >= row["deferred_step_ms_p50"] > 0
    assert "skipped" in entry["streams_8"]  # more than the runner's slots
    assert runner.audio.delivery.delayed is False and runner.eos.deferred is False
    assert gpu_sections.left_in(runner) == 0 and not runner.eos.pending


def test_overlap_section_fails_a_delayed_path_that_loses_audio(monkeypatch):
    runner = _runner(budget=2048)
    delivery = runner.audio.delivery
    real = delivery.collect

    def lossy(held):
        done = real(held)
        if delivery.delayed:
            done.audio = {j: a[1:] for j, a in done.audio.items()}
        return done

    monkeypatch.setattr(delivery, "collect", lossy)
    row = gpu_audio.overlap(runner, (2,), 256, 16, 4, 1)["streams_2"]
    assert row["audio_identical"] is False and row["audio_snr_db_min"] == -np.inf
    assert gpu_check._failed({"streams_2": row})


def test_overlap_audio_agrees_through_rounding_but_not_a_shifted_window():
    gen = np.random.default_rng(0)
    ref = gen.standard_normal(4096).astype(np.float32)
    rounded = ref + gen.standard_normal(4096).astype(np.float32) * 1e-4  # another summation order
    assert gpu_audio.same_audio_snr_db(ref, ref) == np.inf
    assert gpu_audio.same_audio_snr_db(ref, rounded) > gpu_audio.SAME_AUDIO_SNR_DB
    assert gpu_audio.same_audio_snr_db(ref, np.roll(ref, 1)) < gpu_audio.SAME_AUDIO_SNR_DB
    assert gpu_audio.same_audio_snr_db(ref, ref[:-1]) == -np.inf


def test_overlap_section_fails_a_deferred_read_that_changes_the_audio(monkeypatch):
    runner = _runner(budget=2048)
    reader = runner.eos
    real = reader.take

    def late(keep_newest=False):  # a deferred read that drops each job's last code
        read = real(keep_newest)
        return [(job, True if reader.deferred and job.drawn + 1 >= job.spec.max_new else eos)
                for job, eos in read]

    monkeypatch.setattr(reader, "take", late)
    row = gpu_audio.overlap(runner, (2,), 256, 16, 4, 1)["streams_2"]
    assert row["audio_identical"] is True and row["deferred_audio_identical"] is False
    assert gpu_check._failed({"streams_2": row})


def test_vocoder_precision_section_reports_bf16_against_fp32_on_the_cpu():
    from runtime_fixtures import tiny_assets
    entry = gpu_audio.vocoder_precision(tiny_assets(), "cpu", 1)
    assert set(entry) >= {"fp32", "bf16"} and "tf32" not in entry
    assert 40 <= entry["bf16"]["snr_db_min"] <= entry["bf16"]["snr_db_median"] < 120
    assert entry["fp32"]["packed_call_ms"] > 0
