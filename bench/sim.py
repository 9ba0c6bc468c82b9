"""Discrete-event simulation of the server's model thread over a cost model.

The same arrivals are replayed against three policies:

- ``run_ours``: our ``Scheduler`` itself, driven step by step with a
  simulated runner whose step time comes from the profile's cost table;
- ``run_batcher``: a single-queue dynamic batcher (no lanes, no admission):
  when the model is free it waits until 8 jobs are queued or the oldest has
  waited ``max_wait``, takes the oldest job plus the queued jobs nearest to it
  in length, and runs that static batch until its longest job ends;
- ``run_continuous``: continuous (iteration-level) batching as vLLM, TGI and
  Orca do it: one FCFS queue of segments, no lanes, no admission; at every
  step boundary finished jobs leave and the oldest queued jobs join (prefill
  in the same step) up to the largest batch and the KV slots.

Workload: Poisson interactive utterances (short replies, 1-2 sentences) and
bursts of background utterances (several sentences each) with deadlines.
Load is offered codes per second over the model's peak throughput (codes per
second at the largest batch). First audio is the step that yields a job's
first code.

Thread: plain synchronous code; the clock is simulated.
"""

from __future__ import annotations

import collections
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from clients.probe_report import percentile
from scheduler.config import SchedulerConfig
from scheduler.core import Scheduler
from scheduler.cost import CostModel
from scheduler.jobs import CODES_PER_SECOND, Job
from scheduler.plan import Lane, StepOutput, StepPlan

PREFILL_SHARE = 0.25  # a prefill row costs this fraction of a batch-1 step extra


@dataclass(frozen=True)
class Segment:
    tokens: int  # codes it will really produce
    est: int  # codes estimated from its text
    prompt_len: int


@dataclass(frozen=True)
class Arrival:
    time: float
    lane: Lane
    key: str
    segments: tuple[Segment, ...]
    deadline: float | None  # background: all audio by then

    @property
    def audio_seconds(self) -> float:
        return sum(s.tokens for s in self.segments) / CODES_PER_SECOND


def peak_rate(cost: CostModel, batch: int = 8, bucket: int = 512) -> float:
    """Codes per second the model yields at its largest batch."""
    return batch / cost.step_time(batch, bucket)


MEAN_INTERACTIVE_CODES = 1.5 * 80  # 1-2 sentences of 40-120 codes
MEAN_BURST_CODES = 6.5 * 2.5 * 165  # 3-10 utterances of 1-4 sentences of 80-250 codes


def workload_duration(load: float, cost: CostModel, bursts: int, interactive_share: float = 0.2) -> float:
    """Seconds of arrivals that bring about ``bursts`` background bursts."""
    rate = (1 - interactive_share) * load * peak_rate(cost)
    return bursts * MEAN_BURST_CODES / rate


def workload(load: float, cost: CostModel, duration: float, seed: int,
             interactive_share: float = 0.2) -> list[Arrival]:
    """Arrivals offering ``load`` x peak codes per second for ``duration`` s.

    A background utterance's deadline is 10 s plus twice the time its codes
    take one row of a full batch: slack that a model with spare capacity
    meets, on any profile.
    """
    rate = load * peak_rate(cost)
    row_seconds = cost.step_time(8, 512)
    arrivals: list[Arrival] = []
    # One random stream per lane: with the duration from workload_duration,
    # every load point sees the same utterances, only closer together.
    talk, jobs = random.Random(seed), random.Random(seed + 1)

    def segment(rng: random.Random, lo: int, hi: int) -> Segment:
        est = rng.randint(lo, hi)
        real = max(4, int(est * rng.lognormvariate(0.0, 0.15)))
        return Segment(real, est, rng.randint(30, 90))

    t, n = 0.0, 0
    while True:
        t += talk.expovariate(interactive_share * rate / MEAN_INTERACTIVE_CODES)
        if t >= duration:
            break
        n += 1
        segs = tuple(segment(talk, 40, 120) for _ in range(talk.randint(1, 2)))
        arrivals.append(Arrival(t, Lane.INTERACTIVE, f"i{n}", segs, None))
    t = 0.0
    while True:
        t += jobs.expovariate((1 - interactive_share) * rate / MEAN_BURST_CODES)
        if t >= duration:
            break
        for _ in range(jobs.randint(3, 10)):
            n += 1
            segs = tuple(segment(jobs, 80, 250) for _ in range(jobs.randint(1, 4)))
            at = t + jobs.uniform(0.0, 0.2)
            slack = 10.0 + 2.0 * row_seconds * sum(s.est for s in segs)
            arrivals.append(Arrival(at, Lane.BACKGROUND, f"b{n}", segs, at + slack))
    arrivals.sort(key=lambda a: a.time)
    return arrivals


