"""A deterministic fake runner and clock for the scheduler's tests.

The fake runner keeps the runner's side of the contract strictly: it holds
KV slots, refuses to decode a job without one or to prefill one twice, frees
a slot when its job finishes or fails, and releases only slots it holds. Any
breach raises, so a scheduler bug shows up as a test failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler import CostModel, Job, Lane, Scheduler, SchedulerConfig, StepOutput, StepPlan


class RunnerContractError(AssertionError):
    pass


@dataclass
class FakeRunner:
    max_slots: int
    cost: CostModel
    lengths: dict[int, int] = field(default_factory=dict)  # job id -> codes it will produce
    fail: set[int] = field(default_factory=set)  # job ids the "model" fails on
    oom_above: int | None = None  # batches with more real jobs than this run out of memory
    slots: set[int] = field(default_factory=set)
    tokens: dict[int, int] = field(default_factory=dict)
    plans: list[StepPlan] = field(default_factory=list)

    def execute(self, plan: StepPlan) -> StepOutput:
        self.plans.append(plan)
        for job_id in plan.release:
            if job_id not in self.slots:
                raise RunnerContractError(f"release of {job_id}, which holds no slot")
            self.slots.discard(job_id)
        for job_id in plan.decode:
            if job_id not in self.slots:
                raise RunnerContractError(f"decode of {job_id} without a slot")
        for job_id in plan.prefill:
            if job_id in self.slots:
                raise RunnerContractError(f"prefill of {job_id}, which already holds a slot")
        if len(plan.jobs) > plan.batch_size:
            raise RunnerContractError("more jobs than the batch size")
        seconds = self.cost.step_time(plan.batch_size, max(plan.kv_bucket, 1))
        if self.oom_above is not None and len(plan.jobs) > self.oom_above:
            return StepOutput(oom=True, seconds=seconds)
        self.slots.update(plan.prefill)
        if len(self.slots) > self.max_slots:
            raise RunnerContractError(f"{len(self.slots)} slots > {self.max_slots}")
        out = StepOutput(seconds=seconds)
        finished = []
        for job_id in plan.jobs:
            if job_id in self.fail:
                out.failed[job_id] = "injected failure"
                self.slots.discard(job_id)
                continue
            self.tokens[job_id] = self.tokens.get(job_id, 0) + 1
            out.tokens[job_id] = self.tokens[job_id]
            if self.tokens[job_id] >= self.lengths.get(job_id, 10):
                finished.append(job_id)
                self.slots.discard(job_id)
        out.finished = tuple(finished)
        return out


class Harness:
    """A scheduler, its fake runner and a fake clock; ``step()`` runs one
    plan and checks every invariant."""

    def __init__(self, config: SchedulerConfig | None = None, cost: CostModel | None = None) -> None:
        self.config = config or SchedulerConfig()
        self.cost = cost or CostModel.default_gpu()
        self.sched = Scheduler(self.config, self.cost)
        self.runner = FakeRunner(self.config.max_slots, self.cost)
        self.now = 0.0
        self.events = []
        self._next_id = 1

    def job(self, utterance, lane=Lane.BACKGROUND, index=0, length=10, est=None, deadline=None,
            prompt_len=20) -> Job:
        job_id = self._next_id
        self._next_id += 1
        self.runner.lengths[job_id] = length
        return Job(id=job_id, utterance=utterance, index=index, lane=lane, prompt_len=prompt_len,
                   est_tokens=length if est is None else est, max_tokens=2048,
                   deadline=deadline, arrival=self.now)

    def utterance(self, key, lane, segments, length=10, deadline=None, **kw) -> list[Job]:
        return [self.job(key, lane, i, length, deadline=deadline, **kw) for i in range(segments)]

    def step(self) -> StepPlan | None:
        plan = self.sched.schedule(self.now)
        self.sched.check_invariants()
        if plan is None:
            return None
        self.sched.check_plan(plan)
        out = self.runner.execute(plan)
        self.now += out.seconds
        self.events += self.sched.update(plan, out, self.now)
        self.sched.check_invariants()
        if self.runner.slots != self._held():
            raise AssertionError(f"runner holds {self.runner.slots}, scheduler thinks {self._held()}")
        return plan

    def run(self, max_steps=10_000) -> list[StepPlan]:
        plans = []
        for _ in range(max_steps):
            plan = self.step()
            if plan is None:
                return plans
            plans.append(plan)
        raise AssertionError("did not go idle")

    def _held(self) -> set[int]:
        held = {j.id for lane in self.sched._live.values() for j in lane.values() if j.started}
        return held | set(self.sched._release)

    def finished(self) -> list[int]:
        return [e.job_id for e in self.events if e.kind == "finished"]
