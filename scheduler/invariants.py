"""Self-checks of the scheduler's state, for tests and simulations.

``check_state`` verifies the bookkeeping after any call (lanes, utterances,
segment order, slots, queue bounds, the last plan, the state counts);
``check_plan`` verifies a plan ``schedule`` just returned. Both raise
AssertionError naming every problem found. Cheap enough to run after every
step of a simulation.

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.jobs import JobState
from scheduler.plan import JobId, Lane, StepPlan

if TYPE_CHECKING:
    from scheduler.core import Scheduler


def check_state(sched: Scheduler) -> None:
    """Raise AssertionError if ``sched``'s state is inconsistent."""
    cfg = sched.config
    problems: list[str] = []
    seen: set[JobId] = set()
    for lane, jobs in sched._live.items():
        waiting = active = 0
        for job_id, job in jobs.items():
            if job_id in seen:
                problems.append(f"job {job_id} is live in both lanes")
            seen.add(job_id)
            if job.lane is not lane or job.id != job_id:
                problems.append(f"job {job_id} is filed under the wrong lane or id")
            if job.state.terminal:
                problems.append(f"ended job {job_id} is still live")
            waiting += job.state is JobState.WAITING
            active += job.state is JobState.ACTIVE
            utt = sched._utterances.get(job.utterance)
            if utt is None or utt.segments.get(job.index) is not job:
                problems.append(f"job {job_id} is missing from its utterance")
            elif job.started and not all(
                    s.started or s.state.terminal for i, s in utt.segments.items() if i < job.index):
                problems.append(f"job {job_id} started before an earlier segment")
            if (job.state is JobState.ACTIVE) != job.started:
                problems.append(f"job {job_id} holds a slot iff started: broken")
        index = 0 if lane is Lane.INTERACTIVE else 1
        if (waiting, active) != (sched._waiting[index], sched._active[index]):
            problems.append(f"{lane.value} counts {sched._waiting[index]} waiting, "
                            f"{sched._active[index]} active; the jobs say {waiting}, {active}")
    held = sched._held()
    bg_held = sum(1 for j in sched._live[Lane.BACKGROUND].values() if j.state is JobState.ACTIVE)
    if held + len(sched._release) > cfg.max_slots:
        problems.append(f"{held} + {len(sched._release)} slots held > {cfg.max_slots}")
    if bg_held > cfg.background_slots:
        problems.append(f"background holds {bg_held} > {cfg.background_slots} slots")
    if set(sched._release) & seen or len(set(sched._release)) != len(sched._release):
        problems.append("a slot to release belongs to a live job or is listed twice")
    for lane, bound in ((Lane.INTERACTIVE, cfg.max_queue_interactive),
                        (Lane.BACKGROUND, cfg.max_queue_background)):
        if sched.depth(lane) > bound:
            problems.append(f"{lane.value} queue over its bound")
    plan = sched._last_plan
    if plan is not None and plan.jobs:
        if len(set(plan.jobs)) != len(plan.jobs):
            problems.append("a job appears twice in the last plan")
        if plan.batch_size not in cfg.batch_sizes or plan.batch_size < len(plan.jobs):
            problems.append(f"batch size {plan.batch_size} for {len(plan.jobs)} jobs")
        if plan.lane is Lane.BACKGROUND and any(
                (j := sched.job(i)) is not None and j.lane is Lane.INTERACTIVE for i in plan.jobs):
            problems.append("interactive job in a background step")
    if problems:
        raise AssertionError("; ".join(problems))


def check_plan(sched: Scheduler, plan: StepPlan) -> None:
    """Raise AssertionError if ``plan`` (just returned by ``schedule``) names
    a job that is not live and holding a slot, or exceeds a job's cap."""
    for job_id in plan.jobs:
        job = sched.job(job_id)
        if job is None or job.state is not JobState.ACTIVE:
            raise AssertionError(f"plan names job {job_id} which is not running")
        if len(plan.jobs) > job.batch_cap:
            raise AssertionError(f"job {job_id} runs in a batch over its cap {job.batch_cap}")
