"""The contract between the scheduler and the model runner.

The scheduler decides, the runner executes. They meet only in these plain
dataclasses: ids, lengths and bucket choices go in (``StepPlan``), per-job token
counts, finished flags and failures come back (``StepOutput``). No tensors cross
this line, so the scheduler is tested without torch on a fake runner.

Thread: built and consumed on the model thread only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

JobId = int


class Lane(enum.Enum):
    INTERACTIVE = "interactive"
    BACKGROUND = "background"


@dataclass(frozen=True)
class StepPlan:
    """What the runner does in one model step.

    ``prefill`` jobs are new to the runner's KV slots: it runs their prompt and
    samples their first code. ``decode`` jobs already hold a slot and advance one
    code each. ``release`` jobs (cancelled, or finished while preempted) give
    their slot back before anything else runs. ``batch_size`` is the padded size
    the runner should run at (a size it has a graph for, >= the real count), and
    ``kv_bucket`` the KV length the attention covers for the decode jobs.
    """

    lane: Lane
    prefill: tuple[JobId, ...] = ()
    decode: tuple[JobId, ...] = ()
    release: tuple[JobId, ...] = ()
    batch_size: int = 1
    kv_bucket: int = 0

    @property
    def jobs(self) -> tuple[JobId, ...]:
        return self.prefill + self.decode

    @property
    def is_empty(self) -> bool:
        return not (self.prefill or self.decode or self.release)


@dataclass
class StepOutput:
    """What one executed ``StepPlan`` produced.

    ``tokens`` maps every job that ran to its total number of codes generated
    so far; ``finished`` lists the jobs that ended this step (EOS on any
    codebook, or their token limit), ``failed`` the jobs the runner could not
    serve (message for the log, the client sees ``internal``). ``oom`` means the
    whole step failed for lack of device memory and nothing advanced: the
    scheduler splits the batch and retries. ``seconds`` is the measured step
    time, which calibrates the cost model. ``audio`` maps a job to the audio
    its codes produced this step (a float32 numpy array of 24 kHz mono samples);
    the scheduler never reads it, the worker forwards it to the job's session.
    """

    tokens: dict[JobId, int] = field(default_factory=dict)
    finished: tuple[JobId, ...] = ()
    failed: dict[JobId, str] = field(default_factory=dict)
    oom: bool = False
    seconds: float = 0.0
    audio: dict[JobId, Any] = field(default_factory=dict)
