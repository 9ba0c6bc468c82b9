"""Completion estimates for the background lane, for admission control.

The background lane runs continuous batches: up to ``machines`` jobs advance
one code per step and a finished job's row is refilled at the next step
boundary. That is list scheduling on ``machines`` parallel lines in
earliest-deadline-first order, each line moving one code per step time. The
step time is the cost model's for the batch the lane will run, stretched by
the share of the model the background lane gets beside interactive work.

Thread: pure functions, model thread.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from scheduler.jobs import Job, JobState


def finish_times(
    jobs: Sequence[Job],
    now: float,
    machines: int,
    step_seconds: Callable[[Job], float],
    safety: float = 1.0,
) -> dict[int, float]:
    """Estimated completion time of each job, ``jobs`` in EDF order.

    A waiting job needs one more step for its prefill. A segment never starts
    before the segment before it in its utterance (the order of ``jobs``
    already keeps segments in order; list scheduling keeps start times
    monotone along it).
    """
    lines = [now] * max(machines, 1)
    heapq.heapify(lines)
    done: dict[int, float] = {}
    for job in jobs:
        start = heapq.heappop(lines)
        steps = job.remaining_tokens + (1 if job.state is JobState.WAITING else 0)
        end = start + steps * step_seconds(job) * safety
        heapq.heappush(lines, end)
        done[job.id] = end
    return done


def first_late(
    jobs: Sequence[Job], done: dict[int, float], skip: Callable[[Job], bool] = lambda j: False
) -> Job | None:
    """The first job (in the given order) estimated to end after its deadline."""
    for job in jobs:
        if job.deadline is not None and not skip(job) and done[job.id] > job.deadline:
            return job
    return None
