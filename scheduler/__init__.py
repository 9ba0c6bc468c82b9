"""Two-lane scheduling of segment jobs over one shared model.

Pure and synchronous: no asyncio, no torch; the clock is always passed in.
"""

from scheduler.config import SchedulerConfig
from scheduler.core import Scheduler
from scheduler.cost import CostModel
from scheduler.jobs import CODES_PER_SECOND, Job, JobEvent, JobState, Refusal
from scheduler.plan import JobId, Lane, StepOutput, StepPlan

__all__ = [
    "CODES_PER_SECOND",
    "CostModel",
    "Job",
    "JobEvent",
    "JobId",
    "JobState",
    "Lane",
    "Refusal",
    "Scheduler",
    "SchedulerConfig",
    "StepOutput",
    "StepPlan",
]
