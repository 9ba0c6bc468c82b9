"""Random arrivals, cancellations, failures and out-of-memory steps against
the scheduler's invariants (hypothesis state machine)."""

import ast
import pathlib
import subprocess
import sys

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from mutation_budget import examples
from scheduler_fakes import Harness

from scheduler import CostModel, JobState, Lane, SchedulerConfig


class SchedulerMachine(RuleBasedStateMachine):
    @initialize(gpu=st.booleans(), ibs=st.sampled_from([1, 2]), slots=st.sampled_from([3, 6, 16]),
                admission=st.sampled_from(["capacity", "queue-only"]))
    def setup(self, gpu, ibs, slots, admission):
        cfg = SchedulerConfig(max_slots=slots, interactive_batch_size=ibs, max_queue_interactive=8,
                              max_queue_background=12, urgent_slack_s=1.0, admission=admission)
        self.h = Harness(cfg, CostModel.default_gpu() if gpu else CostModel.default_cpu())
        self.jobs = {}
        self.cancelled = set()
        self.utterances = []
        self.n = 0

    def _new_utterance(self, lane, segments, length, deadline):
        self.n += 1
        key = f"u{self.n}"
        jobs = self.h.utterance(key, lane, segments, length=length, deadline=deadline)
        if self.h.sched.admit(jobs, self.h.now) is None:
            self.jobs.update({j.id: j for j in jobs})
            self.utterances.append((key, lane, segments))

    @rule(segments=st.integers(1, 3), length=st.integers(1, 40))
    def interactive(self, segments, length):
        self._new_utterance(Lane.INTERACTIVE, segments, length, None)

    @rule(segments=st.integers(1, 4), length=st.integers(1, 80), slack=st.floats(0.1, 30.0))
    def background(self, segments, length, slack):
        self._new_utterance(Lane.BACKGROUND, segments, length, self.h.now + slack)

    @precondition(lambda self: self.utterances)
    @rule(pick=st.integers(0, 1000), length=st.integers(1, 30))
    def add_segment(self, pick, length):
        key, lane, count = self.utterances[pick % len(self.utterances)]
        utt = self.h.sched.book.utterance(key)
        deadline = next(iter(utt.segments.values())).deadline if utt else None
        job = self.h.job(key, lane, index=count, length=length, deadline=deadline)
        if self.h.sched.add(job, self.h.now) is None:
            self.jobs[job.id] = job
            self.utterances[pick % len(self.utterances)] = (key, lane, count + 1)

    @precondition(lambda self: self.jobs)
    @rule(pick=st.integers(0, 1000))
    def cancel(self, pick):
        job_id = sorted(self.jobs)[pick % len(self.jobs)]
        if not self.jobs[job_id].state.terminal:
            self.cancelled.add(job_id)
        self.h.sched.cancel(job_id, self.h.now)

    @precondition(lambda self: self.jobs)
    @rule(pick=st.integers(0, 1000))
    def model_fails_a_job(self, pick):
        self.h.runner.fail.add(sorted(self.jobs)[pick % len(self.jobs)])

    @rule(limit=st.sampled_from([None, None, None, 0, 1, 2]))
    def memory_limit(self, limit):
        self.h.runner.oom_above = limit

    @rule(steps=st.integers(1, 25))
    def run_steps(self, steps):
        for _ in range(steps):
            if self.h.step() is None:
                break

    @rule(seconds=st.floats(0.0, 3.0))
    def time_passes(self, seconds):
        self.h.now += seconds

    @invariant()
    def consistent(self):
        if hasattr(self, "h"):
            self.h.sched.check_invariants()

    def teardown(self):
        if not hasattr(self, "h"):
            return
        self.h.runner.oom_above = None
        self.h.run()
        assert self.h.sched.idle and self.h.runner.slots == set()
        kinds = {}
        for event in self.h.events:
            assert event.job_id not in kinds, "two events for one job"
            kinds[event.job_id] = event.outcome.value
        for job_id, job in self.jobs.items():
            assert job.state.terminal
            if job_id in self.cancelled:
                assert job.state is JobState.CANCELLED and job_id not in kinds
            else:
                assert kinds[job_id] == ("finished" if job.state is JobState.FINISHED else "failed")


SchedulerMachine.TestCase.settings = settings(
    max_examples=examples(60), stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestSchedulerMachine = SchedulerMachine.TestCase


FORBIDDEN = {"asyncio", "websockets", "torch", "uvloop"}


def test_scheduler_package_imports_no_io_or_torch():
    root = pathlib.Path(__file__).resolve().parent.parent / "scheduler"
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                assert top not in FORBIDDEN, f"{path.name} imports {name}"
                assert top != "matplotlib" or path.name == "bench.py", f"{path.name} imports matplotlib"
    code = ("import sys, scheduler; "
            f"bad = {sorted(FORBIDDEN)!r}; print([m for m in bad if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=root.parent)
    assert out.stdout.strip() == "[]"
