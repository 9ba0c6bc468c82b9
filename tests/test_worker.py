"""The model thread on its own (no sockets): admission, steps, failures, recovery."""

from __future__ import annotations

import asyncio
import time

import numpy as np
from conftest import wait_until

from realtime.engine.api import NamedVoice, SeedVoice, SegmentRequest
from realtime.engine.tone import ToneRunner
from realtime.server.voices.samples import runtime_voice
from realtime.server.work.handoff import SegmentWork, Submission, UpdateKind
from realtime.server.work.worker import ModelWorker
from scheduler import Lane, SchedulerConfig


class Sink:
    def __init__(self) -> None:
        self.updates = []
        self.ended = asyncio.Event()

    def on_worker_update(self, update) -> None:
        self.updates.append(update)
        if update.kind in (UpdateKind.REFUSED, UpdateKind.FAILED):
            self.ended.set()

    def kinds(self, job_id=None):
        return [u.kind for u in self.updates if job_id is None or u.job_id == job_id]


def _config(runner):
    return SchedulerConfig(batch_sizes=runner.batch_sizes, kv_buckets=runner.kv_buckets,
                           max_slots=runner.max_slots)


def _submission(sink, texts, first_id, first=True, lane=Lane.INTERACTIVE, voice="seed:1", index=0):
    work = tuple(SegmentWork(first_id + i, index + i, SegmentRequest(text=t, voice=runtime_voice(voice)), 10)
                 for i, t in enumerate(texts))
    return Submission(sink, lane, 0.0, None, work, first)


async def _worker(runner):
    worker = ModelWorker(lambda: runner, _config)
    await worker.start()
    return worker


async def test_segments_are_admitted_run_and_finished_with_their_audio():
    runner = ToneRunner()
    worker = await _worker(runner)
    sink = Sink()
    worker.submit(_submission(sink, ["Hello.", "World again."], 1))
    await wait_until(lambda: sink.kinds().count(UpdateKind.FINISHED) == 2)
    assert sink.kinds()[0] == UpdateKind.ADMITTED
    for job_id, text in ((1, "Hello."), (2, "World again.")):
        kinds = sink.kinds(job_id)
        assert kinds[0] == UpdateKind.STARTED and kinds[-1] == UpdateKind.FINISHED
        audio = np.concatenate([u.audio for u in sink.updates
                                if u.job_id == job_id and u.kind == UpdateKind.AUDIO])
        assert len(audio) == len(text) * 512
    await worker.stop()


async def test_only_a_jobs_last_audio_is_marked_last():
    """Word timings fold a segment's end into its last chunk on this mark."""
    runner = ToneRunner(codes_per_step=4)
    worker = await _worker(runner)
    sink = Sink()
    work = (SegmentWork(1, 0, SegmentRequest(text="A streaming sentence here.", voice=SeedVoice(1),
                                             streaming=True), 10),)
    worker.submit(Submission(sink, Lane.INTERACTIVE, 0.0, None, work, True))
    await wait_until(lambda: UpdateKind.FINISHED in sink.kinds())
    marks = [u.last for u in sink.updates if u.kind == UpdateKind.AUDIO]
    assert len(marks) > 2 and marks == [False] * (len(marks) - 1) + [True]
    after = sink.kinds(1)[sink.kinds(1).index(UpdateKind.AUDIO):]
    assert after[-2:] == [UpdateKind.AUDIO, UpdateKind.FINISHED]
    await worker.stop()


async def test_updates_arrive_in_one_callback_per_step():
    runner = ToneRunner(step_seconds=0.002)
    worker = await _worker(runner)
    loop = asyncio.get_running_loop()
    calls = []
    original = loop.call_soon_threadsafe

    def counting(callback, *args, **kwargs):
        calls.append(callback)
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = counting
    try:
        sink = Sink()
        worker.submit(_submission(sink, ["A streaming sentence here."], 1))
        await wait_until(lambda: UpdateKind.FINISHED in sink.kinds())
    finally:
        loop.call_soon_threadsafe = original
    assert len(calls) <= worker.stats.steps + 1  # + the admission answer
    await worker.stop()


