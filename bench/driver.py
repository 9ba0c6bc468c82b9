"""Drive a runner without the server: jobs in, plans out, codes and audio kept.

``Driver`` plays the scheduler's part of the plan contract for tests,
benchmarks and the GPU check: the lowest free KV slot for each new job, the
prepared work, and shapes padded to the runner's offer. Every pending job is
prefilled in the next step; every live one decodes until it finishes.

Thread: the caller's (the runner's model thread rules apply).
"""

from __future__ import annotations

import torch

from realtime.engine.api import PreparedJob, Runner, SegmentRequest
from scheduler import JobId, Lane, SchedulerConfig, StepOutput, StepPlan


class CodeRecorder:
    """A ``ModelRunner`` (or a wrapper of one) that also keeps each finished
    job's codes ([n, Q] on the CPU) in ``codes`` and the hidden states that
    drew them and fed its vocoder ([n, D] fp32) in ``hidden``: read from the
    runner's slots in the step that reports the job finished (the slot is
    still the job's then). Otherwise it is the runner it wraps."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.codes: dict[JobId, torch.Tensor] = {}
        self.hidden: dict[JobId, torch.Tensor] = {}
        self._slots: dict[JobId, int] = {}
        self._tokens: dict[JobId, int] = {}

    def __getattr__(self, name: str):
        return getattr(self.runner, name)

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        return self.runner.prepare(request)

    def execute(self, plan: StepPlan) -> StepOutput:
        self._slots.update(zip(plan.prefill + plan.decode, plan.slots))
        out = self.runner.execute(plan)
        self._tokens.update(out.tokens)
        held = self.runner
        for job_id in out.finished:
            slot, n = self._slots[job_id], self._tokens[job_id]
            self.codes[job_id] = held.codes[slot, :n].cpu().clone()  # type: ignore[attr-defined]
            self.hidden[job_id] = held.hidden[slot, :n].cpu().clone()  # type: ignore[attr-defined]
        for job_id in (*out.finished, *out.failed, *plan.release):
            self._slots.pop(job_id, None)
            self._tokens.pop(job_id, None)
        return out

    def reset(self) -> None:
        self._slots.clear()
        self._tokens.clear()
        self.runner.reset()


class Driver:
    """Runs jobs to completion, one ``execute`` per step, recording codes,
    hidden states (from a runner that records them) and audio.

    It plays the scheduler's part of the plan contract: the lowest free KV
    slot for each new job, the prepared work, and shapes padded to the
    runner's offer."""

    def __init__(self, runner: Runner, lane: Lane = Lane.BACKGROUND) -> None:
        # A runner with device codes (a ``ModelRunner``) is watched for them.
        self.recorder = CodeRecorder(runner) if hasattr(runner, "codes") else None
        self.runner: Runner = runner if self.recorder is None else self.recorder  # type: ignore[assignment]
        self.lane = lane
        self.shapes = SchedulerConfig(batch_sizes=runner.batch_sizes, kv_buckets=runner.kv_buckets,
                                      prompt_buckets=runner.prompt_buckets,
                                      max_slots=runner.max_slots)
        self.live: list[int] = []
        self.pending: list[int] = []
        self.work: dict[int, object] = {}
        self.slot: dict[int, int] = {}
        self.prompt_len: dict[int, int] = {}
        self.codes: dict[int, torch.Tensor] = {} if self.recorder is None else self.recorder.codes
        self.hidden: dict[int, torch.Tensor] = {} if self.recorder is None else self.recorder.hidden
        self.audio: dict[int, list] = {}
        self.tokens: dict[int, int] = {}
        self.text_tokens: dict[int, int] = {}  # jobs in their refine pass
        self.refined: dict[int, str] = {}  # the refined text of each job that had a pass
        self.finished: list[int] = []
        self.follows: dict[int, int] = {}  # job -> the job whose audio it plays after

    def add(self, job_id: int, req: SegmentRequest, follows: int | None = None) -> None:
        """Queue a job for the next step; ``follows``: the job whose audio its
        own plays after (``StepPlan.follows``)."""
        if follows is not None:
            self.follows[job_id] = follows
        prepared = self.runner.prepare(req)
        self.work[job_id] = prepared.work
        self.prompt_len[job_id] = prepared.prompt_len
        self.pending.append(job_id)
        self.audio[job_id] = []

    def plan(self, release=()) -> StepPlan:
        for job_id in release:
            self.slot.pop(job_id, None)
            self.live.remove(job_id)
        free = sorted(set(range(self.runner.max_slots)) - set(self.slot.values()))
        for job_id in self.pending:
            if job_id not in self.slot:
                self.slot[job_id] = free.pop(0)
        cfg, pre, dec = self.shapes, self.pending, self.live
        return StepPlan(
            self.lane, prefill=tuple(pre), decode=tuple(dec), release=tuple(release),
            slots=tuple(self.slot[j] for j in pre + dec), work=tuple(self.work[j] for j in pre),
            batch_size=cfg.padded_batch(len(dec)) if dec else 1,
            kv_bucket=cfg.bucket(max(self.prompt_len[j] + self._progress(j) + 1 for j in dec)) if dec else 0,
            prefill_batch=cfg.padded_batch(len(pre)) if pre else 0,
            prompt_bucket=cfg.prompt_bucket(max(self.prompt_len[j] for j in pre)) if pre else 0,
            follows=tuple(self.follows.get(j) for j in pre))

    def _progress(self, job_id: int) -> int:
        """Positions past the prompt: text tokens in a refine pass, else codes."""
        return self.text_tokens.get(job_id, self.tokens.get(job_id, 0))

    def step(self, release=(), check: bool = True) -> StepOutput:
        """One ``execute``. With ``check`` a failed job or an out-of-memory
        step raises AssertionError; without, failed jobs are dropped and an
        out-of-memory step leaves everything to be retried."""
        out = self.runner.execute(self.plan(release))
        if check and (out.failed or out.oom):
            raise AssertionError(f"step failed: {out.failed or 'out of memory'}")
        if out.oom:
            return out
        ended = set(out.finished) | set(out.failed)
        self.live = [j for j in self.live + self.pending if j not in ended]
        for job_id in ended:
            self.slot.pop(job_id, None)
        self.pending = []
        for j, chunk in out.audio.items():
            self.audio[j].append(chunk)
        self.tokens.update(out.tokens)
        self.text_tokens.update(out.refining)
        for j, refined in out.refined.items():
            self.prompt_len[j], self.refined[j] = refined.prompt_len, refined.text
            self.text_tokens.pop(j, None)
        self.finished.extend(out.finished)
        return out

    def run(self, max_steps: int = 400) -> None:
        for _ in range(max_steps):
            if not (self.live or self.pending):
                return
            self.step()
        raise AssertionError("jobs did not finish")
