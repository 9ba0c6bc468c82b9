"""Self-checks of the scheduler's state, for tests and simulations.

``check_state`` verifies the books after any call (lanes, utterances,
segment order, slots, queue bounds, held places, the last plan, the state counts);
``check_plan`` verifies a plan ``schedule`` just returned. Both raise
AssertionError naming every problem found. Cheap enough to run after every
step of a simulation.

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Protocol

from scheduler.admission import queued_utterances
from scheduler.book import JobBook
from scheduler.config import QUEUE_ONLY, SchedulerConfig
from scheduler.jobs import Job, JobState
from scheduler.plan import JobId, Lane, StepPlan


class Checked(Protocol):
    """What the checks read of a scheduler (``scheduler.core.Scheduler``
    has it; the checks sit below it, so core can call them)."""

    @property
    def config(self) -> SchedulerConfig: ...

    @property
    def book(self) -> JobBook: ...

    @property
    def reservations(self) -> Iterable[Hashable]: ...

    @property
    def last_plan(self) -> StepPlan | None: ...

    def job(self, job_id: JobId) -> Job | None: ...


def check_state(sched: Checked) -> None:
    """Raise AssertionError if ``sched``'s state is inconsistent."""
    cfg, book = sched.config, sched.book
    problems = _job_problems(book) + _slot_problems(cfg, book)
    for lane, bound in ((Lane.INTERACTIVE, cfg.max_queue_interactive),
                        (Lane.BACKGROUND, cfg.max_queue_background)):
        # Queue-only bounds waiting segments; capacity admission bounds
        # utterances that have not begun.
        queued = (book.depth(lane) if cfg.admission == QUEUE_ONLY
                  else queued_utterances(book.live_utterances(lane)))
        if queued > bound:
            problems.append(f"{lane.value} queue over its bound")
    # A held place turns into the stream when its first segment is queued.
    problems += [f"utterance {key!r} holds a place and has segments"
                 for key in sched.reservations
                 if (utt := book.utterance(key)) is not None and utt.segments]
    plan = sched.last_plan
    if plan is not None and plan.jobs:
        problems += _last_plan_problems(cfg, book, plan)
    if problems:
        raise AssertionError("; ".join(problems))


def _job_problems(book: JobBook) -> list[str]:
    problems: list[str] = []
    seen: set[JobId] = set()
    for lane in Lane:
        waiting = active = 0
        for job_id, job in book.jobs(lane).items():
            if job_id in seen:
                problems.append(f"job {job_id} is live in both lanes")
            seen.add(job_id)
            if job.lane is not lane or job.id != job_id:
                problems.append(f"job {job_id} is filed under the wrong lane or id")
            if job.state.terminal:
                problems.append(f"ended job {job_id} is still live")
            waiting += job.state is JobState.WAITING
            active += job.state is JobState.ACTIVE
            utt = book.utterance(job.utterance)
            if utt is None or utt.segments.get(job.index) is not job:
                problems.append(f"job {job_id} is missing from its utterance")
            elif job.started and not all(
                    s.started or s.state.terminal for i, s in utt.segments.items() if i < job.index):
                problems.append(f"job {job_id} started before an earlier segment")
            if (job.state is JobState.ACTIVE) != job.started:
                problems.append(f"job {job_id} holds a slot iff started: broken")
            if (job.state is JobState.ACTIVE) != (job.slot >= 0):
                problems.append(f"job {job_id} in state {job.state.name} has slot {job.slot}")
        if (waiting, active) != book.counts(lane):
            problems.append(f"{lane.value} counts {book.counts(lane)} (waiting, active); "
                            f"the jobs say {waiting}, {active}")
    if set(book.releases) & seen or len(set(book.releases)) != len(book.releases):
        problems.append("a slot to release belongs to a live job or is listed twice")
    return problems


def _slot_problems(cfg: SchedulerConfig, book: JobBook) -> list[str]:
    problems: list[str] = []
    owners = book.slot_owners()
    free = book.free_slot_list()
    if len(owners) != book.held():
        problems.append(f"{book.held()} slots counted held, {len(owners)} distinct slots owned")
    if set(owners) & set(free) or len(set(free)) != len(free):
        problems.append("a slot is both free and held, or free twice")
    if sorted(list(owners) + free) != list(range(cfg.max_slots)):
        problems.append(f"slots held {sorted(owners)} and free {free} are not 0..{cfg.max_slots - 1}")
    if book.held(Lane.BACKGROUND) > cfg.background_slots:
        problems.append(f"background holds {book.held(Lane.BACKGROUND)} > {cfg.background_slots} slots")
    return problems


def _last_plan_problems(cfg: SchedulerConfig, book: JobBook, plan: StepPlan) -> list[str]:
    problems: list[str] = []
    if len(set(plan.jobs)) != len(plan.jobs):
        problems.append("a job appears twice in the last plan")
    if len(plan.slots) != len(plan.jobs) or len(set(plan.slots)) != len(plan.slots):
        problems.append(f"the last plan's slots {plan.slots} do not match its jobs {plan.jobs}")
    if len(plan.work) != len(plan.prefill):
        problems.append("the last plan's work does not match its prefills")
    if plan.decode and (plan.batch_size not in cfg.batch_sizes or plan.batch_size < len(plan.decode)):
        problems.append(f"batch size {plan.batch_size} for {len(plan.decode)} decode rows")
    if plan.prefill and (plan.prefill_batch not in cfg.batch_sizes
                         or plan.prefill_batch < len(plan.prefill)):
        problems.append(f"prefill batch {plan.prefill_batch} for {len(plan.prefill)} prompts")
    if plan.lane is Lane.BACKGROUND and any(
            (j := book.job(i)) is not None and j.lane is Lane.INTERACTIVE for i in plan.jobs):
        problems.append("interactive job in a background step")
    return problems


def check_plan(sched: Checked, plan: StepPlan) -> None:
    """Raise AssertionError if ``plan`` (just returned by ``schedule``) names
    a job that is not live and holding the slot it names, or exceeds a job's cap."""
    for job_id, slot in zip(plan.jobs, plan.slots):
        job = sched.job(job_id)
        if job is None or job.state is not JobState.ACTIVE:
            raise AssertionError(f"plan names job {job_id} which is not running")
        if job.slot != slot:
            raise AssertionError(f"plan gives job {job_id} slot {slot}; it holds {job.slot}")
        if len(plan.jobs) > job.batch_cap:
            raise AssertionError(f"job {job_id} runs in a batch over its cap {job.batch_cap}")
    for job_id in plan.prefill:
        job = sched.job(job_id)
        if job is not None and job.prompt_len > plan.prompt_bucket:
            raise AssertionError(f"prompt of {job_id} longer than the prompt bucket")
    if len(plan.follows) != len(plan.prefill):
        raise AssertionError(f"follows {plan.follows} does not name one job per prefill job")
    for job_id in plan.decode:
        job = sched.job(job_id)
        # The largest bucket is the cache: a job there ends at its capacity.
        if job is not None and job.kv_len > plan.kv_bucket < max(sched.config.kv_buckets):
            raise AssertionError(f"decode of {job_id} at KV length {job.kv_len} "
                                 f"over bucket {plan.kv_bucket}")
