"""The contract between the scheduler and the model runner.

The scheduler decides, the runner executes. They meet only in these two
dataclasses: the plan names jobs, the KV slot each one holds and the shapes
the step runs at (``StepPlan``); the output gives back per-job code counts,
finished and failed jobs, and each job's new audio (``StepOutput``). No
tensors cross this line: ids, ints, the runner's own prepared-job values
(handed back to it unread) and float32 sample arrays. The scheduler is thus
tested without torch on a fake runner.

Thread: built and consumed on the model thread only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    # Mono float32 samples at 24 kHz, new audio of one job.
    Samples = NDArray[np.float32]

JobId = int


class Lane(enum.Enum):
    INTERACTIVE = "interactive"
    BACKGROUND = "background"


@dataclass(frozen=True, slots=True)
class StepPlan:
    """What the runner does in one model step, with every choice made.

    ``release`` jobs (cancelled while holding a slot) are dropped first:
    their slots may be handed to this very plan's prefills. ``prefill`` jobs
    are new: each runs its prompt in its KV slot and samples its first code;
    ``work`` holds, in the same order, the value ``Runner.prepare`` returned
    for it. ``decode`` jobs already hold their slot and advance one code each.
    ``slots`` gives the KV slot of every job of ``jobs`` (prefill, then decode),
    in ``0 .. max_slots - 1``.

    Shapes, chosen by the scheduler from the runner's offer: ``batch_size``
    rows for the decode step (a graph batch size >= ``len(decode)``; a runner
    without graphs may run just the real rows), ``kv_bucket`` the KV length
    the decode attention covers (>= every decode job's next position + 1),
    ``prefill_batch`` rows and ``prompt_bucket`` positions for the prefill
    (>= every prefill prompt; 0 when nothing is prefilled).

    ``follows`` names, per prefill job, the job of its utterance's segment
    before it (``playout.follows``; None for a first segment), whose audio
    its own plays after: the runner's vocoder may render larger chunks while
    the listener still holds audio.
    """

    lane: Lane
    prefill: tuple[JobId, ...] = ()
    decode: tuple[JobId, ...] = ()
    release: tuple[JobId, ...] = ()
    slots: tuple[int, ...] = ()
    work: tuple[Any, ...] = ()
    batch_size: int = 1
    kv_bucket: int = 0
    prefill_batch: int = 0
    prompt_bucket: int = 0
    follows: tuple[JobId | None, ...] = ()

    @property
    def jobs(self) -> tuple[JobId, ...]:
        return self.prefill + self.decode

    @property
    def decode_slots(self) -> tuple[int, ...]:
        return self.slots[len(self.prefill):]

    @property
    def prefill_slots(self) -> tuple[int, ...]:
        return self.slots[:len(self.prefill)]

    @property
    def is_empty(self) -> bool:
        return not (self.prefill or self.decode or self.release)


@dataclass(frozen=True, slots=True)
class Refined:
    """A job's refine pass ended: its audio prompt (``prompt_len`` tokens,
    reading ``text``) now fills its slot, and its codes count from there."""

    prompt_len: int
    text: str


@dataclass(slots=True)
class StepOutput:
    """What one executed ``StepPlan`` produced.

    ``tokens`` maps every job that ran to its total number of codes so far;
    ``finished`` lists the jobs that ended this step (EOS on any codebook, or
    their token limit), ``failed`` the jobs the runner could not serve (the
    message is for the log; the client sees ``internal``). The runner forgets
    finished and failed jobs itself. ``oom`` means the whole step failed for
    lack of device memory and nothing advanced (no prefill took its slot):
    the scheduler splits the batch and retries. ``seconds`` is the measured
    step time, which calibrates the cost model. ``audio`` maps a job to the
    samples its codes produced this step; the scheduler never reads it, the
    worker forwards it to the job's utterance. ``refining`` maps each job
    that ran its refine pass this step to the text tokens it drew so far
    (its KV covers its prompt plus those; it has no codes yet; such a step
    is no plain (batch, bucket) step for the cost model); ``refined`` the
    jobs whose refine pass ended this step (``Refined``; the worker sends
    the text, the scheduler takes the new prompt length). ``nominal`` says
    ``seconds`` is a simulated model's fixed step time (the tone runner's
    ``nominal_cost``), not a measurement: the worker does not widen it to
    the loop's whole turn, so the cost model does not follow the machine's load.
    """

    tokens: dict[JobId, int] = field(default_factory=dict)
    finished: tuple[JobId, ...] = ()
    failed: dict[JobId, str] = field(default_factory=dict)
    oom: bool = False
    seconds: float = 0.0
    audio: dict[JobId, Samples] = field(default_factory=dict)
    refining: dict[JobId, int] = field(default_factory=dict)
    refined: dict[JobId, Refined] = field(default_factory=dict)
    nominal: bool = False