def step_seconds(cost: CostModel, plan_rows: int, bucket: int, prefills: int, rng: random.Random) -> float:
    base = cost.step_time(plan_rows, bucket) + PREFILL_SHARE * prefills * cost.step_time(1, bucket)
    return base * rng.uniform(0.97, 1.03)


@dataclass
class Outcome:
    """What one policy did with one workload."""

    name: str
    duration: float
    first_audio: list[float] = field(default_factory=list)  # interactive, seconds
    gaps: float = 0.0  # interactive playback silence between segments, seconds
    background_offered: int = 0
    background_refused: int = 0
    background_late: int = 0
    interactive_refused: int = 0
    codes: int = 0  # codes delivered (all lanes)
    refused: list[str] = field(default_factory=list)  # utterance keys
    end: float = 0.0

    @property
    def background_missed(self) -> int:
        """Refused or late: background work not delivered by its deadline."""
        return self.background_refused + self.background_late


class SimRunner:
    """Executes plans instantly in simulated time; knows each job's true length."""

    def __init__(self, cost: CostModel, config: SchedulerConfig, seed: int) -> None:
        self.cost = cost
        self.config = config
        self.rng = random.Random(seed)
        self.length: dict[int, int] = {}
        self.tokens: dict[int, int] = {}

    def execute(self, plan: StepPlan) -> StepOutput:
        for job_id in plan.release:
            self.tokens.pop(job_id, None)
        rows = self.config.padded_batch(len(plan.jobs)) if plan.jobs else 1
        bucket = max(plan.kv_bucket, self.config.kv_buckets[0])
        out = StepOutput(seconds=step_seconds(self.cost, rows, bucket, len(plan.prefill), self.rng))
        finished = []
        for job_id in plan.jobs:
            count = self.tokens.get(job_id, 0) + 1
            self.tokens[job_id] = count
            out.tokens[job_id] = count
            if count >= self.length[job_id]:
                finished.append(job_id)
                del self.tokens[job_id]
        out.finished = tuple(finished)
        return out


class _Tracker:
    """Per-utterance bookkeeping shared by both policies."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.by_key: dict[str, Arrival] = {}
        self.first_code: dict[tuple[str, int], float] = {}
        self.done: dict[tuple[str, int], float] = {}

    def settle(self) -> None:
        """Turn per-segment times into the outcome's figures."""
        out = self.outcome
        for key, arrival in self.by_key.items():
            segs = range(len(arrival.segments))
            if any((key, i) not in self.done for i in segs):
                continue
            if arrival.lane is Lane.INTERACTIVE:
                out.first_audio.append(self.first_code[(key, 0)] - arrival.time)
                play_end = self.first_code[(key, 0)]
                for i in segs:
                    # Streamed audio: a segment starts sounding at its first code
                    # and stalls at least until its last code if that comes late.
                    starts = max(play_end, self.first_code[(key, i)])
                    ends = starts + arrival.segments[i].tokens / CODES_PER_SECOND
                    out.gaps += max(0.0, starts - play_end) if i else 0.0
                    out.gaps += max(0.0, self.done[(key, i)] - ends)
                    play_end = max(ends, self.done[(key, i)])
            else:
                end = max(self.done[(key, i)] for i in segs)
                out.background_late += end > arrival.deadline
        out.background_late += sum(1 for a in self.by_key.values() if a.lane is Lane.BACKGROUND
                                   and any((a.key, i) not in self.done for i in range(len(a.segments))))


