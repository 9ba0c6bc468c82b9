"""The runner's contract: audio per job, slots, failures, OOM, warmup."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import TEXTS, Driver, request, tiny_runner

from realtime.runtime.api import SAMPLES_PER_STEP, DeviceFailure
from realtime.runtime.vocoder import audio_samples
from scheduler.plan import Lane, StepPlan

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def runner():
    return tiny_runner(max_slots=4)


def test_runner_attributes(runner):
    assert runner.weights_kind == "tiny-random" and runner.device == "cpu"
    assert runner.sample_rate == 24000 and runner.max_slots == 4
    assert "default" in runner.voices


def test_audio_for_streaming_and_one_shot_jobs(runner):
    d = Driver(runner)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=30, max_new_tokens=30))
    d.add(2, request(TEXTS[0], seed=1, min_new_tokens=30, max_new_tokens=30, streaming=True))
    d.run()
    assert d.tokens[1] == d.tokens[2] == 30
    one = np.concatenate(d.audio[1])
    streamed = np.concatenate(d.audio[2])
    assert len(d.audio[1]) == 1  # one piece, in the finishing step
    assert len(d.audio[2]) >= 2  # audio while decoding, not only at the end
    assert one.dtype == np.float32 and len(one) == audio_samples(30) == 30 * SAMPLES_PER_STEP - 256
    assert len(streamed) == len(one)
    assert np.abs(one).max() > 0


def test_empty_text_is_not_scheduled(runner):
    prepared = runner.prepare(request(" ... "))
    assert prepared.empty and prepared.work is None and not runner.jobs


def test_prepare_keeps_nothing(runner):
    prepared = runner.prepare(request(TEXTS[1], seed=1))
    assert prepared.prompt_len > 0 and prepared.work is not None and not runner.jobs


def test_unknown_job_fails_without_raising(runner):
    out = runner.execute(StepPlan(Lane.BACKGROUND, decode=(999,), slots=(0,)))
    assert 999 in out.failed and not out.oom


def test_plans_that_break_the_slot_contract_fail_their_jobs(runner):
    work = [runner.prepare(request(TEXTS[1], seed=j, min_new_tokens=5)).work for j in range(6)]
    out = runner.execute(StepPlan(Lane.BACKGROUND, prefill=(10, 11, 12, 13), slots=(0, 1, 2, 3),
                                  work=tuple(work[:4]), prefill_batch=4, prompt_bucket=32))
    assert set(out.tokens) == {10, 11, 12, 13} and not out.failed
    taken = runner.execute(StepPlan(Lane.BACKGROUND, prefill=(14, 15), slots=(3, 4),
                                    work=tuple(work[4:]), prefill_batch=2, prompt_bucket=32))
    assert set(taken.failed) == {14, 15}  # slot 3 is held, slot 4 does not exist
    wrong = runner.execute(StepPlan(Lane.BACKGROUND, decode=(10,), slots=(1,), batch_size=1,
                                    kv_bucket=64))
    assert set(wrong.failed) == {10} and 10 not in runner.jobs
    runner.execute(StepPlan(Lane.BACKGROUND, release=(11, 12, 13)))
    assert not runner.jobs
    again = runner.execute(StepPlan(Lane.BACKGROUND, prefill=(16,), slots=(3,), work=(work[5],),
                                    prefill_batch=1, prompt_bucket=32))
    assert set(again.tokens) == {16} and runner.jobs[16].slot == 3
    runner.execute(StepPlan(Lane.BACKGROUND, release=(16,)))
    assert not runner.jobs


def test_reset_drops_every_job(runner):
    d = Driver(runner)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=30))
    d.add(2, request(TEXTS[1], seed=2, min_new_tokens=30))
    d.step()
    assert set(runner.jobs) == {1, 2}
    runner.reset()
    assert not runner.jobs


def test_oom_advances_nothing_and_retry_matches(runner, monkeypatch):
    d = Driver(runner)
    d.add(20, request(TEXTS[0], seed=3, min_new_tokens=12, max_new_tokens=12))
    for _ in range(4):
        d.step()
    clean = tiny_runner(max_slots=4)
    ref = Driver(clean)
    ref.add(20, request(TEXTS[0], seed=3, min_new_tokens=12, max_new_tokens=12))
    ref.run()
    real = runner.model.decode

    def boom(*a, **k):
        raise torch.OutOfMemoryError("CUDA out of memory (simulated)")

    monkeypatch.setattr(runner.model, "decode", boom)
    out = runner.execute(d.plan())
    assert out.oom and not out.tokens and not out.failed
    assert runner.jobs[20].n_codes == 4
    monkeypatch.setattr(runner.model, "decode", real)
    d.run()
    assert torch.equal(d.codes[20], ref.codes[20])


def test_model_error_fails_the_plan_jobs(runner, monkeypatch):
    d = Driver(runner)
    d.add(30, request(TEXTS[1], seed=1, min_new_tokens=5))
    monkeypatch.setattr(runner.model, "prefill", lambda *a, **k: 1 / 0)
    out = runner.execute(d.plan())
    assert "ZeroDivisionError" in out.failed[30] and not out.oom
    assert not runner.jobs


def test_a_cuda_error_is_a_lost_device_not_a_job_failure(runner, monkeypatch):
    d = Driver(runner)
    d.add(31, request(TEXTS[1], seed=1, min_new_tokens=5))
    d.step()

    def broken(*a, **k):
        raise torch.AcceleratorError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(runner.model, "decode", broken)
    with pytest.raises(DeviceFailure, match="illegal memory access"):
        runner.execute(d.plan())
    runner.reset()


def test_max_new_tokens_ends_a_job(runner):
    d = Driver(runner)
    d.add(40, request(TEXTS[2], seed=1, min_new_tokens=7, max_new_tokens=7))
    d.run()
    assert d.tokens[40] == 7 and d.finished == [40]


def test_warmup_times_each_batch_and_bucket():
    r = tiny_runner(max_slots=2, batch_sizes=(1, 2), kv_buckets=(64, 128))
    timings = r.warmup()
    assert set(timings) == {(1, 64), (1, 128), (2, 64), (2, 128)}
    assert all(t > 0 for t in timings.values())
