"""Segments are prepared off the model thread (realtime/server/work/preparation.py).

A runner whose ``prepare`` can be held shut (a gate) shows what the model
thread no longer waits for: streams keep stepping while a tokenizer works,
a cancel of a segment still in preparation lands after its admission (so
it never runs), a cancel of anything else does not wait behind it, and
preparations run in submission order with their errors refused as before.
"""

from __future__ import annotations

import asyncio
import threading

from conftest import wait_until
from test_worker import Sink, _submission, _worker

from realtime.engine.tone import ToneRunner
from realtime.server.work.handoff import UpdateKind
from realtime.server.work.preparation import Preparation, Prepared


class GatedRunner(ToneRunner):
    """A tone runner whose ``prepare`` of a text holding ``SLOW`` waits for
    ``gate``; it records the thread of every ``prepare`` and ``execute``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.prepared: list[str] = []
        self.threads: dict[str, set[str]] = {"prepare": set(), "execute": set()}

    def prepare(self, request):
        self.threads["prepare"].add(threading.current_thread().name)
        if "SLOW" in request.text:
            self.entered.set()
            assert self.gate.wait(20), "the test never opened the gate"
        self.prepared.append(request.text)
        return super().prepare(request)

    def execute(self, plan):
        self.threads["execute"].add(threading.current_thread().name)
        return super().execute(plan)


async def _entered(runner: GatedRunner) -> None:
    assert await asyncio.to_thread(runner.entered.wait, 10), "prepare never started"


async def _slow_beside_a_stream(repeat: int):
    """A worker streaming one long job (1) while a second (2) is held in prepare."""
    runner = GatedRunner(step_seconds=0.002)
    worker = await _worker(runner)
    running, slow = Sink(), Sink()
    worker.submit(_submission(running, ["A long sentence that keeps the model busy. " * repeat], 1))
    await wait_until(lambda: UpdateKind.STARTED in running.kinds())
    worker.submit(_submission(slow, ["A SLOW one to tokenize."], 2))
    await _entered(runner)
    return runner, worker, running, slow


async def test_streams_keep_stepping_while_a_segment_is_prepared():
    runner, worker, running, slow = await _slow_beside_a_stream(4)
    steps = worker.stats.steps
    # The model thread steps on while prepare is held (before: it was prepare's caller).
    await wait_until(lambda: worker.stats.steps >= steps + 5)
    assert not runner.gate.is_set() and UpdateKind.ADMITTED not in slow.kinds()
    runner.gate.set()
    await wait_until(lambda: UpdateKind.FINISHED in slow.kinds() and UpdateKind.FINISHED in running.kinds())
    assert runner.threads == {"prepare": {"prepare"}, "execute": {"model"}}
    await worker.stop()


async def test_a_cancel_during_preparation_lands_after_the_admission():
    runner = GatedRunner(step_seconds=0.002)
    worker = await _worker(runner)
    sink = Sink()
    worker.submit(_submission(sink, ["A SLOW sentence.", "And a second one."], 1))
    await _entered(runner)
    worker.cancel((1, 2), sink)  # the utterance ends while its text is being prepared
    runner.gate.set()
    await wait_until(lambda: len(runner.prepared) == 2 and not worker._preparation.busy)
    await wait_until(lambda: not worker._inbox)
    await asyncio.sleep(0.05)  # a step or two, had the jobs been admitted after the cancel
    assert UpdateKind.STARTED not in sink.kinds()
    assert worker.scheduler.idle and not worker._jobs and runner.slots_in_use == 0
    await worker.stop()


async def test_other_cancels_do_not_wait_behind_a_preparation():
    runner, worker, running, slow = await _slow_beside_a_stream(8)
    worker.cancel((1,), running)
    await wait_until(lambda: runner.slots_in_use == 0 and 1 not in worker._jobs, timeout=5)
    assert not runner.gate.is_set()
    runner.gate.set()
    await wait_until(lambda: UpdateKind.FINISHED in slow.kinds())
    assert UpdateKind.FINISHED not in running.kinds()
    await worker.stop()


async def test_preparation_keeps_submission_order_and_refuses_as_before():
    class Broken(GatedRunner):
        def prepare(self, request):
            if "BREAK" in request.text:
                raise RuntimeError("a tokenizer bug")
            return super().prepare(request)

    runner = Broken()
    worker = await _worker(runner)
    sinks = [Sink() for _ in range(6)]
    texts = [f"Sentence number {i}." for i in range(6)]
    for i, (sink, text) in enumerate(zip(sinks, texts)):
        worker.submit(_submission(sink, [text], 10 + i))
    bad_voice, broken = Sink(), Sink()
    worker.submit(_submission(bad_voice, ["Hello."], 30, voice="nobody"))
    worker.submit(_submission(broken, ["Please BREAK."], 31))
    await wait_until(lambda: all(UpdateKind.FINISHED in s.kinds() for s in sinks))
    await asyncio.wait_for(broken.ended.wait(), 5)
    assert runner.prepared[:6] == texts
    assert bad_voice.updates[-1].kind == UpdateKind.REFUSED
    assert (bad_voice.updates[-1].code, bad_voice.updates[-1].field) == ("unsupported", "voice")
    assert broken.updates[-1].kind == UpdateKind.REFUSED and broken.updates[-1].code == "internal"
    assert "front end failed" in broken.updates[-1].message
    await worker.stop()


def test_a_submission_refused_midway_carries_what_was_prepared():
    from realtime.server.work.inbox import Inbox

    inbox: Inbox = Inbox()
    prep = Preparation(inbox)
    prep.start(ToneRunner())
    sink = Sink()
    prep.submit(_submission(sink, ["Fine.", "Also fine."], 1, voice="nobody"))
    prep.submit(_submission(sink, ["Fine.", "Also fine."], 3))
    taken: list = []
    while len(taken) < 2:
        taken += inbox.take(False, None) or []
    prep.stop()
    refused, ok = taken
    assert isinstance(refused, Prepared) and refused.refusal is not None and refused.jobs == ()
    assert refused.refusal.field == "voice"
    assert isinstance(ok, Prepared) and ok.refusal is None and len(ok.jobs) == 2
    assert not prep.busy


async def test_the_model_runner_tokenizes_on_the_preparation_thread():
    from runtime_fixtures import tiny_runner

    runner = tiny_runner(max_slots=2, batch_sizes=(1, 2), kv_buckets=(128,))
    tokenizer, threads = runner.front.tokenizer, set()

    class Recording:
        """The runner's tokenizer, noting the thread of each call."""

        def __call__(self, *args, **kwargs):
            threads.add(threading.current_thread().name)
            return tokenizer(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(tokenizer, name)

    runner.warmup_first = lambda: {(1, 128): 0.02, (2, 128): 0.03}  # what it measures is not the point
    worker = await _worker(runner)
    runner.front.tokenizer = Recording()
    sink = Sink()
    worker.submit(_submission(sink, ["A short one.", "And another."], 1))
    await wait_until(lambda: sink.kinds().count(UpdateKind.FINISHED) == 2, timeout=60)
    assert threads == {"prepare"}
    await worker.stop()
