"""Admission control: may a new utterance's segments join the queue?

Part of the ``Scheduler`` (these functions read its live jobs and its
background estimates, and count refusals in its ``counters``), kept apart
because admission is a question of its own:

- ``overloaded`` when the lane's queue of waiting jobs would exceed its bound;
- for background work, ``deadline_unmeetable`` when the EDF completion
  estimate (``scheduler.estimate``, step times stretched by the share of the
  model background can count on, times ``admission_safety``) ends the new
  work after its deadline, or pushes already admitted work that is on time
  past its own. Jobs already late do not block admissions.

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from scheduler import estimate
from scheduler.jobs import Job, Refusal
from scheduler.plan import Lane
from scheduler.playout import Utterance

if TYPE_CHECKING:
    from scheduler.core import Scheduler


def refusal(sched: Scheduler, lane: Lane, jobs: Sequence[Job], now: float) -> Refusal | None:
    """Why ``jobs`` (new, of one utterance in ``lane``) may not be queued, or None."""
    bound = (sched.config.max_queue_interactive if lane is Lane.INTERACTIVE
             else sched.config.max_queue_background)
    if sched.depth(lane) + len(jobs) > bound:
        sched.counters["refused_overloaded"] += 1
        return Refusal("overloaded", f"the {lane.value} queue is full ({bound} segments)")
    if lane is Lane.BACKGROUND:
        late = late_background(sched, jobs, now)
        if late is not None:
            sched.counters["refused_deadline"] += 1
            return late
    return None


def late_background(sched: Scheduler, new: Sequence[Job], now: float) -> Refusal | None:
    """Refuse when the new jobs would end late, or make an admitted job
    that is on time late. Jobs already late do not block admissions."""
    cfg = sched.config
    live = list(sched._live[Lane.BACKGROUND].values())
    tmp = Utterance(new[0].utterance, Lane.BACKGROUND, sched._seq + 1, now)
    order = sched._bg_order(live + list(new), extra=tmp)
    machines = sched._bg_machines()
    after = estimate.finish_times(order, now, machines, sched._bg_step(len(order), now),
                                  cfg.admission_safety)
    late = estimate.first_late([j for j in order if j in new], after)
    if late is not None:
        return Refusal("deadline_unmeetable",
                       f"estimated completion in {after[late.id] - now:.1f} s, "
                       f"deadline in {late.deadline - now:.1f} s")
    if not live:
        return None
    before = estimate.finish_times(sched._bg_order(live), now, machines,
                                   sched._bg_step(len(live), now), cfg.admission_safety)
    pushed = estimate.first_late(
        [j for j in order if j not in new], after,
        skip=lambda j: before[j.id] > j.deadline)
    if pushed is not None:
        return Refusal("deadline_unmeetable",
                       "admitting it would make already accepted work miss its deadline")
    return None


def estimate_start(sched: Scheduler, lane: Lane, now: float) -> float:
    """When a job of ``lane`` admitted now would get its first code (estimate)."""
    cfg = sched.config
    if lane is Lane.INTERACTIVE:
        waiting = sched.depth(Lane.INTERACTIVE)
        step = sched.cost.step_time(cfg.padded_batch(min(cfg.interactive_batch_size, cfg.max_batch)),
                                    cfg.kv_buckets[0])
        return now + step * (1 + waiting // cfg.interactive_batch_size)
    jobs = sched._bg_order(sched._live[Lane.BACKGROUND].values())
    if not jobs:
        return now
    done = estimate.finish_times(jobs, now, sched._bg_machines(), sched._bg_step(len(jobs), now))
    ends = sorted(done.values())
    return ends[0] if len(ends) >= sched._bg_machines() else now
