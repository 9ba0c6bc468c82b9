"""Scheduler configuration: the runtime's shapes plus the policy knobs.

Thread: immutable, shared freely.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from scheduler.jobs import CODES_PER_SECOND

# The runtime's default shapes (the runner announces its own; these serve
# the scheduler's tests and simulations and the server's defaults).
DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8)
DEFAULT_KV_BUCKETS: tuple[int, ...] = (256, 512, 1024, 2048)
DEFAULT_PROMPT_BUCKETS: tuple[int, ...] = (32, 64, 128, 256)

# Admission modes: by capacity (the default), by capacity with no stream
# served slower than real time, or today's queue bound alone.
CAPACITY = "capacity"
STRICT = "strict"
QUEUE_ONLY = "queue-only"
ADMISSION_MODES: tuple[str, ...] = (CAPACITY, STRICT, QUEUE_ONLY)


@dataclass(frozen=True)
class SchedulerConfig:
    """Shapes the runtime offers and the policy's bounds.

    ``batch_sizes``, ``kv_buckets`` and ``prompt_buckets`` are the shapes the
    runner has graphs for; a plan's batches, KV lengths and prompt lengths are
    padded up to one of them. ``max_slots`` is the number of KV slots, held by
    both lanes together; background never holds more than
    ``max_slots - interactive_reserved_slots`` nor more than ``max_batch``.

    Policy knobs (seconds unless named otherwise):
    - ``admission``: ``"capacity"`` (interactive work is admitted only while
      the cost model says it can start in time and every admitted stream stays
      real time, see ``scheduler.capacity``; queue bounds count waiting
      utterances), ``"strict"`` (the same, except on a machine that cannot
      keep even one stream in real time: ``"capacity"`` then admits the
      streams that slow each other by no more than the headroom, ``"strict"``
      refuses every interactive stream, for a fleet whose load balancer
      should send them to a faster replica) or ``"queue-only"`` (the old
      rule: refuse only when a lane's queue of waiting segments is full).
    - ``interactive_first_audio_s``: first-audio deadline of an interactive
      segment 0 that came without one (arrival + this); ``None`` derives it
      from the cost model (``InteractiveCapacity.derived_first_audio_s``).
      Capacity admission refuses an utterance that would miss it.
    - ``interactive_start_lead_s``: a waiting interactive segment ranks as if
      its deadline were this much earlier, so a new first code is served before
      a running stream's next code, except before a stream that had already
      run dry when the new one arrived (segment 0 never ranks before its
      arrival).
    - ``realtime_headroom``: an admitted interactive stream must get codes at
      least this fraction faster than real time (prefill, jitter, estimates).
    - ``first_audio_steps``: decode steps from a job's first code to its first
      audio (the runner's streaming vocoder: first chunk plus lookahead).
    - ``retry_after_min_s`` / ``retry_after_max_s``: bounds of the retry hint
      a load refusal carries.
    - ``rider_overhead``: more interactive jobs (beyond ``interactive_batch_size``),
      then background jobs, ride along in an interactive step when the cost
      model says the bigger batch costs at most this fraction more. More
      interactive jobs also ride while the step stays within
      ``realtime_step_s`` (every stream in it keeps real time).
    - ``urgent_slack_s`` / ``interactive_steps_per_background``: the starvation
      bound. When the earliest-deadline background job's slack falls below
      ``urgent_slack_s``, at most this many interactive steps run between two
      steps that advance background work.
    - ``background_fill_wait_s``: with no background batch running, wait up to
      this long after the oldest waiting job's arrival for a fuller batch, and
      only while the earliest deadline's slack allows. 0 disables waiting
      (``schedule`` then never returns ``None`` while work is runnable).
    - ``stream_reservation_s``: an interactive utterance accepted before its
      first sentence (streamed text) holds a place in the lane's capacity
      until that sentence is queued, the utterance ends, or this long has
      passed (``scheduler.reservations``); 0 holds none.
    - ``admission_safety``: multiplies estimated step counts in admission.
    - ``load_window_s``: time constant of the interactive-load average.
    """

    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    kv_buckets: tuple[int, ...] = DEFAULT_KV_BUCKETS
    prompt_buckets: tuple[int, ...] = DEFAULT_PROMPT_BUCKETS
    max_slots: int = 16
    interactive_batch_size: int = 1
    max_queue_interactive: int = 64
    max_queue_background: int = 256
    interactive_reserved_slots: int = 1
    admission: str = "capacity"
    interactive_first_audio_s: float | None = None
    interactive_start_lead_s: float = 1.0
    realtime_headroom: float = 0.3
    first_audio_steps: int = 1
    retry_after_min_s: float = 0.05
    retry_after_max_s: float = 30.0
    rider_overhead: float = 0.1
    urgent_slack_s: float = 2.0
    interactive_steps_per_background: int = 3
    background_fill_wait_s: float = 0.0
    admission_safety: float = 1.15
    stream_reservation_s: float = 10.0
    load_window_s: float = 10.0

    def __post_init__(self) -> None:
        if not self.batch_sizes or not self.kv_buckets or not self.prompt_buckets:
            raise ValueError("batch_sizes, kv_buckets and prompt_buckets must not be empty")
        for name in ("batch_sizes", "kv_buckets", "prompt_buckets"):
            object.__setattr__(self, name, tuple(sorted(set(getattr(self, name)))))
        if self.batch_sizes[0] < 1:
            raise ValueError("batch sizes must be >= 1")
        if not 1 <= self.interactive_reserved_slots < self.max_slots:
            raise ValueError("need 1 <= interactive_reserved_slots < max_slots")
        if self.interactive_batch_size < 1 or self.interactive_steps_per_background < 1:
            raise ValueError("interactive_batch_size and interactive_steps_per_background must be >= 1")
        if self.admission not in ADMISSION_MODES:
            raise ValueError(f"admission must be one of {ADMISSION_MODES}, not {self.admission!r}")
        if self.interactive_first_audio_s is not None and not self.interactive_first_audio_s > 0:
            raise ValueError("interactive_first_audio_s must be > 0 (or None: derived)")
        if self.first_audio_steps < 1 or self.realtime_headroom < 0:
            raise ValueError("first_audio_steps must be >= 1 and realtime_headroom >= 0")
        if self.stream_reservation_s < 0:
            raise ValueError("stream_reservation_s must be >= 0")
        if not 0 < self.retry_after_min_s <= self.retry_after_max_s:
            raise ValueError("need 0 < retry_after_min_s <= retry_after_max_s")

    @property
    def max_batch(self) -> int:
        return self.batch_sizes[-1]

    @property
    def realtime_step_s(self) -> float:
        """The longest step that still gives every job in it a code fast
        enough for real time with the headroom."""
        return 1.0 / (CODES_PER_SECOND * (1.0 + self.realtime_headroom))

    @property
    def background_slots(self) -> int:
        """KV slots background work may hold: never the interactive reserve,
        and no more than one full batch, so that background jobs are not
        started only to sit preempted on slots interactive streams need."""
        return min(self.max_slots - self.interactive_reserved_slots, self.max_batch)

    def padded_batch(self, count: int) -> int:
        """The smallest graph batch size >= ``count`` (``count`` <= max_batch)."""
        i = bisect.bisect_left(self.batch_sizes, count)
        if i == len(self.batch_sizes):
            raise ValueError(f"batch of {count} exceeds the largest size {self.max_batch}")
        return self.batch_sizes[i]

    def bucket(self, kv_len: int) -> int:
        """The smallest KV bucket covering ``kv_len`` positions (the largest
        bucket when none does: the runner ends a job at its capacity)."""
        return _at_or_above(self.kv_buckets, kv_len)

    def prompt_bucket(self, prompt_len: int) -> int:
        """The smallest prompt bucket covering ``prompt_len`` positions; a
        longer prompt gets its own length (the runner runs it without a graph)."""
        i = bisect.bisect_left(self.prompt_buckets, prompt_len)
        return self.prompt_buckets[i] if i < len(self.prompt_buckets) else prompt_len


def _at_or_above(sizes: tuple[int, ...], value: int) -> int:
    i = bisect.bisect_left(sizes, value)
    return sizes[min(i, len(sizes) - 1)]
