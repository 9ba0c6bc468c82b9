"""The runner's contract: audio per job, slots, failures, OOM, warmup."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
import torch
from runtime_fixtures import GREEDY, TEXTS, Driver, FrozenClock, meta_runner, request, tiny_runner

from realtime.engine import runner as runner_module
from realtime.engine.api import SAMPLES_PER_STEP, DeviceFailure, RequestError
from realtime.engine.held import HeldJob, JobSpec
from realtime.engine.vocoder import batch as vocoder_batch
from realtime.engine.vocoder import stage as stage_module
from realtime.engine.vocoder.stage import PUSH_EVERY
from realtime.engine.vocoder.stream import audio_samples
from realtime.server.voices.file import read_voices_file
from scheduler.plan import Lane, StepPlan

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def runner():
    return tiny_runner(max_slots=4)


def test_runner_attributes(runner):
    assert runner.weights_kind == "tiny-random" and runner.device == "cpu"
    assert runner.sample_rate == 24000 and runner.max_slots == 4
    assert "default" in runner.voices
    # first audio: the vocoder's first chunk (4 steps) and its right context (8)
    assert runner.first_audio_steps == 12


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
    # Streamed pieces: float32, and only in steps that made some (the last may be empty).
    assert all(c.dtype == np.float32 for c in d.audio[2]) and all(len(c) for c in d.audio[2][:-1])


def test_empty_text_is_not_scheduled(runner):
    prepared = runner.prepare(request(" ... "))
    assert prepared.empty and prepared.work is None and not runner.jobs


def test_prepare_keeps_nothing(runner):
    prepared = runner.prepare(request(TEXTS[1], seed=1))
    assert prepared.prompt_len > 0 and prepared.work is not None and not runner.jobs


def test_unknown_job_fails_without_raising(runner):
    out = runner.execute(StepPlan(Lane.BACKGROUND, decode=(999,), slots=(0,)))
    assert out.failed == {999: "decode of a job not prefilled in slot 0"} and not out.oom


def test_a_bad_row_fails_alone(runner):
    work = [runner.prepare(request(TEXTS[1], seed=j, min_new_tokens=5)).work for j in range(3)]
    out = runner.execute(StepPlan(Lane.BACKGROUND, prefill=(1, 2, 3), slots=(0, 0, 1), work=tuple(work),
                                  prefill_batch=4, prompt_bucket=32))
    assert out.failed == {2: "prefill into slot 0 breaks the runner's contract"}  # slot 0 taken by 1
    assert set(out.tokens) == {1, 3}
    out = runner.execute(StepPlan(Lane.BACKGROUND, decode=(99, 1, 3), slots=(2, 0, 1), batch_size=4,
                                  kv_bucket=64))
    assert set(out.failed) == {99} and out.tokens == {1: 2, 3: 2}  # the rows after it still ran
    runner.execute(StepPlan(Lane.BACKGROUND, release=(1, 3)))
    assert not runner.jobs


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
    again = Driver(runner)  # and the runner serves again, from a clean state
    again.add(3, request(TEXTS[0], seed=1, min_new_tokens=6, max_new_tokens=6))
    again.add(4, request(TEXTS[1], seed=2, min_new_tokens=6, max_new_tokens=6))
    again.run()
    assert again.tokens == {3: 6, 4: 6} and not runner.jobs


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
    r = tiny_runner(max_slots=2, batch_sizes=(1, 2, 4), kv_buckets=(64, 128))
    start = time.perf_counter()
    timings = r.warmup()
    elapsed = time.perf_counter() - start
    # Batch 4 exceeds the 2 slots: not a shape the scheduler can plan.
    assert set(timings) == {(1, 64), (1, 128), (2, 64), (2, 128)}
    assert all(0 < t <= elapsed for t in timings.values())  # measured inside the warm-up


def test_voices_come_from_the_options_file(tmp_path):
    path = tmp_path / "voices.json"
    path.write_text('{"maple": "seed:11"}')
    r = tiny_runner(max_slots=1, batch_sizes=(1,), kv_buckets=(64,), voices=read_voices_file(str(path)))
    assert "maple" in r.voices and "default" in r.voices
    assert r.prepare(request(TEXTS[1], voice="maple")).prompt_len > 0


def test_runner_buffers_follow_its_device_and_dtype():
    r = meta_runner()
    assert r.device == "cpu"  # hello.model.device: anything but CUDA reads "cpu"
    m = r.model
    tensors = [r.codes, r.hidden, m.cos, m.sin, m.emb_text, m.emb_code, m.norm, *r.cache.k, *r.cache.v]
    assert all(t.device.type == "meta" for t in tensors)
    assert r.cache.k[0].dtype == m.dtype == torch.bfloat16
    assert r.hidden.dtype == torch.float32 and r.codes.dtype == torch.int64
    # One row per slot plus the scratch row that padding rows write.
    assert r.codes.shape[0] == r.hidden.shape[0] == r.max_slots + 1 == r.cache.scratch + 1


def test_runner_step_on_meta_in_bf16():
    # The runner's own prefill and decode (everything but the host read of
    # the EOS flags, which meta cannot do) with bf16 weights and KV.
    r = meta_runner()
    work = [r.prepare(request(t, **GREEDY)).work for t in TEXTS[:3]]
    assert all(isinstance(w, JobSpec) for w in work)
    jobs = [HeldJob(i, w, slot=i) for i, w in enumerate(work)]
    plan = StepPlan(Lane.BACKGROUND, prefill=(0, 1, 2), slots=(0, 1, 2), work=tuple(work),
                    prefill_batch=4, prompt_bucket=32)
    r.pad_batches = True
    pre = r._prefill(jobs, plan)
    assert pre.eos.dtype == torch.bool and pre.eos.shape == (3,) and pre.eos.device.type == "meta"
    for j in jobs:
        j.n_codes = 1
    dec = r._decode(jobs, StepPlan(Lane.BACKGROUND, decode=(0, 1, 2), slots=(0, 1, 2), batch_size=4,
                                   kv_bucket=64))
    assert dec.eos.shape == (3,) and dec.eos.device.type == "meta"


def test_rows_in_one_ascending_run_of_slots_read_the_cache_through_a_view(monkeypatch):
    # model.decode's ``first_slot``: a view for slots first..first+B-1 (eager,
    # unpadded), the gather otherwise. Results are the same; the view is cheaper.
    r = tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64,))
    seen = []
    real = r.model.decode

    def spy(x, slots, pos, cache, kv_len, first_slot=None, in_place=False):
        seen.append(first_slot)
        assert not in_place  # eager decode never attends over every slot
        return real(x, slots, pos, cache, kv_len, first_slot, in_place)

    monkeypatch.setattr(r.model, "decode", spy)
    work = [r.prepare(request(TEXTS[1], seed=i, min_new_tokens=9)).work for i in range(3)]

    def run(slots, pad):
        r.pad_batches = pad
        n = len(slots)
        ids = tuple(range(n))
        r.execute(StepPlan(Lane.BACKGROUND, prefill=ids, slots=slots, work=tuple(work[:n]),
                           prefill_batch=4, prompt_bucket=32))
        seen.clear()
        r.execute(StepPlan(Lane.BACKGROUND, decode=ids, slots=slots, batch_size=4, kv_bucket=64))
        r.execute(StepPlan(Lane.BACKGROUND, release=ids))
        return seen[0]

    assert run((1, 2, 3), pad=False) == 1
    assert run((0, 1), pad=False) == 0
    assert run((0, 2), pad=False) is None
    assert run((2, 1), pad=False) is None
    assert run((1, 2, 3), pad=True) is None  # padded rows use the scratch slot: gather
    assert not r.jobs


def test_steady_steps_send_nothing_to_the_device(monkeypatch):
    # Sampling parameters and positions live per slot on the device: a
    # prefill sends its prompts and parameters (two copies), a decode batch
    # its slot ids when its composition changes, a steady step nothing.
    r = tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64,))
    sent = []
    real = runner_module.upload
    monkeypatch.setattr(runner_module, "upload", lambda t, dev: sent.append(t.numel()) or real(t, dev))
    d = Driver(r)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=8, max_new_tokens=8))
    d.add(2, request(TEXTS[1], seed=2, min_new_tokens=8, max_new_tokens=8))
    counts = []
    for _ in range(4):
        before = len(sent)
        d.step()
        counts.append(len(sent) - before)
    assert counts == [2, 1, 0, 0]  # prefill; the batch's slots once; steady
    d.add(3, request(TEXTS[2], seed=3, min_new_tokens=4, max_new_tokens=4))
    before = len(sent)
    d.step()  # a prefill and the old batch's decode
    d.step()  # a new composition: 3 rows
    assert len(sent) - before == 3
    d.run()


def test_a_failure_after_the_state_advanced_is_undone_on_retry(runner, monkeypatch):
    # Out of memory after the device drew and stored codes: the jobs got
    # nothing, so the next step must start from the host's record again.
    d = Driver(runner)
    d.add(21, request(TEXTS[1], seed=5, min_new_tokens=12, max_new_tokens=12))
    for _ in range(4):
        d.step()
    ref = Driver(tiny_runner(max_slots=4))
    ref.add(21, request(TEXTS[1], seed=5, min_new_tokens=12, max_new_tokens=12))
    ref.run()
    real = runner.step.sample_and_store

    def late_boom(*a, **k):
        real(*a, **k)
        raise torch.OutOfMemoryError("CUDA out of memory (simulated, after the draw)")

    monkeypatch.setattr(runner.step, "sample_and_store", late_boom)
    out = runner.execute(d.plan())
    assert out.oom and not out.tokens
    monkeypatch.setattr(runner.step, "sample_and_store", real)
    d.run()
    assert torch.equal(d.codes[21], ref.codes[21])


def test_prepare_bounds_the_prompt_and_the_codes_by_the_cache():
    r = tiny_runner(max_slots=1, batch_sizes=(1,), kv_buckets=(64,))
    by_len = {}
    for words in range(40, 70):  # one token per "a"
        try:
            prepared = r.prepare(request("a " * words, max_new_tokens=2048))
            by_len[prepared.prompt_len] = prepared
        except RequestError as exc:
            by_len.setdefault("refused", str(exc))
    longest = max(k for k in by_len if k != "refused")
    assert longest == 62  # max_len - 2: room for at least one code and its successor
    assert by_len[62].work.max_new == 2  # the codes fill the cache
    assert by_len["refused"].endswith("prompt tokens, at most 62")
    assert r.prepare(request(" ... ")).prompt_len == 0


def test_unseeded_requests_draw_32_bit_seeds_from_the_options_seed():
    a, b = (tiny_runner(max_slots=1, batch_sizes=(1,), kv_buckets=(64,), seed=7) for _ in range(2))
    seeds_a = [a.prepare(request(TEXTS[1])).work.seed for _ in range(20)]
    assert seeds_a == [b.prepare(request(TEXTS[1])).work.seed for _ in range(20)]
    assert all(0 <= s < 2**32 for s in seeds_a) and len(set(seeds_a)) == 20
    assert a.prepare(request(TEXTS[1], seed=5)).work.seed == 5


def test_a_vocoder_failure_fails_its_job_only(runner, monkeypatch):
    d = Driver(runner)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=6, max_new_tokens=6))
    d.add(2, request(TEXTS[1], seed=2, min_new_tokens=6, max_new_tokens=6))
    d.add(3, request(TEXTS[2], seed=3, min_new_tokens=6, max_new_tokens=6))
    for _ in range(5):
        d.step()
    real = runner.vocoder.render_on_device
    calls = []

    def broken(vocoder, hiddens):
        raise RuntimeError("packed call broke")

    def flaky(hidden):
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("vocoder broke")
        return real(hidden)

    # The three finish together: their packed call fails, then each is
    # rendered alone and only the one whose render fails is lost.
    monkeypatch.setattr(vocoder_batch, "_render_packed", broken)
    monkeypatch.setattr(runner.vocoder, "render_on_device", flaky)
    out = d.step(check=False)
    assert len(calls) == 3  # the others were still vocoded
    (failed,) = out.failed
    assert out.failed[failed] == "vocoder failed: RuntimeError: vocoder broke"
    assert failed not in out.finished and failed not in out.audio and len(out.audio) == 2
    assert not runner.jobs


def test_streaming_jobs_push_every_few_codes(runner):
    d = Driver(runner)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=11, max_new_tokens=11, streaming=True))
    pushed = []
    for _ in range(10):
        d.step()
        job = runner.jobs[1]
        pushed.append((job.n_codes, job.stream.steps if job.stream is not None else 0))
    assert pushed == [(n, n - n % PUSH_EVERY) for n in range(1, 11)]
    d.run()
    assert d.tokens[1] == 11


def test_a_job_that_follows_another_renders_larger_chunks_while_its_listener_holds_audio():
    # Sentence 2 plays after sentence 1's audio (StepPlan.follows): with the
    # listener 2 s ahead, its chunks wait and grow, so the vocoder
    # renders fewer steps; the codes are the same and the audio has the
    # same length. A job that follows nothing chunks as before.
    runner = tiny_runner(max_slots=4)
    runner.vocoder.clock = FrozenClock()
    codes = 141
    rendered, audio = {}, {}
    for follows in (False, True):
        d = Driver(runner)
        d.add(1, request(TEXTS[0], seed=1, min_new_tokens=100, max_new_tokens=100, streaming=True))
        d.run()
        before = runner.vocoder.steps_rendered
        d.add(2, request(TEXTS[1], seed=2, min_new_tokens=codes, max_new_tokens=codes, streaming=True),
              follows=1 if follows else None)
        d.run()
        rendered[follows] = runner.vocoder.steps_rendered - before
        audio[follows] = d.audio[2]
        assert d.tokens[2] == codes
        runner.reset()
    # Pushed 4 codes at a time: 2.6 steps rendered a code, held 1.4.
    assert rendered[False] == 371
    assert rendered[True] == (128 + 8) + (51 + codes - 128) == 200
    assert [len(c) // SAMPLES_PER_STEP for c in audio[True] if len(c)][0] == 128
    held, free = np.concatenate(audio[True]), np.concatenate(audio[False])
    assert len(held) == len(free) == audio_samples(codes)
    assert float(10 * np.log10(np.sum(free ** 2) / np.sum((held - free) ** 2))) > 45


def test_a_jobs_listener_holds_only_the_whole_frames_its_client_gets(runner):
    # frame_s reaches the job's stream: with 0.5 s frames the listener holds
    # nothing until 24 codes are out; at the segment's end, everything.
    runner.vocoder.clock = FrozenClock()
    try:
        d = Driver(runner)
        for job, frame_s in ((1, 0.5), (2, 0.0)):
            req = dataclasses.replace(request(TEXTS[0], seed=1, min_new_tokens=40, max_new_tokens=40,
                                              streaming=True), frame_s=frame_s)
            d.add(job, req)
        for _ in range(30):
            d.step()
        framed, free = runner.jobs[1].stream, runner.jobs[2].stream
        assert 0 < framed.emitted_samples < 24000 // 2 and framed.emitted_samples == free.emitted_samples
        assert framed.listener.play_end() is None
        assert free.listener.play_end() == pytest.approx(FrozenClock.now + free.emitted_samples / 24000)
        d.run()
        assert runner.audio.ends[1] == runner.audio.ends[2] == pytest.approx(
            FrozenClock.now + audio_samples(40) / 24000)
    finally:
        runner.reset()


def test_a_follower_reads_its_predecessors_audio_while_it_runs_and_after_it_ended(runner, monkeypatch):
    runner.vocoder.clock = FrozenClock()
    try:
        d = Driver(runner)
        d.add(1, request(TEXTS[0], seed=1, min_new_tokens=40, max_new_tokens=40, streaming=True))
        for _ in range(30):
            d.step()
        d.add(2, request(TEXTS[1], seed=2, min_new_tokens=20, max_new_tokens=20, streaming=True), follows=1)
        d.step()
        first, second = runner.jobs[1], runner.jobs[2]
        d.step()  # job 2 has a stream now; job 1's audio so far is what it follows
        assert second.stream.listener.play_end() == first.stream.listener.play_end()
        d.run()
        end = runner.audio.ends[1]
        assert end == pytest.approx(FrozenClock.now + audio_samples(40) / 24000)
        assert runner.audio.ends[2] == pytest.approx(end + audio_samples(20) / 24000)
        # Bounded: past KEPT_ENDS the oldest end goes first.
        monkeypatch.setattr(stage_module, "KEPT_ENDS", 2)
        d.add(3, request(TEXTS[0], seed=3, min_new_tokens=8, max_new_tokens=8, streaming=True), follows=2)
        d.run()
        assert list(runner.audio.ends) == [2, 3]
        runner.reset()
        assert not runner.audio.ends
    finally:
        runner.vocoder.clock = time.monotonic


def test_serving_runners_run_real_rows_only():
    r = tiny_runner(max_slots=2, batch_sizes=(1, 2), kv_buckets=(64,))
    assert r.pad_batches is False and r.graphs is None
    r.execute(StepPlan(Lane.BACKGROUND, prefill=(1,), slots=(0,), work=(r.prepare(request(
        TEXTS[1], seed=1, min_new_tokens=1, max_new_tokens=1)).work,), prefill_batch=1, prompt_bucket=32))
    assert not r.jobs and not r.audio.awaiting


def test_warmup_runs_on_the_runners_device():
    r = meta_runner(max_slots=2)
    timings = r.warmup()  # every tensor the timing loop makes must be on meta
    assert set(timings) == {(b, 64) for b in (1, 2)}
