"""Admission control: may a new utterance's segments join the queue?

- ``overloaded`` when the lane's queue of waiting jobs would exceed its bound;
- for background work, ``deadline_unmeetable`` when the EDF completion
  estimate (``BackgroundForecast``, step times stretched by the share of the
  model background can count on, times ``admission_safety``) ends the new
  work after its deadline, or pushes already admitted work that is on time
  past its own. Jobs already late do not block admissions.

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.book import JobBook
from scheduler.config import SchedulerConfig
from scheduler.estimate import BackgroundForecast, first_late
from scheduler.jobs import Job, Refusal, RefusalReason
from scheduler.plan import Lane
from scheduler.playout import ScheduledUtterance


class Admission:
    """Decides admissions; counts its refusals in ``refused``."""

    def __init__(self, config: SchedulerConfig, book: JobBook, forecast: BackgroundForecast) -> None:
        self.config = config
        self.book = book
        self.forecast = forecast
        self.refused = dict.fromkeys(RefusalReason, 0)

    def refusal(self, lane: Lane, jobs: Sequence[Job], now: float) -> Refusal | None:
        """Why ``jobs`` (new, of one utterance in ``lane``) may not be queued, or None."""
        refusal = self._queue_full(lane, jobs)
        if refusal is None and lane is Lane.BACKGROUND:
            refusal = self._late_background(jobs, now)
        if refusal is not None:
            self.refused[refusal.reason] += 1
        return refusal

    def _queue_full(self, lane: Lane, jobs: Sequence[Job]) -> Refusal | None:
        bound = (self.config.max_queue_interactive if lane is Lane.INTERACTIVE
                 else self.config.max_queue_background)
        if self.book.depth(lane) + len(jobs) > bound:
            return Refusal(RefusalReason.OVERLOADED, f"the {lane.value} queue is full ({bound} segments)")
        return None

    def _late_background(self, new: Sequence[Job], now: float) -> Refusal | None:
        """Refuse when the new jobs would end late, or make an admitted job
        that is on time late."""
        forecast, safety = self.forecast, self.config.admission_safety
        live = list(self.book.jobs(Lane.BACKGROUND).values())
        candidate = ScheduledUtterance(new[0].utterance, Lane.BACKGROUND, self.book.next_seq, now)
        order = forecast.order(live + list(new), extra=candidate)
        after = forecast.finish_times(order, now, safety=safety)
        late = first_late([j for j in order if j in new], after)
        if late is not None:
            assert late.deadline is not None  # first_late only returns jobs with one
            return Refusal(RefusalReason.DEADLINE_UNMEETABLE,
                           f"estimated completion in {after[late.id] - now:.1f} s, "
                           f"deadline in {late.deadline - now:.1f} s")
        if not live:
            return None
        before = forecast.finish_times(forecast.order(live), now, safety=safety)
        pushed = first_late([j for j in order if j not in new], after,
                            skip=lambda j: j.deadline is not None and before[j.id] > j.deadline)
        if pushed is not None:
            return Refusal(RefusalReason.DEADLINE_UNMEETABLE,
                           "admitting it would make already accepted work miss its deadline")
        return None
