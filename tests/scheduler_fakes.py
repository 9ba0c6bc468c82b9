"""A deterministic fake runner and clock for the scheduler's tests.

The fake runner checks the scheduler's side of the contract strictly: every
prefill names a free slot in range and brings its prepared work, every
decode names the slot its job holds, releases name running jobs, batches fit
their shapes; it frees a slot when its job finishes or fails. Any breach
raises, so a scheduler bug shows up as a test failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler import (
    CostModel,
    Job,
    JobOutcome,
    Lane,
    Scheduler,
    SchedulerConfig,
    StepOutput,
    StepPlan,
)


class RunnerContractError(AssertionError):
    pass


@dataclass
class FakeRunner:
    max_slots: int
    cost: CostModel
    lengths: dict[int, int] = field(default_factory=dict)  # job id -> codes it will produce
    fail: set[int] = field(default_factory=set)  # job ids the "model" fails on
    oom_above: int | None = None  # batches with more real jobs than this run out of memory
    slot_of: dict[int, int] = field(default_factory=dict)  # running job id -> its KV slot
    tokens: dict[int, int] = field(default_factory=dict)
    plans: list[StepPlan] = field(default_factory=list)

    @property
    def slots(self) -> set[int]:
        """The running jobs (each holds one slot)."""
        return set(self.slot_of)

    def execute(self, plan: StepPlan) -> StepOutput:
        self.plans.append(plan)
        for job_id in plan.release:
            if self.slot_of.pop(job_id, None) is None:
                raise RunnerContractError(f"release of {job_id}, which holds no slot")
        self._check(plan)
        seconds = self.cost.step_time(len(plan.jobs), max(plan.kv_bucket, 1))
        if self.oom_above is not None and len(plan.jobs) > self.oom_above:
            return StepOutput(oom=True, seconds=seconds)
        self.slot_of.update(zip(plan.prefill, plan.prefill_slots))
        out = StepOutput(seconds=seconds)
        finished = []
        for job_id in plan.jobs:
            if job_id in self.fail:
                out.failed[job_id] = "injected failure"
                del self.slot_of[job_id]
                continue
            self.tokens[job_id] = self.tokens.get(job_id, 0) + 1
            out.tokens[job_id] = self.tokens[job_id]
            if self.tokens[job_id] >= self.lengths.get(job_id, 10):
                finished.append(job_id)
                del self.slot_of[job_id]
        out.finished = tuple(finished)
        return out

    def _check(self, plan: StepPlan) -> None:
        if len(plan.slots) != len(plan.jobs) or len(plan.work) != len(plan.prefill):
            raise RunnerContractError(f"plan rows do not line up: {plan}")
        held = set(self.slot_of.values())
        for job_id, slot in zip(plan.prefill, plan.prefill_slots):
            if job_id in self.slot_of:
                raise RunnerContractError(f"prefill of {job_id}, which already holds a slot")
            if slot in held or not 0 <= slot < self.max_slots:
                raise RunnerContractError(f"prefill of {job_id} into slot {slot}, taken or out of range")
            held.add(slot)
        for job_id, slot in zip(plan.decode, plan.decode_slots):
            if self.slot_of.get(job_id) != slot:
                raise RunnerContractError(f"decode of {job_id} in slot {slot}; "
                                          f"it holds {self.slot_of.get(job_id)}")
        if len(plan.decode) > plan.batch_size or len(plan.prefill) > plan.prefill_batch:
            raise RunnerContractError("more rows than the plan's batch shapes")


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
        book = self.sched.book
        held = {j.id for lane in Lane for j in book.jobs(lane).values() if j.started}
        return held | set(book.releases)

    def finished(self) -> list[int]:
        return [e.job_id for e in self.events if e.outcome is JobOutcome.FINISHED]