async def test_empty_text_and_voice_errors():
    worker = await _worker(ToneRunner())
    sink = Sink()
    worker.submit(_submission(sink, ["...", "!!"], 1))
    await wait_until(lambda: UpdateKind.ADMITTED in sink.kinds())
    assert sink.kinds() == [UpdateKind.EMPTY, UpdateKind.EMPTY, UpdateKind.ADMITTED]
    bad = Sink()
    worker.submit(_submission(bad, ["Hello."], 10, voice="nobody"))
    await asyncio.wait_for(bad.ended.wait(), 5)
    assert bad.updates[-1].code == "unsupported" and bad.updates[-1].field == "voice"
    await worker.stop()


async def test_failed_job_fails_alone():
    worker = await _worker(ToneRunner())
    bad, good = Sink(), Sink()
    worker.submit(_submission(bad, ["Please FAIL."], 1))
    worker.submit(_submission(good, ["All good here."], 2))
    await asyncio.wait_for(bad.ended.wait(), 5)
    await wait_until(lambda: UpdateKind.FINISHED in good.kinds())
    assert bad.updates[-1].code == "internal"
    await worker.stop()


async def test_loop_crash_fails_in_flight_jobs_and_restarts():
    runner = ToneRunner(step_seconds=0.002)
    worker = await _worker(runner)
    victim = Sink()
    worker.submit(_submission(victim, ["A fairly long sentence that is running."], 1))
    await wait_until(lambda: UpdateKind.STARTED in victim.kinds())

    def crash(now):
        raise RuntimeError("injected")

    # A bug in the loop, outside the runner: the recovery builds a fresh
    # scheduler, so the broken one is gone after it.
    worker.scheduler.schedule = crash
    await asyncio.wait_for(victim.ended.wait(), 5)
    assert victim.updates[-1].kind == UpdateKind.FAILED and victim.updates[-1].code == "internal"
    assert worker.stats.restarts == 1
    after = Sink()
    worker.submit(_submission(after, ["Back again."], 50))
    await wait_until(lambda: UpdateKind.FINISHED in after.kinds())
    assert runner.slots_in_use == 0
    await worker.stop()


async def test_cancel_releases_slots_and_leaves_nothing_tracked():
    runner = ToneRunner(step_seconds=0.002)
    worker = await _worker(runner)
    sink = Sink()
    worker.submit(_submission(sink, ["One long sentence. " * 5, "Two long sentence. " * 5], 1))
    await wait_until(lambda: UpdateKind.STARTED in sink.kinds())
    worker.cancel((1, 2))
    await wait_until(lambda: runner.slots_in_use == 0 and worker.stats.in_flight == 0
                 and worker.scheduler.idle and not worker._jobs)
    assert UpdateKind.FINISHED not in sink.kinds()
    await worker.stop()


async def test_startup_failure_is_raised():
    def broken():
        raise RuntimeError("no weights here")

    worker = ModelWorker(broken, _config)
    try:
        await worker.start()
    except RuntimeError as exc:
        assert "no weights here" in str(exc)
    else:
        raise AssertionError("start() should raise")


# -- edges, driven on the test's thread (no model thread: every step is ours) ----------


def _direct_worker(runner, **scheduler_fields):
    """A worker whose loop the test drives: commands and steps run here."""

    def config(r):
        return SchedulerConfig(batch_sizes=r.batch_sizes, kv_buckets=r.kv_buckets,
                               max_slots=r.max_slots, **scheduler_fields)

    worker = ModelWorker(lambda: runner, config)
    worker.runner = runner
    worker._new_scheduler()
    return worker


def _drive(worker, max_steps=2000):
    """Step until the scheduler is idle; returns every update and plan."""
    updates, plans = [], []
    for _ in range(max_steps):
        if worker.scheduler.idle:
            return updates, plans
        now = time.monotonic()
        plan = worker.scheduler.schedule(now)
        if plan is not None and not plan.is_empty:
            plans.append(plan)
            worker._step(plan, now, updates)
    raise AssertionError("the scheduler never went idle")