def run_ours(arrivals: Sequence[Arrival], truth: CostModel, config: SchedulerConfig,
             duration: float, seed: int = 0, check: bool = False) -> Outcome:
    """Drive our Scheduler with a simulated runner until all work is done."""
    outcome = Outcome("two-lane", duration)
    track = _Tracker(outcome)
    sched = Scheduler(config, CostModel.from_table(truth.table))  # calibrated like a warm-up
    runner = SimRunner(truth, config, seed)
    where: dict[int, tuple[str, int]] = {}
    now, i, next_id = 0.0, 0, 1
    while True:
        while i < len(arrivals) and arrivals[i].time <= now:
            a = arrivals[i]
            i += 1
            jobs = []
            for index, seg in enumerate(a.segments):
                jobs.append(Job(id=next_id, utterance=a.key, index=index, lane=a.lane,
                                prompt_len=seg.prompt_len, est_tokens=seg.est, max_tokens=2048,
                                deadline=a.deadline, arrival=a.time))
                runner.length[next_id] = seg.tokens
                where[next_id] = (a.key, index)
                next_id += 1
            if a.lane is Lane.BACKGROUND:
                outcome.background_offered += 1
            refusal = sched.admit(jobs, now)
            if refusal is None:
                track.by_key[a.key] = a
                continue
            outcome.refused.append(a.key)
            if a.lane is Lane.BACKGROUND:
                outcome.background_refused += 1
            else:
                outcome.interactive_refused += 1
        plan = sched.schedule(now)
        if plan is None:
            if i >= len(arrivals):
                break
            wake = sched.next_wakeup()
            now = max(now, min(arrivals[i].time, wake if wake is not None else arrivals[i].time))
            continue
        out = runner.execute(plan)
        now += out.seconds
        for job_id, count in out.tokens.items():
            if count == 1:
                track.first_code.setdefault(where[job_id], now)
        outcome.codes += len(out.tokens)
        for event in sched.update(plan, out, now):
            track.done[where[event.job_id]] = now
        if check:
            sched.check_invariants()
    outcome.end = now
    track.settle()
    return outcome


def run_batcher(arrivals: Sequence[Arrival], truth: CostModel, duration: float,
                max_batch: int = 8, max_wait: float = 0.05, seed: int = 0,
                config: SchedulerConfig | None = None) -> Outcome:
    """The baseline: one queue, static length-sorted batches, no admission."""
    cfg = config or SchedulerConfig()
    outcome = Outcome(f"batcher {int(max_wait * 1000)} ms", duration)
    track = _Tracker(outcome)
    rng = random.Random(seed)
    queue: list[tuple[float, int, str, int, Segment]] = []  # FIFO of segments
    now, i, order = 0.0, 0, 0
    while i < len(arrivals) or queue:
        while i < len(arrivals) and arrivals[i].time <= now:
            a = arrivals[i]
            i += 1
            track.by_key[a.key] = a
            outcome.background_offered += a.lane is Lane.BACKGROUND
            for index, seg in enumerate(a.segments):
                queue.append((a.time, order, a.key, index, seg))
                order += 1
        if not queue:
            now = arrivals[i].time
            continue
        ready_at = queue[0][0] + max_wait
        if len(queue) < max_batch and now < ready_at:
            now = min(ready_at, arrivals[i].time) if i < len(arrivals) else ready_at
            continue
        head = queue[0]
        window = sorted(queue[: 4 * max_batch], key=lambda q: (abs(q[4].est - head[4].est), q[1]))
        batch = window[:max_batch]
        for item in batch:
            queue.remove(item)
        rows = cfg.padded_batch(len(batch))
        longest = max(q[4].tokens for q in batch)
        for step in range(longest):
            kv = max(q[4].prompt_len + min(step + 1, q[4].tokens) for q in batch)
            now += step_seconds(truth, rows, cfg.bucket(kv), len(batch) if step == 0 else 0, rng)
            for _, _, key, index, seg in batch:
                if step == 0:
                    track.first_code[(key, index)] = now
                if step + 1 == seg.tokens:
                    track.done[(key, index)] = now
                    outcome.codes += seg.tokens
    outcome.end = now
    track.settle()
    return outcome


