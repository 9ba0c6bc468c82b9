"""Two-lane scheduling of segment jobs over one shared model.

Pure and synchronous: no asyncio, no torch; the clock is always passed in.
"""

from scheduler.config import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_KV_BUCKETS,
    DEFAULT_PROMPT_BUCKETS,
    SchedulerConfig,
)
from scheduler.core import Scheduler
from scheduler.cost import CostModel
from scheduler.jobs import (
    CODES_PER_SECOND,
    Job,
    JobEvent,
    JobOutcome,
    JobState,
    Refusal,
    RefusalReason,
)
from scheduler.plan import JobId, Lane, StepOutput, StepPlan

__all__ = [
    "CODES_PER_SECOND",
    "DEFAULT_BATCH_SIZES",
    "DEFAULT_KV_BUCKETS",
    "DEFAULT_PROMPT_BUCKETS",
    "CostModel",
    "Job",
    "JobEvent",
    "JobId",
    "JobOutcome",
    "JobState",
    "Lane",
    "Refusal",
    "RefusalReason",
    "Scheduler",
    "SchedulerConfig",
    "StepOutput",
    "StepPlan",
]