def test_a_later_submission_refused_at_its_second_segment_is_rolled_back():
    # Background work with a deadline: the append's first new segment fits,
    # its second (far longer) cannot end in time. Interactive later segments
    # are never refused for load, so the lane that can refuse them is used.
    runner = ToneRunner()
    worker = _direct_worker(runner)
    sink = Sink()
    updates = []
    deadline = time.monotonic() + 5.0

    def work(job_id: int, index: int, est_tokens: int) -> SegmentWork:
        return SegmentWork(job_id, index, SegmentRequest(text="A sentence.", voice=SeedVoice(1)),
                           est_tokens)

    worker._submit(Submission(sink, Lane.BACKGROUND, 0.0, deadline, (work(1, 0, 10),), True),
                   updates)
    assert [u.kind for u in updates] == [UpdateKind.ADMITTED]
    later = (work(2, 1, 10), work(3, 2, 1_000_000))
    worker._submit(Submission(sink, Lane.BACKGROUND, 0.0, deadline, later, False), updates)
    assert updates[-1].kind == UpdateKind.REFUSED and updates[-1].code == "deadline_unmeetable"
    sched = worker.scheduler
    assert sched.job(2) is None and sched.job(3) is None  # all or nothing
    assert sched.depth(Lane.BACKGROUND) == 1 and set(worker._jobs) == {1}
    worker._cancel((1,), sink)  # the session ends the refused utterance
    more, plans = _drive(worker)
    assert not any(2 in p.jobs or 3 in p.jobs for p in plans)
    assert sched.idle and runner.slots_in_use == 0 and not worker._jobs


def test_a_later_submission_accepted_whole_runs_every_segment():
    runner = ToneRunner()
    worker = _direct_worker(runner, max_queue_interactive=3)
    sink, updates = Sink(), []
    worker._submit(_submission(sink, ["First sentence here."], 1), updates)
    worker._submit(_submission(sink, ["Second one.", "Third one."], 2, first=False, index=1), updates)
    assert [u.kind for u in updates] == [UpdateKind.ADMITTED]
    more, _ = _drive(worker)
    assert sorted(u.job_id for u in more if u.kind == UpdateKind.FINISHED) == [1, 2, 3]
    assert runner.slots_in_use == 0 and not worker._jobs


def test_a_segment_that_fills_the_kv_cache():
    # The real runner with a 64-position cache. A prompt that leaves no room
    # is refused as unsupported, with the limit in the message; one that fits
    # decodes until the cache is full and ends normally (the client gets
    # ``done`` with that much audio), and nothing is left held.
    from runtime_fixtures import tiny_runner

    from realtime.engine.api import SamplingParams
    from realtime.engine.vocoder.stream import audio_samples

    runner = tiny_runner(max_slots=2, batch_sizes=(1, 2), kv_buckets=(64,))
    worker = _direct_worker(runner)
    sink, updates = Sink(), []
    long = SegmentRequest(text="word " * 80, voice=NamedVoice("ash"))
    worker._submit(Submission(sink, Lane.INTERACTIVE, 0.0, None, (SegmentWork(1, 0, long, 10),), True),
                   updates)
    assert updates[-1].kind == UpdateKind.REFUSED and updates[-1].code == "unsupported"
    assert "too long" in updates[-1].message and "at most 62" in updates[-1].message
    params = SamplingParams(seed=3, min_new_tokens=500, max_new_tokens=500)
    fits = SegmentRequest(text="A short one.", voice=NamedVoice("ash"), params=params)
    prompt_len = runner.prepare(fits).prompt_len
    sink = Sink()
    worker._submit(Submission(sink, Lane.INTERACTIVE, 0.0, None, (SegmentWork(2, 0, fits, 10),), True),
                   updates)
    more, plans = _drive(worker)
    assert max(p.kv_bucket for p in plans) == 64
    kinds = [u.kind for u in more if u.job_id == 2]
    assert kinds[0] == UpdateKind.STARTED and kinds[-1] == UpdateKind.FINISHED
    audio = np.concatenate([u.audio for u in more if u.job_id == 2 and u.kind == UpdateKind.AUDIO])
    assert len(audio) == audio_samples(64 - prompt_len)
    assert worker.scheduler.idle and not runner.jobs and not worker._jobs
