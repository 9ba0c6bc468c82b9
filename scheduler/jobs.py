"""Segment jobs: what the scheduler knows about one segment of an utterance.

A ``Job`` is created by the worker with the request's facts (the spec fields)
and then owned by the ``Scheduler``, which keeps its progress in the fields
that are not constructor arguments. ``Refusal`` and ``JobEvent`` are the two
kinds of answers the scheduler gives back; their reasons and outcomes are
enums whose values match the wire protocol's words.

Thread: jobs are read and written on the model thread only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from scheduler.plan import JobId, Lane, StepOutput

# One GPT step yields 2 mel frames = 512 samples at 24 kHz: 46.875 codes per
# second of audio. Playback deadlines are derived from token counts with it.
CODES_PER_SECOND = 46.875


class JobState(enum.IntEnum):
    """Ordered: the terminal states sort after the live ones."""

    WAITING = 0  # queued, holds no KV slot
    ACTIVE = 1  # holds a KV slot (running, or preempted between steps)
    FINISHED = 2
    FAILED = 3
    CANCELLED = 4

    @property
    def terminal(self) -> bool:
        return self >= JobState.FINISHED


@dataclass(eq=False)
class Job:
    """One segment (sentence) of an utterance.

    ``deadline`` is absolute seconds on the scheduler's clock. Background: the
    whole utterance's completion deadline (``None``: no deadline). Interactive:
    segment 0's first-audio deadline (``None``: ``arrival`` plus the config's
    ``interactive_first_audio_s``); later interactive segments get their
    deadline from the playback of the segment before them (see
    ``scheduler.playout``). ``est_tokens`` is the expected number of codes
    (from the text length), ``max_tokens`` the runner's hard limit. ``params``
    is carried for the worker and never read here. ``refine_tokens`` (0:
    none) are the text tokens a refine pass is expected to draw before the
    codes: steps the job needs before its audio prompt's prefill (one more
    step's work), counted in ``remaining_tokens`` but never as audio.
    """

    id: JobId
    utterance: Hashable
    index: int
    lane: Lane
    prompt_len: int
    est_tokens: int
    max_tokens: int = 2048
    deadline: float | None = None
    arrival: float = 0.0
    work: Any = None
    refine_tokens: int = 0
    # Progress, owned by the scheduler.
    state: JobState = field(default=JobState.WAITING, init=False)
    slot: int = field(default=-1, init=False)
    tokens: int = field(default=0, init=False)
    started_at: float | None = field(default=None, init=False)  # planned for prefill
    first_code_at: float | None = field(default=None, init=False)  # first code came back
    last_code_at: float | None = field(default=None, init=False)  # newest code came back
    ended_at: float | None = field(default=None, init=False)
    # Largest batch this job may run in; halved on each out-of-memory step.
    batch_cap: int = field(default=1 << 30, init=False)
    text_tokens: int = field(default=0, init=False)  # drawn by the refine pass so far
    refined: bool = field(default=False, init=False)  # the refine pass ended

    @property
    def refining(self) -> bool:
        """In the refine pass (or waiting to begin one): no codes yet."""
        return self.refine_tokens > 0 and not self.refined

    @property
    def refine_steps_left(self) -> int:
        """Steps before the first code: the rest of the refine pass, then
        the audio prompt's prefill (0 without a refine pass)."""
        return max(self.refine_tokens - self.text_tokens, 1) + 1 if self.refining else 0

    @property
    def started(self) -> bool:
        return self.started_at is not None

    @property
    def expected_tokens(self) -> int:
        """Codes this job is expected to produce in all (never below what it has)."""
        return min(max(self.est_tokens, self.tokens + 1), max(self.max_tokens, 1))

    @property
    def remaining_tokens(self) -> int:
        """Steps this job still needs (codes, and any refine pass before them)."""
        return max(self.expected_tokens - self.tokens, 1) + self.refine_steps_left

    @property
    def kv_len(self) -> int:
        """KV positions this job covers after its next step."""
        return self.prompt_len + (self.text_tokens if self.refining else self.tokens) + 1

    @property
    def final_kv_len(self) -> int:
        """KV positions this job is expected to reach when it ends."""
        return self.prompt_len + self.expected_tokens


class RefusalReason(enum.Enum):
    """Why admission said no; each value is the wire error code it becomes."""

    OVERLOADED = "overloaded"  # no capacity now (or a lane's queue is full)
    DEADLINE_UNMEETABLE = "deadline_unmeetable"  # background work would end late


class JobOutcome(enum.Enum):
    """How a job the scheduler reports on ended (cancelled jobs are not reported)."""

    FINISHED = "finished"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Refusal:
    """Admission said no; nothing was queued. ``retry_after_s`` (load
    refusals only) is when the same request is next worth trying: when the
    scheduler expects the capacity it lacked to free up."""

    reason: RefusalReason
    message: str
    retry_after_s: float | None = None


@dataclass(frozen=True, slots=True)
class JobEvent:
    """A job ended; for ``FAILED`` the ``message`` says why (for the log: the
    client sees ``internal``)."""

    job_id: JobId
    outcome: JobOutcome
    message: str = ""


def take_refine(find: Callable[[JobId], Job | None], output: StepOutput) -> None:
    """Record the refine passes of one step: text tokens drawn so far, and
    for a pass that ended, its audio prompt's length (codes count from it)."""
    for job_id, count in output.refining.items():
        job = find(job_id)
        if job is not None:
            job.text_tokens = count
    for job_id, refined in output.refined.items():
        job = find(job_id)
        if job is not None:
            job.prompt_len, job.refined = refined.prompt_len, True
