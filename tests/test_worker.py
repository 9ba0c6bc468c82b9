"""The model thread on its own (no sockets): admission, steps, failures, recovery."""

from __future__ import annotations

import asyncio

import numpy as np

from realtime.handoff import SegmentWork, Submission, UpdateKind
from realtime.runtime.api import SegmentRequest
from realtime.runtime.tone import ToneRunner
from realtime.worker import ModelWorker
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


def _submission(sink, texts, first_id, first=True, lane=Lane.INTERACTIVE, voice="seed:1"):
    work = tuple(SegmentWork(first_id + i, i, SegmentRequest(text=t, voice=voice), 10)
                 for i, t in enumerate(texts))
    return Submission(sink, lane, 0.0, None, work, first)


async def _until(predicate, timeout=5.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "timed out"
        await asyncio.sleep(0.005)


async def _worker(runner):
    worker = ModelWorker(lambda: runner, _config)
    await worker.start()
    return worker


async def test_segments_are_admitted_run_and_finished_with_their_audio():
    runner = ToneRunner()
    worker = await _worker(runner)
    sink = Sink()
    worker.submit(_submission(sink, ["Hello.", "World again."], 1))
    await _until(lambda: sink.kinds().count(UpdateKind.FINISHED) == 2)
    assert sink.kinds()[0] == UpdateKind.ADMITTED
    for job_id, text in ((1, "Hello."), (2, "World again.")):
        kinds = sink.kinds(job_id)
        assert kinds[0] == UpdateKind.STARTED and kinds[-1] == UpdateKind.FINISHED
        audio = np.concatenate([u.audio for u in sink.updates
                                if u.job_id == job_id and u.kind == UpdateKind.AUDIO])
        assert len(audio) == len(text) * 512
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
        await _until(lambda: UpdateKind.FINISHED in sink.kinds())
    finally:
        loop.call_soon_threadsafe = original
    assert len(calls) <= worker.stats.steps + 1  # + the admission answer
    await worker.stop()


async def test_empty_text_and_voice_errors():
    worker = await _worker(ToneRunner())
    sink = Sink()
    worker.submit(_submission(sink, ["...", "!!"], 1))
    await _until(lambda: UpdateKind.ADMITTED in sink.kinds())
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
    await _until(lambda: UpdateKind.FINISHED in good.kinds())
    assert bad.updates[-1].code == "internal"
    await worker.stop()


async def test_loop_crash_fails_in_flight_jobs_and_restarts():
    runner = ToneRunner(step_seconds=0.002)
    worker = await _worker(runner)
    victim = Sink()
    worker.submit(_submission(victim, ["A fairly long sentence that is running."], 1))
    await _until(lambda: UpdateKind.STARTED in victim.kinds())

    def crash():
        raise RuntimeError("injected")

    worker.crash_hook = crash
    await asyncio.wait_for(victim.ended.wait(), 5)
    assert victim.updates[-1].kind == UpdateKind.FAILED and victim.updates[-1].code == "internal"
    assert worker.stats.restarts == 1
    after = Sink()
    worker.submit(_submission(after, ["Back again."], 50))
    await _until(lambda: UpdateKind.FINISHED in after.kinds())
    assert runner.slots_in_use == 0
    await worker.stop()


async def test_cancel_releases_slots_and_leaves_nothing_tracked():
    runner = ToneRunner(step_seconds=0.002)
    worker = await _worker(runner)
    sink = Sink()
    worker.submit(_submission(sink, ["One long sentence. " * 5, "Two long sentence. " * 5], 1))
    await _until(lambda: UpdateKind.STARTED in sink.kinds())
    worker.cancel((1, 2))
    await _until(lambda: runner.slots_in_use == 0 and worker.stats.in_flight == 0
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
