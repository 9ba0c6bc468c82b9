"""Interactive capacity: how many streams the model keeps in real time.

A *stream* is an admitted interactive utterance that still has live jobs,
or one accepted before its first sentence that holds its place meanwhile
(``scheduler.reservations``: counted here as waiting for a slot, with a
nominal first sentence).
Every stream wants one code per step; the model serves them in steps that
carry ``rows`` interactive jobs: the interactive batch plus the interactive
riders, i.e. the largest graph batch that costs at most ``rider_overhead``
more than the interactive batch alone, or no more than ``realtime_step_s``
(``scheduler.batching.add_riders``).
Interactive steps may also lose their share to the background lane's
starvation bound (one step in ``interactive_steps_per_background + 1``), so
the model counts on ``share = 1 - 1 / (k + 1)`` of the steps, unless a
background job can still ride along in them (then background progress costs
interactive nothing, ``share = 1``).

With ``N`` streams a stream gets a code every::

    interval(N) = N * t(pad(min(N, rows)), bucket) / (min(N, rows) * share)

seconds. A stream keeps real time with headroom while ``1 / interval(N)`` is
at least ``46.875 * (1 + realtime_headroom)`` codes per second. A machine
that cannot give even one stream that rate (a CPU) still serves: its target
is then a lone stream's rate over ``1 + realtime_headroom``, so admission
degrades to "no stream slower than the machine's best by more than the
headroom" instead of refusing everything; under ``admission="strict"`` the
target stays real time and such a machine's capacity is 0. The *stream capacity* is the
largest ``N`` meeting the target; the *slot room* is the KV slots streams
may hold (all but the background lane's, and one kept for waiting
background work that holds none, so its starvation bound can act).

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

from scheduler.book import JobBook
from scheduler.config import STRICT, SchedulerConfig
from scheduler.cost import CostModel
from scheduler.jobs import CODES_PER_SECOND, Job, JobState
from scheduler.plan import Lane
from scheduler.playout import ScheduledUtterance
from scheduler.reservations import NOMINAL_CODES, StreamReservations

# The step that carries a prefill costs about this many decode steps (the
# cost model measures decode steps only; prompts are short).
PREFILL_STEPS = 2.0
# A derived first-audio budget never goes below this: the event loop's
# hand-off to the model thread and back is not in the cost model.
MIN_FIRST_AUDIO_S = 0.05


@dataclass(frozen=True, slots=True)
class StartEstimate:
    """When a new stream would start (its prefill step) and sound, and how
    long its first audio would take on an idle model (``alone``)."""

    starts: float
    first_audio: float
    alone: float


class InteractiveCapacity:
    """Reads the books, the reservations and the cost model; keeps no state of its own."""

    def __init__(self, config: SchedulerConfig, cost: CostModel, book: JobBook,
                 reservations: StreamReservations) -> None:
        self.config = config
        self.cost = cost
        self.book = book
        self.reservations = reservations

    # ---- the model of the lane -------------------------------------------------

    def share(self, rows: int, bucket: int) -> float:
        """Share of steps interactive work can count on when its steps carry
        ``rows`` jobs: all of them while a background job can still ride
        along (riders count as background progress), else what the
        starvation bound leaves."""
        cfg = self.config
        if rows < cfg.max_batch and self.cost.step_time(cfg.padded_batch(rows + 1), bucket) <= (
                self.cost.step_time(cfg.padded_batch(rows), bucket) * (1.0 + cfg.rider_overhead)):
            return 1.0
        return 1.0 - 1.0 / (cfg.interactive_steps_per_background + 1)

    def rows(self, bucket: int) -> int:
        """Interactive jobs one step carries: the interactive batch plus the
        riders that cost at most ``rider_overhead`` more, or that keep the
        step within ``realtime_step_s``."""
        cfg = self.config
        base_rows = min(cfg.interactive_batch_size, cfg.max_batch)
        allowed = max(self.cost.step_time(cfg.padded_batch(base_rows), bucket) * (1.0 + cfg.rider_overhead),
                      cfg.realtime_step_s)
        rows = base_rows
        for size in cfg.batch_sizes:
            if size > rows and self.cost.step_time(size, bucket) <= allowed:
                rows = size
        return rows

    def interval(self, streams: int, bucket: int, rows: int | None = None) -> float:
        """Seconds between two codes of one stream when ``streams`` share the
        model (``rows``: ``rows(bucket)``, when the caller has it already)."""
        streams = max(streams, 1)
        rows = min(streams, self.rows(bucket) if rows is None else rows)
        step = self.cost.step_time(self.config.padded_batch(rows), bucket)
        return streams * step / (rows * self.share(rows, bucket))

    def target_rate(self, bucket: int) -> float:
        """Codes per second an admitted stream must keep getting: real time
        with the headroom, or, where not even a lone stream gets that (and
        admission is not strict), the lone stream's rate less the headroom."""
        headroom = 1.0 + self.config.realtime_headroom
        lone = self.lone_rate(bucket)  # realtime_alone's test, the lone interval computed once
        if self.config.admission == STRICT or lone >= CODES_PER_SECOND * headroom:
            return CODES_PER_SECOND * headroom
        return lone / headroom

    def lone_rate(self, bucket: int) -> float:
        """Codes per second a lone stream gets."""
        return 1.0 / self.interval(1, bucket)

    def realtime_alone(self, bucket: int) -> bool:
        """Does a lone stream get real time with the headroom?"""
        return self.lone_rate(bucket) >= CODES_PER_SECOND * (1.0 + self.config.realtime_headroom)

    def keeps_rate(self, streams: int, bucket: int, target: float | None = None,
                   rows: int | None = None) -> bool:
        """Would ``streams`` streams all keep the target rate? (``target``
        and ``rows``: ``target_rate`` and ``rows`` of ``bucket``, when the
        caller has them already.)"""
        target = self.target_rate(bucket) if target is None else target
        return 1.0 / self.interval(streams, bucket, rows) >= target * (1 - 1e-9)

    def stream_capacity(self, bucket: int) -> int:
        """The most streams that all keep the target rate (at least 1, except
        under strict admission, where a machine slower than real time has 0).
        ``interval`` grows with the count (step times never fall with more
        rows), so a bisection finds it; the slot room caps it far below
        four times the slots."""
        # Once, not per probe: the model thread asks for this every step.
        target, rows = self.target_rate(bucket), self.rows(bucket)
        if not self.keeps_rate(1, bucket, target, rows):
            return 0
        low, high = 1, 4 * self.config.max_slots
        while low < high:
            mid = (low + high + 1) // 2
            if self.keeps_rate(mid, bucket, target, rows):
                low = mid
            else:
                high = mid - 1
        return low

    def slot_room(self) -> int:
        """KV slots interactive streams may hold now."""
        book = self.book
        held = book.held(Lane.BACKGROUND)
        waiting_background = held == 0 and book.depth(Lane.BACKGROUND) > 0
        return max(book.max_slots - held - (1 if waiting_background else 0), 1)

    def capacity(self, bucket: int | None = None) -> int:
        """Streams the lane can hold now: the stream capacity within the slot room."""
        return min(self.stream_capacity(bucket or self.bucket()), self.slot_room())

    def bucket(self, extra: Sequence[Job] = ()) -> int:
        """The KV bucket the lane's steps run at: that of the longest live or new job."""
        cfg = self.config
        kv = max((j.final_kv_len for j in self.book.jobs(Lane.INTERACTIVE).values()), default=0)
        kv = max([kv] + [j.final_kv_len for j in extra])
        return cfg.bucket(max(kv, 1))

    def derived_first_audio_s(self) -> float:
        """The default first-audio budget: one step in flight, then the prefill
        and the first chunk at full capacity, with the headroom on top."""
        cfg = self.config
        bucket = cfg.kv_buckets[0]
        streams = max(min(self.stream_capacity(bucket), self.book.max_slots), 1)
        interval = self.interval(streams, bucket)
        step = self.cost.step_time(cfg.padded_batch(min(streams, self.rows(bucket))), bucket)
        work = PREFILL_STEPS * step + cfg.first_audio_steps * interval
        return max(step + (1.0 + cfg.realtime_headroom) * work, MIN_FIRST_AUDIO_S)

    # ---- streams now -------------------------------------------------------------

    def streams(self) -> list[ScheduledUtterance]:
        """The live streams (interactive utterances with live jobs)."""
        if not self.book.has_live(Lane.INTERACTIVE):
            return []
        return self.book.live_utterances(Lane.INTERACTIVE)

    def committed(self, now: float) -> int:
        """Streams the lane has promised real time to: the live ones and the
        accepted ones still waiting for their first sentence."""
        return len(self.streams()) + self.reservations.count(now)

    def schedule_streams(self, streams: Sequence[ScheduledUtterance], now: float, interval: float,
                         room: int, held: int = 0) -> tuple[list[float], float]:
        """Expected end of each stream, soonest first, and when a slot frees
        for one more stream after them, by list scheduling on the ``room``
        slots at ``interval`` per code (a step more per prefill). A job that
        holds a slot keeps it for its remaining codes (a stream's next
        sentence started early holds a second one); a stream's waiting
        sentences follow on the slot of its latest job; a stream with no job
        running waits for the next free slot, in admission order, and the
        ``held`` streams without a sentence yet after them, each with a
        nominal first sentence."""
        lines: list[float] = []
        queued: list[tuple[int, float, int]] = []
        ends = [now] * len(streams)
        for n, utt in enumerate(streams):
            latest = -1
            waiting = 0.0
            for job in utt.segments.values():
                if job.state is JobState.ACTIVE:
                    lines.append(now + job.remaining_tokens * interval)
                    if latest < 0 or lines[-1] > lines[latest]:
                        latest = len(lines) - 1
                elif not job.state.terminal:
                    waiting += (job.remaining_tokens + 1) * interval
            if latest >= 0:
                lines[latest] += waiting
                ends[n] = lines[latest]
            else:
                queued.append((utt.seq, waiting, n))
        lines += [now] * max(room - len(lines), 0)
        heapq.heapify(lines)
        nominal = (NOMINAL_CODES + 1) * interval
        in_line = [(work, n) for _, work, n in sorted(queued)] + [(nominal, -1)] * held
        for work, n in in_line:
            start = heapq.heappop(lines) if lines else now
            heapq.heappush(lines, start + work)
            if n < 0:
                ends.append(start + work)
            else:
                ends[n] = start + work
        return sorted(ends), (lines[0] if lines else now)

    def start_estimate(self, jobs: Sequence[Job], now: float) -> StartEstimate:
        """When the stream of ``jobs`` (new, not yet in the books) would get
        its prefill and its first audio, behind the streams already admitted:
        a step (the one in flight, or the one a slot frees in), the prefill,
        the first segment's refine pass if it has one, then
        ``first_audio_steps`` codes."""
        cfg = self.config
        bucket = self.bucket(jobs)
        streams = self.streams()
        held = self.reservations.count(now)
        ahead = len(streams) + held
        interval = self.interval(ahead + 1, bucket)
        _, starts = self.schedule_streams(streams, now, interval, self.slot_room(), held)
        step = self.cost.step_time(cfg.padded_batch(min(ahead + 1, self.rows(bucket))), bucket)
        # A refine pass first: its text tokens and the audio prompt's prefill.
        before = cfg.first_audio_steps + min(jobs, key=lambda j: j.index).refine_steps_left
        first_audio = starts + (1.0 + PREFILL_STEPS) * step + before * interval
        alone = ((1.0 + PREFILL_STEPS) * self.cost.step_time(cfg.batch_sizes[0], bucket)
                 + before * self.interval(1, bucket))
        return StartEstimate(starts, first_audio, alone)

    def behind(self, now: float, bucket: int) -> bool:
        """Is an admitted stream's audio running out (its codes came slower
        than real time, whatever the cost model expected)? Only where the
        target is real time: on a machine that cannot keep even one stream in
        real time every stream is behind, and the rate check alone decides."""
        cfg = self.config
        if self.target_rate(bucket) < CODES_PER_SECOND:
            return False
        # The client starts playing first_audio_steps codes after the first.
        slack = (cfg.first_audio_steps + 2) * self.interval(max(len(self.streams()), 1), bucket)
        for job in self.book.jobs(Lane.INTERACTIVE).values():
            if job.state is JobState.ACTIVE and job.first_code_at is not None and (
                    job.first_code_at + job.tokens / CODES_PER_SECOND + slack < now):
                return True
        return False

    def saturation(self, now: float) -> Saturation:
        """The lane's load now (see ``Saturation``)."""
        streams = self.committed(now)
        capacity = self.capacity()
        retry = None
        if streams >= capacity:
            retry = clamp_retry(self.earliest_end(now) - now, self.config)
        return Saturation(streams, capacity, retry)

    def earliest_end(self, now: float) -> float:
        """When the first stream is expected to end (``now`` if none): a live
        one by its remaining codes, one holding a place by a nominal first
        sentence (it will speak at least that)."""
        streams = self.streams()
        held = self.reservations.count(now)
        if not streams and not held:
            return now
        interval = self.interval(len(streams) + held, self.bucket())
        return self.schedule_streams(streams, now, interval, self.slot_room(), held)[0][0]


def clamp_retry(seconds: float, config: SchedulerConfig) -> float:
    """A retry hint within the configured bounds (never 0: a refused request
    retried at once would be refused again)."""
    if math.isnan(seconds):
        seconds = config.retry_after_max_s
    return min(max(seconds, config.retry_after_min_s), config.retry_after_max_s)


@dataclass(frozen=True, slots=True)
class Saturation:
    """The interactive lane's load, for metrics and the ``/load`` report.

    ``streams`` live streams of ``capacity`` the lane holds now (the stream
    capacity within the slot room); ``retry_after_s``: at capacity, when a
    new stream is expected to fit again (None while there is room).
    """

    streams: int
    capacity: int
    retry_after_s: float | None

    @property
    def ratio(self) -> float:
        """Streams over capacity: 1.0 and above refuses new interactive work
        (a capacity of 0, under strict admission, refuses all of it)."""
        if self.capacity == 0:
            return 1.0 + self.streams
        return self.streams / self.capacity
