"""The model thread: the one owner of the Runner and the Scheduler.

Sessions on the event loop talk to it only through ``ModelWorker``'s methods
(``submit``, ``cancel``), which put commands in a thread-safe ``Inbox``. The
thread loops::

    drain the inbox (admit/add prepared segment jobs, cancel jobs)
    plan = scheduler.schedule(now)        # None: wait on the inbox, no polling
    out = runner.execute(plan)
    events = scheduler.update(plan, out, now)

Segments are prepared (``Runner.prepare``: tokenized) on the preparation
thread before they reach the inbox (``preparation.py``): an admission never
stalls the decoding streams. The thread hands everything the step produced
(admissions, starts, audio, ends) back to the event loop as a list of
``WorkerUpdate`` delivered to each update's ``sink``: at most one
``loop.call_soon_threadsafe`` per iteration, none while the loop has not yet
taken the previous list (the new updates join it).

Failure handling: a model failure of some jobs comes back from the runner in
``StepOutput.failed`` and fails only those utterances (``internal``). If the
loop itself raises (a bug, or a runner breaking its never-raise contract), the
thread logs it, fails every in-flight job with ``internal``, has the runner
drop every job (``Runner.reset``), builds a fresh scheduler and carries on:
the server keeps serving. A lost device (``DeviceFailure``: a CUDA error that
breaks the context for the whole process) is different: every job fails with
``internal``, every later submission is refused, and ``on_device_lost`` tells
the server, which shuts down so that its supervisor restarts the process.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import assert_never

from protocol import ErrorCode
from realtime.engine.api import DeviceFailure, Runner
from realtime.server.loop_lag import LoopLag
from realtime.server.metrics import Metrics
from realtime.server.retry import to_ms
from realtime.server.work.handoff import (
    CancelJobs,
    Submission,
    UpdateChannel,
    UpdateKind,
    UpdateSink,
    WorkerStats,
    WorkerUpdate,
    refused,
)
from realtime.server.work.inbox import Inbox
from realtime.server.work.observe import StepObserver
from realtime.server.work.preparation import Command, Preparation, Prepared, prepare_submission
from scheduler import (
    CostModel,
    Job,
    JobOutcome,
    Refusal,
    Scheduler,
    SchedulerConfig,
    StepPlan,
)

log = logging.getLogger(__name__)

# While the scheduler holds queued work but plans nothing (it is waiting to fill
# a background batch), the thread re-plans after this long or on the next command.
_BATCH_FILL_WAIT = 0.005


@dataclass(slots=True)
class _Tracked:
    sink: UpdateSink
    started: bool = False


class ModelWorker:
    """Owns the model thread. Construct on the event loop, then ``await start()``.

    ``runner_factory`` builds the Runner on the model thread (loading weights
    there keeps the event loop free to answer ``/healthz`` meanwhile).
    """

    def __init__(
        self,
        runner_factory: Callable[[], Runner],
        scheduler_config: Callable[[Runner], SchedulerConfig],
        metrics: Metrics | None = None,
        on_device_lost: Callable[[str], None] | None = None,
    ) -> None:
        self._runner_factory = runner_factory
        self._scheduler_config = scheduler_config
        self._metrics = metrics
        self._on_device_lost = on_device_lost  # called on the event loop
        self.device_lost: str | None = None
        self._inbox: Inbox[Command] = Inbox()
        self._preparation = Preparation(self._inbox)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.runner: Runner | None = None
        self.scheduler: Scheduler | None = None
        self._cost: CostModel | None = None
        self._jobs: dict[int, _Tracked] = {}
        self._job_ids = itertools.count(1)
        self.stats = WorkerStats()
        self._observer = StepObserver(self.stats, metrics)
        # Updates handed to the loop and not yet delivered: while one delivery
        # is pending, later steps append to it instead of scheduling another.
        self._channel: UpdateChannel | None = None  # set by start(), on the loop
        self.loop_lag = LoopLag()  # how late the event loop runs (GET /load)
        self._busy_since: float | None = None  # end of the last step's update, while stepping
        self.warmup_table: dict[tuple[int, int], float] = {}

    # -- event-loop side ---------------------------------------------------------

    async def start(self) -> None:
        """Start the thread, build and warm the runner; return once ready.

        Raises whatever building or warming the runner raised.
        """
        self._loop = asyncio.get_running_loop()
        self.loop_lag.watch(self._loop)
        self._channel = UpdateChannel(self._loop, self.loop_lag.note)
        ready: asyncio.Future[None] = self._loop.create_future()
        self._thread = threading.Thread(target=self._main, args=(ready,), name="model", daemon=True)
        self._thread.start()
        await ready

    def new_job_id(self) -> int:
        """A job id no other job of this worker has (event loop side)."""
        return next(self._job_ids)

    def submit(self, submission: Submission) -> None:
        self._preparation.submit(submission)  # prepared off the model thread, then to the inbox

    def cancel(self, job_ids: tuple[int, ...], sink: UpdateSink | None = None) -> None:
        """Stop these jobs; with ``sink``, its utterance ended: the scheduler
        also frees the capacity it held while it had no sentence yet."""
        if job_ids or sink is not None:
            self._preparation.cancel(CancelJobs(tuple(job_ids), sink))

    async def stop(self) -> None:
        """Ask the thread to finish its current step and exit; wait for it."""
        self.loop_lag.stop()
        self._inbox.stop()
        self._preparation.stop(0.0)
        if self._thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join, 10.0)

    # -- model thread ------------------------------------------------------------

    def _main(self, ready: asyncio.Future[None]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            self.runner = self._runner_factory()
            started = time.perf_counter()
            # A runner that can leave part of its warm-up for idle time does (warm_start.py).
            self.warmup_table = dict(self.runner.warmup_first())
            log.info("warm-up done in %.2f s: %d (batch, bucket) shapes",
                     time.perf_counter() - started, len(self.warmup_table))
            self._cost = CostModel.from_table(self.warmup_table) if self.warmup_table else None
            self._new_scheduler()
            self._preparation.start(self.runner)
        except BaseException as exc:  # handed to the awaiting coroutine
            log.exception("model start-up failed")
            loop.call_soon_threadsafe(_set_exception, ready, exc)
            return
        loop.call_soon_threadsafe(_set_result, ready)
        while True:
            try:
                self._serve()
                return
            except DeviceFailure as exc:
                self._lose_device(str(exc))
            except Exception:  # the loop itself broke: recover and keep serving
                log.exception("model loop crashed; failing in-flight jobs and restarting")
                self._recover()

    def _new_scheduler(self) -> None:
        assert self.runner is not None
        cost = self._cost if self._cost is not None else CostModel.default_cpu()
        self.scheduler = Scheduler(self._scheduler_config(self.runner), cost)
        self._observer.load(self.scheduler, time.monotonic())

    def _serve(self) -> None:
        sched = self.scheduler
        runner = self.runner
        assert sched is not None and runner is not None
        planned = False
        while True:
            updates: list[WorkerUpdate] = []
            # Warm-up left for idle time: one piece per idle pass, none while a job is held.
            if not planned and sched.idle and self.warming and not self._inbox \
                    and not self._preparation.busy:
                self.warmup_table.update(runner.warm_idle(sched.cost))
            commands = self._take_commands(busy=planned or (sched.idle and self.warming > 0))
            if commands is None:
                return
            for command in commands:
                self._handle(command, updates)
            if self.device_lost is not None:
                self._publish(updates)
                planned = False
                continue  # nothing runs again: submissions are refused until the stop
            now = time.monotonic()
            plan = sched.schedule(now)
            planned = plan is not None and not plan.is_empty
            if plan is not None and planned:
                self._step(plan, now, updates)
            else:
                self._busy_since = None  # the thread may wait now: no back-to-back period
            self._publish(updates)

    @property
    def warming(self) -> int:
        """Warm-up pieces the runner left for idle time (``/readyz``)."""
        return 0 if self.runner is None else self.runner.warmup_left

    def _take_commands(self, busy: bool) -> list[Command] | None:
        """Everything in the inbox (None: stop); with work held but nothing
        planned (a background batch is filling) it waits no longer than the
        scheduler's next wake-up (``Inbox.take``)."""
        sched = self.scheduler
        assert sched is not None
        return self._inbox.take(busy, None if sched.idle else lambda: _wake_at(sched))

    def _handle(self, command: Command, updates: list[WorkerUpdate]) -> None:
        match command:
            case CancelJobs(job_ids=job_ids, sink=sink):
                self._cancel(job_ids, sink)
            case Prepared() if self.device_lost is not None:
                updates.append(refused(command.submission, ErrorCode.INTERNAL,
                                        "the model's device failed; the server is restarting"))
            case Prepared():
                self._submit(command, updates)
            case _:
                assert_never(command)

    def _submit(self, done: Prepared | Submission, updates: list[WorkerUpdate]) -> None:
        """Queue every prepared segment, or refuse them all. A bare
        ``Submission`` (tests driving the loop) is prepared here first."""
        sched, runner = self.scheduler, self.runner
        assert sched is not None and runner is not None
        if isinstance(done, Submission):
            done = prepare_submission(runner, done)
        sub, now = done.submission, time.monotonic()
        if done.refusal is not None:
            updates.append(refused(sub, done.refusal.code, done.refusal.message, done.refusal.field))
            return
        jobs: list[Job] = []
        for seg, prepared in zip(sub.segments, done.jobs):
            if prepared.empty:
                updates.append(WorkerUpdate(sub.sink, UpdateKind.EMPTY, seg.job_id, at=now))
                continue
            jobs.append(Job(
                id=seg.job_id, utterance=sub.sink, index=seg.index, lane=sub.lane,
                prompt_len=prepared.prompt_len, est_tokens=seg.est_tokens,
                max_tokens=seg.request.params.max_new_tokens, deadline=sub.deadline,
                arrival=sub.arrival, work=prepared.work, refine_tokens=prepared.refine_tokens,
            ))
        refusal = self._enqueue(sub, jobs, now)
        self._observer.admission_changed()
        if sched.idle:
            self._observer.load(sched, now)  # no step follows to do it
        if refusal is not None:
            updates.append(refused(sub, ErrorCode(refusal.reason.value), refusal.message,
                                    retry_after_ms=to_ms(refusal.retry_after_s)))
            return
        for job in jobs:
            self._jobs[job.id] = _Tracked(sub.sink)
        if sub.first:
            updates.append(WorkerUpdate(sub.sink, UpdateKind.ADMITTED, at=now))

    def _enqueue(self, sub: Submission, jobs: list[Job], now: float) -> Refusal | None:
        """All of one submission's jobs, or none of them."""
        sched = self.scheduler
        assert sched is not None
        if not jobs:  # nothing to speak yet: judge a new utterance all the same
            return sched.admit_empty(sub.sink, sub.lane, sub.arrival, now) if sub.first else None
        if sub.first:
            return sched.admit(jobs, now)
        for i, job in enumerate(jobs):
            refusal = sched.add(job, now)  # never refused for interactive load
            if refusal is not None:
                for queued in jobs[:i]:  # roll back: a submission is all or nothing
                    sched.cancel(queued.id, now)
                return refusal
        return None

    def _cancel(self, job_ids: tuple[int, ...], sink: UpdateSink | None) -> None:
        sched = self.scheduler
        assert sched is not None
        now = time.monotonic()
        for job_id in job_ids:
            if self._jobs.pop(job_id, None) is not None:
                sched.cancel(job_id, now)  # a running job is released in the next plan
        if sink is not None:
            sched.release(sink)
            if sched.idle:
                self._observer.load(sched, now)  # no step follows to do it

    def _step(self, plan: StepPlan, now: float, updates: list[WorkerUpdate]) -> None:
        sched, runner = self.scheduler, self.runner
        assert sched is not None and runner is not None
        for job_id in plan.prefill:
            tracked = self._jobs.get(job_id)
            if tracked is not None and not tracked.started:
                tracked.started = True
                updates.append(WorkerUpdate(tracked.sink, UpdateKind.STARTED, job_id, at=now))
        out = runner.execute(plan)
        if self._busy_since is not None and not out.nominal:
            # Back to back, a step costs the whole loop's turn (scheduling,
            # hand-offs, the GIL), not just the runner's time: that is the
            # rate streams see, so that is what the cost model learns
            # (unless the runner simulates a model of a fixed step time).
            out.seconds = max(out.seconds, time.perf_counter() - self._busy_since)
        events = sched.update(plan, out, time.monotonic())
        self._busy_since = time.perf_counter()
        self.stats.steps += 1
        at = time.monotonic()
        for job_id, refined in out.refined.items():  # before the audio it reads
            if (tracked := self._jobs.get(job_id)) is not None:
                updates.append(WorkerUpdate(tracked.sink, UpdateKind.REFINED, job_id,
                                            message=refined.text, at=at))
        finished = out.finished  # their audio now is their last (word timings need it)
        for job_id, samples in out.audio.items():
            tracked = self._jobs.get(job_id)
            if tracked is not None and samples is not None and len(samples):
                updates.append(WorkerUpdate(tracked.sink, UpdateKind.AUDIO, job_id, audio=samples,
                                            at=at, last=job_id in finished))
        for event in events:
            tracked = self._jobs.pop(event.job_id, None)
            if tracked is None:
                continue
            if event.outcome is JobOutcome.FINISHED:
                updates.append(WorkerUpdate(tracked.sink, UpdateKind.FINISHED, event.job_id, at=at))
            else:
                log.error("job %s failed: %s", event.job_id, event.message)
                updates.append(WorkerUpdate(tracked.sink, UpdateKind.FAILED, event.job_id,
                                            code=ErrorCode.INTERNAL.value,
                                            message="the model failed on this utterance", at=at))
        self._observer.step(sched, plan, out, len(self._jobs), time.monotonic())

    def _publish(self, updates: list[WorkerUpdate]) -> None:
        if self._channel is not None:
            self._channel.publish(updates)

    def _recover(self) -> None:
        """After a crash of the loop: fail everything in flight, start clean."""
        runner = self.runner
        assert runner is not None
        self.stats.restarts += 1
        if self._metrics is not None:
            self._metrics.worker_restarts.inc()
        runner.reset()
        self._fail_all("the model loop failed")

    def _lose_device(self, reason: str) -> None:
        """The device is gone for good: fail everything in flight, refuse what
        comes, and tell the server (after the failures, in loop order)."""
        log.critical("the model's device failed: %s", reason)
        self.device_lost = reason
        self._fail_all("the model's device failed")
        if self._loop is not None and self._on_device_lost is not None:
            self._loop.call_soon_threadsafe(self._on_device_lost, reason)

    def _fail_all(self, message: str) -> None:
        at = time.monotonic()
        updates = [WorkerUpdate(tracked.sink, UpdateKind.FAILED, job_id,
                                code=ErrorCode.INTERNAL.value, message=message, at=at)
                   for job_id, tracked in self._jobs.items()]
        self._jobs.clear()
        self._new_scheduler()
        self._observer.forget()
        self.stats.in_flight = 0
        self.stats.active_slots = 0
        self._publish(updates)


def _wake_at(sched: Scheduler) -> float:
    wakeup = sched.next_wakeup()
    return time.monotonic() + _BATCH_FILL_WAIT if wakeup is None else wakeup


def _set_result(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _set_exception(fut: asyncio.Future[None], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)
