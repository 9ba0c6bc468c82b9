"""What the runner holds per job: the prepared spec and its progress.

``JobSpec`` is what ``ModelRunner.prepare`` hands out as
``PreparedJob.work`` (immutable, host values only); ``HeldJob`` is a job
the runner holds from its prefill to its end: its KV slot, how many codes
it has, how far its audio is.

Thread: the model thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from realtime.engine.api import SamplingParams
from realtime.engine.text.frontend import Prompt
from realtime.engine.vocoder.stream import VocoderStream
from scheduler import JobId


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A prepared segment: what ``prepare`` hands out as ``PreparedJob.work``."""

    prompt: Prompt
    params: SamplingParams
    seed: int
    streaming: bool
    max_new: int
    # The prompt as plain host values (speaker: fp16 values, exact as
    # floats), packed into the prefill's one upload without tensor work.
    ids: tuple[int, ...] = ()  # text ids, then any sample codes [T, Q] row by row
    speaker: tuple[float, ...] = ()
    frame_s: float = 0.0  # SegmentRequest.frame_s


@dataclass
class HeldJob:
    """A job the runner holds, from its prefill to its end."""

    id: JobId
    spec: JobSpec
    slot: int
    n_codes: int = 0  # valid codes so far (an EOS step adds none)
    pushed: int = 0  # hidden states already in the vocoder stream
    stream: VocoderStream | None = None
    done: bool = False
    in_flight: int = 0  # codes drawn whose EOS flags are not read yet (eos_read.py)
    follows: JobId | None = None  # the job whose audio this one's plays after (StepPlan.follows)

    @property
    def drawn(self) -> int:
        """Codes the device drew for the job: ``n_codes`` and those in flight."""
        return self.n_codes + self.in_flight

    @property
    def exhausted(self) -> bool:
        """No further code can be kept: the job is done, or the code in flight is its last."""
        return self.done or self.drawn >= self.spec.max_new
