"""A model step's exception, mapped once for every stage that runs steps.

A lost device (a CUDA error that breaks the context for the whole process) is
raised as ``DeviceFailure``: the server stops serving. Out of device memory
sets ``StepOutput.oom`` and fails nothing (the scheduler retries the step
smaller). Anything else fails the step's jobs with the exception's text, its
traceback in the log.

Thread: the model thread.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import torch

from realtime.engine.api import DeviceFailure
from scheduler import JobId, StepOutput

log = logging.getLogger(__name__)


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError)


def is_device_lost(exc: BaseException) -> bool:
    """A CUDA error that breaks the context for the whole process (by type:
    torch raises ``AcceleratorError`` for them; out of memory is separate)."""
    return isinstance(exc, torch.AcceleratorError) and not is_oom(exc)


def fail_step(exc: Exception, out: StepOutput, jobs: Sequence[JobId], what: str) -> None:
    """Map ``exc``, raised by a ``what`` ("model step", "refine step") of
    ``jobs``, into ``out``; raises ``DeviceFailure`` for a lost device."""
    if is_device_lost(exc):
        log.critical("the device failed in a %s of %d jobs: %s", what, len(jobs), exc)
        raise DeviceFailure(f"{type(exc).__name__}: {exc}") from exc
    if is_oom(exc):
        log.warning("out of device memory in a %s of %d jobs", what, len(jobs))
        out.oom = True
        return
    log.exception("%s failed for jobs %s", what, list(jobs))
    for job_id in jobs:
        out.failed[job_id] = f"{what} failed: {type(exc).__name__}: {exc}"
