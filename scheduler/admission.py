"""Admission control: may a new utterance's segments join the queue?

Two modes (``SchedulerConfig.admission``):

- ``capacity`` (default). An interactive utterance is refused ``overloaded``
  when one more stream would exceed the lane's stream capacity (every
  admitted stream keeps its real-time rate, ``scheduler.capacity``), while
  an admitted stream's audio is running out all the same (the cost model
  was optimistic: the observed rate overrides it), or when
  its first audio, behind the streams already admitted, is expected more
  than ``first_audio_s`` from now. The queue bounds stay as a
  backstop and count waiting utterances, not segments: an utterance is not
  refused for its number of sentences, and later segments of an admitted
  utterance are never refused for load.
- ``strict``: the same, except that on a machine too slow to keep even one
  stream in real time every interactive utterance is refused ``overloaded``,
  with the longest retry hint (the cost model's figures may still improve
  as it observes steps; nothing else frees capacity).
- ``queue-only`` (the old rule). ``overloaded`` when the lane's queue of
  waiting segments would exceed its bound.

In both modes background work is refused ``deadline_unmeetable`` when the
EDF completion estimate (``BackgroundForecast``, step times stretched by the
share of the model background can count on, times ``admission_safety``)
ends the new work after its deadline, or pushes already admitted work that
is on time past its own. Jobs already late do not block admissions.

Every ``overloaded`` refusal carries ``retry_after_s``: when the scheduler
expects the missing capacity to free up (the earliest expected end of an
admitted stream, or when the refused stream's first audio would fit its
budget), clamped to ``[retry_after_min_s, retry_after_max_s]``.

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

from collections.abc import Sequence

from scheduler.book import JobBook
from scheduler.capacity import InteractiveCapacity, clamp_retry
from scheduler.config import QUEUE_ONLY, STRICT, SchedulerConfig
from scheduler.estimate import BackgroundForecast, first_late
from scheduler.jobs import Job, Refusal, RefusalReason
from scheduler.plan import Lane
from scheduler.playout import ScheduledUtterance


class Admission:
    """Decides admissions; counts its refusals in ``refused``.
    ``first_audio_s`` is the interactive first-audio budget (the
    scheduler resolves a derived default at start)."""

    def __init__(self, config: SchedulerConfig, book: JobBook, forecast: BackgroundForecast,
                 capacity: InteractiveCapacity, first_audio_s: float) -> None:
        self.config = config
        self.book = book
        self.forecast = forecast
        self.capacity = capacity
        self.first_audio_s = first_audio_s
        self.refused = dict.fromkeys(RefusalReason, 0)

    def refusal(self, lane: Lane, jobs: Sequence[Job], now: float, new: bool = True) -> Refusal | None:
        """Why ``jobs`` (of one utterance in ``lane``; ``new``: its first
        jobs, else later segments of an admitted one) may not be queued, or None."""
        if self.config.admission == QUEUE_ONLY:
            refusal = self._queue_full(lane, jobs, now)
        else:
            refusal = self._backstop(lane, now) if new else None
            if refusal is None and new and lane is Lane.INTERACTIVE:
                refusal = self._no_capacity(jobs, now)
        if refusal is None and lane is Lane.BACKGROUND:
            refusal = self._late_background(jobs, now)
        if refusal is not None:
            self.refused[refusal.reason] += 1
        return refusal

    # ---- load refusals -----------------------------------------------------------

    def _queue_full(self, lane: Lane, jobs: Sequence[Job], now: float) -> Refusal | None:
        bound = self._bound(lane)
        if self.book.depth(lane) + len(jobs) > bound:
            return self._overloaded(f"the {lane.value} queue is full ({bound} segments)",
                                    self._drain(lane, now) - now)
        return None

    def _backstop(self, lane: Lane, now: float) -> Refusal | None:
        bound = self._bound(lane)
        if queued_utterances(self.book.live_utterances(lane)) + 1 > bound:
            return self._overloaded(f"the {lane.value} queue is full ({bound} utterances)",
                                    self._drain(lane, now) - now)
        return None

    def _no_capacity(self, jobs: Sequence[Job], now: float) -> Refusal | None:
        capacity = self.capacity
        streams = capacity.committed(now)
        bucket = capacity.bucket(jobs)
        if not capacity.realtime_alone(bucket) and self.config.admission == STRICT:
            return self._overloaded(
                "this model keeps no interactive stream in real time "
                f"({capacity.lone_rate(bucket):.1f} codes/s alone, real time with the headroom "
                f"needs {capacity.target_rate(bucket):.1f}); --admission strict refuses them",
                self.config.retry_after_max_s)
        if not capacity.keeps_rate(streams + 1, bucket):
            held = capacity.stream_capacity(bucket)
            return self._overloaded(
                f"the interactive lane is at its capacity of {held} real-time "
                f"stream{'' if held == 1 else 's'} at this utterance's length",
                capacity.earliest_end(now) - now)
        if capacity.behind(now, bucket):  # the model is slower than the cost model says
            return self._overloaded("admitted interactive streams are behind real time",
                                    capacity.earliest_end(now) - now)
        estimate = capacity.start_estimate(jobs, now)
        # The budget bounds the wait that load on the model adds, from this
        # decision on (the hand-off to the model thread is in the derived
        # budget's step in flight). A request whose own first audio takes
        # longer even on an idle model (a long prompt, a long KV) gets that
        # time plus the headroom, not a refusal.
        budget = max(self.first_audio_s, (1.0 + self.config.realtime_headroom) * estimate.alone)
        if estimate.first_audio > now + budget:
            # Retried at r, the same start is due at r + budget.
            return self._overloaded(
                f"first audio expected in {1000 * (estimate.first_audio - now):.0f} ms, "
                f"over the {1000 * budget:.0f} ms budget",
                estimate.first_audio - budget - now)
        return None

    def _overloaded(self, message: str, retry_after_s: float) -> Refusal:
        return Refusal(RefusalReason.OVERLOADED, message, clamp_retry(retry_after_s, self.config))

    def _bound(self, lane: Lane) -> int:
        return (self.config.max_queue_interactive if lane is Lane.INTERACTIVE
                else self.config.max_queue_background)

    def _drain(self, lane: Lane, now: float) -> float:
        """When the lane's queue is expected to move: its earliest end of work."""
        if lane is Lane.INTERACTIVE:
            return self.capacity.earliest_end(now)
        forecast = self.forecast
        live = forecast.order(self.book.jobs(Lane.BACKGROUND).values())
        return min(forecast.finish_times(live, now).values(), default=now)

    # ---- deadlines -----------------------------------------------------------------

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


def queued_utterances(utterances: Sequence[ScheduledUtterance]) -> int:
    """Utterances that have not begun: none of their segments has started."""
    return sum(1 for utt in utterances if not any(j.started for j in utt.segments.values()))