def run_continuous(arrivals: Sequence[Arrival], truth: CostModel, duration: float,
                   seed: int = 0, config: SchedulerConfig | None = None) -> Outcome:
    """The continuous-batching baseline: one FCFS queue of segments (a
    segment queues when its utterance arrives, after the ones before it),
    rows refilled at every step boundary up to ``max_batch`` and
    ``max_slots``, each step one code per running job."""
    cfg = config or SchedulerConfig()
    outcome = Outcome("continuous", duration)
    track = _Tracker(outcome)
    rng = random.Random(seed)
    queue: collections.deque[tuple[str, int, Segment]] = collections.deque()
    running: list[list] = []  # [key, index, segment, codes so far]
    rows = min(cfg.max_batch, cfg.max_slots)
    now, i = 0.0, 0
    while i < len(arrivals) or queue or running:
        while i < len(arrivals) and arrivals[i].time <= now:
            a = arrivals[i]
            i += 1
            track.by_key[a.key] = a
            outcome.background_offered += a.lane is Lane.BACKGROUND
            queue.extend((a.key, index, seg) for index, seg in enumerate(a.segments))
        if not queue and not running:
            now = arrivals[i].time
            continue
        joined = 0
        while queue and len(running) < rows:
            running.append([*queue.popleft(), 0])
            joined += 1
        kv = max(seg.prompt_len + codes + 1 for _, _, seg, codes in running)
        now += step_seconds(truth, cfg.padded_batch(len(running)), cfg.bucket(kv), joined, rng)
        for job in running:
            key, index, seg, codes = job
            job[3] = codes + 1
            if codes == 0:
                track.first_code[(key, index)] = now
            if job[3] >= seg.tokens:
                track.done[(key, index)] = now
                outcome.codes += seg.tokens
        running = [job for job in running if job[3] < job[2].tokens]
    outcome.end = now
    track.settle()
    return outcome


def realized_load(arrivals: Sequence[Arrival], cost: CostModel, duration: float) -> float:
    """Codes the arrivals really bring, over what the model yields at peak."""
    codes = sum(s.tokens for a in arrivals for s in a.segments)
    return codes / duration / peak_rate(cost)


def stretch(arrivals: Sequence[Arrival], factor: float) -> list[Arrival]:
    """The same arrivals with the gaps between them scaled by ``factor``
    (each deadline keeps its slack), to offer exactly the intended load."""
    return [Arrival(a.time * factor, a.lane, a.key, a.segments,
                    None if a.deadline is None else a.time * factor + (a.deadline - a.time))
            for a in arrivals]


def _ms(seconds: float | None) -> float:
    return float("nan") if seconds is None else 1000.0 * seconds


def summarize(outcome: Outcome) -> Mapping[str, float]:
    offered = max(outcome.background_offered, 1)
    return {
        "ttfa_p50_ms": _ms(percentile(outcome.first_audio, 50)),
        "ttfa_p95_ms": _ms(percentile(outcome.first_audio, 95)),
        "ttfa_p99_ms": _ms(percentile(outcome.first_audio, 99)),
        "bg_miss_rate": outcome.background_missed / offered,
        "bg_late_rate": outcome.background_late / offered,
        "bg_refusal_rate": outcome.background_refused / offered,
        "interactive_refused": outcome.interactive_refused,
        "interactive_refusal_rate": outcome.interactive_refused / max(
            outcome.interactive_refused + len(outcome.first_audio), 1),
        "gap_s_per_utt": outcome.gaps / max(len(outcome.first_audio), 1),
        "codes_per_s": outcome.codes / max(outcome.end, 1e-9),
        "makespan_s": outcome.end,
    }


__all__ = ["Arrival", "Outcome", "Segment", "SimRunner", "peak_rate", "realized_load",
           "run_batcher", "run_continuous", "run_ours", "stretch", "summarize", "workload",
           "workload_duration"]
