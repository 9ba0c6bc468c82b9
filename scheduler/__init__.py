"""Two-lane scheduling of segment jobs over one shared model.

Pure and synchronous: no asyncio, no torch; the clock is always passed in.
"""

from scheduler.capacity import Saturation
from scheduler.config import (
    ADMISSION_MODES,
    CAPACITY,
    DEFAULT_BATCH_SIZES,
    DEFAULT_KV_BUCKETS,
    DEFAULT_PROMPT_BUCKETS,
    QUEUE_ONLY,
    STRICT,
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
from scheduler.plan import JobId, Lane, Refined, StepOutput, StepPlan

__all__ = [
    "ADMISSION_MODES",
    "CAPACITY",
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
    "QUEUE_ONLY",
    "Refined",
    "Refusal",
    "RefusalReason",
    "Saturation",
    "Scheduler",
    "STRICT",
    "SchedulerConfig",
    "StepOutput",
    "StepPlan",
]
