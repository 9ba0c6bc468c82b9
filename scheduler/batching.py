"""Which jobs share one model step: batch forming by cost.

Pure functions over candidate lists already in priority order. A batch never
exceeds the largest graph batch size or any member's out-of-memory cap, and
waiting jobs join only while KV slots are free.

Thread: pure functions, model thread.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from scheduler.config import SchedulerConfig
from scheduler.cost import CostModel
from scheduler.jobs import Job, JobState


class SlotBudget:
    """Free KV slots a plan may still hand to waiting jobs.

    ``early`` jobs (a stream's next segment started before its stream's
    current one ends) may take a slot only beyond ``reserve``, the slots the
    other waiting interactive jobs (new streams, streams between segments)
    need now and the accepted streams still waiting for their first sentence
    will need: a stream counts one slot in admission, so its head start must
    not push an admitted stream out.
    """

    def __init__(self, free: int, reserve: int = 0, early: frozenset[int] = frozenset()) -> None:
        self.free = free
        self.reserve = reserve
        self.early = early

    def allows(self, job: Job) -> bool:
        if job.state is not JobState.WAITING:
            return True
        return self.free > (self.reserve if job.id in self.early else 0)

    def take(self, job: Job) -> None:
        if job.state is JobState.WAITING:
            self.free -= 1
            if self.reserve and job.id not in self.early:
                self.reserve -= 1


def fits(config: SchedulerConfig, batch: Sequence[Job], job: Job, limit: int) -> bool:
    size = len(batch) + 1
    if size > min(limit, config.max_batch, job.batch_cap):
        return False
    return all(size <= member.batch_cap for member in batch)


def step_seconds(config: SchedulerConfig, cost: CostModel, jobs: Sequence[Job], projected: bool) -> float:
    """Cost of one step of ``jobs``: padded batch size, KV bucket of the
    longest job (now, or when it is expected to end when ``projected``)."""
    kv = max(j.final_kv_len if projected else j.kv_len for j in jobs)
    return cost.step_time(config.padded_batch(len(jobs)), config.bucket(kv))


def pick_interactive(
    config: SchedulerConfig, ranked: Iterable[Job], slots: SlotBudget
) -> list[Job]:
    """The first ``interactive_batch_size`` runnable jobs in rank order."""
    batch: list[Job] = []
    for job in ranked:
        if len(batch) >= config.interactive_batch_size:
            break
        if slots.allows(job) and fits(config, batch, job, config.interactive_batch_size):
            slots.take(job)
            batch.append(job)
    return batch


def add_riders(
    config: SchedulerConfig,
    cost: CostModel,
    batch: list[Job],
    candidates: Iterable[Job],
    slots: SlotBudget,
    up_to_s: float = 0.0,
    up_to_s_of: Callable[[Job], float] | None = None,
) -> list[Job]:
    """Jobs from ``candidates`` (in order) that ride in an interactive step
    because the bigger batch costs at most ``rider_overhead`` more than
    ``batch`` alone (a launch-bound GPU step), or no more than ``up_to_s``
    (interactive streams: a step that still keeps every stream in real time)
    or than ``up_to_s_of(job)`` (``add_stream_riders``)."""
    kv = max(j.kv_len for j in batch)
    allowed = max(cost.step_time(config.padded_batch(len(batch)), config.bucket(kv))
                  * (1.0 + config.rider_overhead), up_to_s)
    riders: list[Job] = []
    for job in candidates:
        size = len(batch) + len(riders) + 1
        if size > config.max_batch:
            break
        if not slots.allows(job) or not fits(config, batch + riders, job, config.max_batch):
            continue
        longest = max(kv, job.kv_len)
        limit = allowed if up_to_s_of is None else max(allowed, up_to_s_of(job))
        if cost.step_time(config.padded_batch(size), config.bucket(longest)) <= limit:
            slots.take(job)
            riders.append(job)
            kv = longest
    return riders


def add_stream_riders(config: SchedulerConfig, cost: CostModel, batch: list[Job],
                      candidates: Sequence[Job], slots: SlotBudget) -> list[Job]:
    """Streams (``candidates``: running jobs and first segments, in rank
    order) that ride beside ``batch`` while the step keeps each of them in
    real time with the headroom (``realtime_step_s``). Beside running jobs,
    other utterances' running jobs (the first in rank of each) also ride in
    any step cheaper than taking turns with them: each stream then gets its
    codes sooner than in turns, so fewer run dry (a machine slower than the
    load it admitted, or admission by queue bound alone). A new stream's
    prefill leading the step, and an utterance's next sentence (it plays
    later), keep the first rule."""
    if any(j.state is not JobState.ACTIVE for j in batch):
        return add_riders(config, cost, batch, candidates, slots, config.realtime_step_s)
    seen = {j.utterance for j in batch}
    behind: set[int] = set()  # ids of the first running job of each other utterance
    for j in candidates:
        if j.state is JobState.ACTIVE and j.utterance not in seen:
            seen.add(j.utterance)
            behind.add(j.id)
    turns = step_seconds(config, cost, batch, False) * (len(batch) + len(behind)) / len(batch)
    return add_riders(config, cost, batch, candidates, slots, config.realtime_step_s,
                      lambda job: turns if job.id in behind else 0.0)


def pick_background(
    config: SchedulerConfig, cost: CostModel, edf: Sequence[Job], slots: SlotBudget
) -> list[Job]:
    """A batch led by the earliest-deadline runnable job.

    For each KV bucket at or above the leader's, the batch takes the runnable
    jobs (EDF order) whose expected KV length fits that bucket; of those
    batches and their EDF prefixes it runs the one with the most codes per
    second. Jobs headed for a dearer bucket thus join only when the larger
    batch pays for the longer attention (on a launch-bound GPU they always
    do; on a CPU long and short jobs may run apart).
    """
    runnable = [j for j in edf if j.state is not JobState.WAITING or slots.free > 0]
    if not runnable:
        return []
    leader = runnable[0]
    best: list[Job] = []
    best_rate = 0.0
    for bucket in config.kv_buckets:
        if bucket < config.bucket(leader.final_kv_len):
            continue
        batch: list[Job] = []
        free = slots.free
        for job in runnable:
            if len(batch) >= config.max_batch:
                break
            if config.bucket(job.final_kv_len) > bucket or not fits(config, batch, job, config.max_batch):
                continue
            if job.state is JobState.WAITING:
                if free <= 0:
                    continue
                free -= 1
            batch.append(job)
            rate = len(batch) / step_seconds(config, cost, batch, projected=True)
            if rate > best_rate * (1 + 1e-9):
                best, best_rate = list(batch), rate
    for job in best:
        slots.take(job)
    return best
