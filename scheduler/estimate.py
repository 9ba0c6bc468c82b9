"""Completion estimates for the background lane: admission and the starvation bound.

The background lane runs continuous batches: up to ``machines`` jobs advance
one code per step and a finished job's row is refilled at the next step
boundary. That is list scheduling on ``machines`` parallel lines in
earliest-deadline-first order, each line moving one code per step time. The
step time is the cost model's for the batch the lane will run, stretched by
the share of the model the background lane gets beside interactive work
(``BackgroundForecast.share``: what recent interactive load and the
interactive work queued now leave, never less than the starvation bound's
guarantee).

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Sequence

from scheduler.book import JobBook
from scheduler.config import SchedulerConfig
from scheduler.cost import CostModel
from scheduler.jobs import Job, JobState
from scheduler.load import InteractiveLoad
from scheduler.plan import Lane
from scheduler.playout import ScheduledUtterance

INF = math.inf


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


class BackgroundForecast:
    """When the background lane's jobs will end, read from the books."""

    def __init__(self, config: SchedulerConfig, cost: CostModel, book: JobBook,
                 load: InteractiveLoad) -> None:
        self.config = config
        self.cost = cost
        self.book = book
        self.load = load

    def edf(self, jobs: Iterable[Job], extra: ScheduledUtterance | None = None) -> list[Job]:
        """``jobs`` by deadline, then admission order, segment and id.
        ``extra`` is an utterance not yet in the books (admission's candidate)."""
        book = self.book

        def key(job: Job) -> tuple[float, int, int, int]:
            utt = book.utterance(job.utterance) or extra
            deadline = INF if job.deadline is None else job.deadline
            return (deadline, utt.seq if utt else 0, job.index, job.id)

        return sorted(jobs, key=key)

    def order(self, jobs: Iterable[Job], extra: ScheduledUtterance | None = None) -> list[Job]:
        """Background jobs in the order they will get rows: the running ones
        keep theirs (background never holds more slots than one batch, so a
        running job is not displaced), then the waiting ones by deadline."""
        ordered = self.edf(jobs, extra)
        return ([j for j in ordered if j.state is JobState.ACTIVE]
                + [j for j in ordered if j.state is not JobState.ACTIVE])

    def machines(self) -> int:
        """Rows the background lane runs in parallel."""
        return max(1, min(self.config.max_batch, self.config.background_slots))

    def floor(self) -> float:
        """The share of steps the starvation bound guarantees background work."""
        return 1.0 / (self.config.interactive_steps_per_background + 1)

    def share(self, now: float) -> float:
        """The share of the model background work can count on."""
        backlog = self.interactive_backlog() / self.config.load_window_s
        return max(1.0 - max(self.load.share(now), backlog), self.floor())

    def interactive_backlog(self) -> float:
        """Seconds of model time the live interactive jobs still need, counted
        like ``InteractiveLoad.account``: a row's share of a step when
        background can ride along, else the whole step."""
        cfg = self.config
        total = 0.0
        for job in self.book.jobs(Lane.INTERACTIVE).values():
            bucket = cfg.bucket(job.final_kv_len)
            step = self.cost.step_time(1, bucket)
            full = self.cost.step_time(cfg.max_batch, bucket)
            if full <= step * (1.0 + cfg.rider_overhead):
                step = full / cfg.max_batch
            total += job.remaining_tokens * step
        return total

    def step_seconds(self, count: int, now: float,
                     share: float | None = None) -> Callable[[Job], float]:
        """Seconds per step a background job sees in a batch of ``count``:
        the batch's step time over the share of the model background gets."""
        cfg = self.config
        batch = cfg.padded_batch(max(1, min(count, self.machines())))
        lane_share = self.share(now) if share is None else share

        def seconds(job: Job) -> float:
            return self.cost.step_time(batch, cfg.bucket(job.final_kv_len)) / lane_share

        return seconds

    def finish_times(self, jobs: Sequence[Job], now: float, share: float | None = None,
                     safety: float = 1.0) -> dict[int, float]:
        """Estimated end of each of ``jobs`` (already in ``order``)."""
        return finish_times(jobs, now, self.machines(), self.step_seconds(len(jobs), now, share),
                            safety)

    def urgent(self, now: float) -> bool:
        """Would some background job miss its deadline (less ``urgent_slack_s``)
        if background got only its guaranteed share of the model from now on?"""
        jobs = self.order(self.book.jobs(Lane.BACKGROUND).values())
        done = self.finish_times(jobs, now, share=self.floor())
        return any(j.deadline is not None and j.deadline - done[j.id] < self.config.urgent_slack_s
                   for j in jobs)
