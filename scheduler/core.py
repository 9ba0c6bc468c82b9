"""The two-lane scheduler over one shared model.

At every step boundary ``schedule(now)`` returns one ``StepPlan``:

- Interactive work has strict priority: whenever an interactive job can run,
  the step is an interactive step. Its jobs (``interactive_batch_size``, 1 by
  default) are ranked by deadline: a waiting segment by its first-audio
  deadline (moved ``interactive_start_lead_s`` earlier, never before its
  arrival), a running one by when its audio so far runs dry (or, once it
  has run dry, by when it last got a code: streams that are behind take
  turns). More interactive jobs, then background jobs, ride along in the
  same step when the cost model says the bigger batch costs almost nothing
  more (a launch-bound GPU step); more interactive jobs also while the step
  stays short enough for every stream in it to keep real time.
- Otherwise a background step: earliest deadline first, batched by KV bucket,
  new jobs joining the running batch at the step boundary (prefill + decode
  in one plan). A preempted background job keeps its KV slot.
- Starvation bound: while the earliest background deadline is at risk (slack
  below ``urgent_slack_s``), at most ``interactive_steps_per_background``
  interactive steps run between two steps that advance background work.

The plan carries every choice: the KV slot of each job (the scheduler owns
the slots, ``scheduler.book``), the padded batch and the KV and prompt
buckets, and the job whose audio each new segment's plays after
(``scheduler.playout.follows``). Admission (``scheduler.admission``) refuses ``overloaded`` with a
retry hint when the interactive lane has no capacity for one more real-time
stream (``scheduler.capacity``; streams accepted before their first sentence
hold their place, ``scheduler.reservations``) or a queue is full and, for
background work, ``deadline_unmeetable`` when the completion estimate
(``scheduler.estimate``) misses a deadline.
``scheduler.invariants`` holds the self-checks.

Per step the work is O(live jobs): the books count jobs by state as they
change, and runnable jobs come from one walk per utterance
(``scheduler.ranking``).

Thread: not thread-safe; the worker calls everything from the model thread.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterable, Sequence

from scheduler import batching, invariants, playout, ranking
from scheduler.admission import Admission
from scheduler.book import JobBook
from scheduler.capacity import InteractiveCapacity, Saturation
from scheduler.config import QUEUE_ONLY, SchedulerConfig
from scheduler.cost import CostModel
from scheduler.estimate import INF, BackgroundForecast
from scheduler.jobs import Job, JobEvent, JobOutcome, JobState, Refusal, take_refine
from scheduler.load import InteractiveLoad
from scheduler.plan import JobId, Lane, StepOutput, StepPlan
from scheduler.reservations import NOMINAL_CODES, StreamReservations

log = logging.getLogger(__name__)


class Scheduler:
    """Decides each model step; see the module docstring for the policy."""

    def __init__(self, config: SchedulerConfig, cost: CostModel) -> None:
        self.config = config
        self.cost = cost
        self.book = JobBook(config.max_slots)
        self.load = InteractiveLoad(config, cost)
        self.forecast = BackgroundForecast(config, cost, self.book, self.load)
        self.reservations = StreamReservations(config.stream_reservation_s)
        self.capacity = InteractiveCapacity(config, cost, self.book, self.reservations)
        # The first-audio budget: configured, or derived once from the
        # calibrated cost model (the worker builds the scheduler after warm-up).
        self.first_audio_s = (config.interactive_first_audio_s
                              if config.interactive_first_audio_s is not None
                              else self.capacity.derived_first_audio_s())
        self.admission = Admission(config, self.book, self.forecast, self.capacity,
                                   self.first_audio_s)
        self._streak = 0  # interactive steps in a row that left waiting background work idle
        self._wakeup: float | None = None
        self.last_plan: StepPlan | None = None
        self.counters = {"steps": 0, "interactive_steps": 0, "background_steps": 0,
                         "rider_steps": 0, "oom_splits": 0}

    # ---- queries -----------------------------------------------------------------

    def depth(self, lane: Lane) -> int:
        """Jobs of ``lane`` waiting for a slot."""
        return self.book.depth(lane)

    @property
    def active_slots(self) -> int:
        """KV slots held by jobs."""
        return self.book.held()

    def job(self, job_id: JobId) -> Job | None:
        """A live (not yet ended) job."""
        return self.book.job(job_id)

    @property
    def idle(self) -> bool:
        return self.book.idle

    def saturation(self, now: float) -> Saturation:
        """The interactive lane's streams, capacity and retry hint now."""
        return self.capacity.saturation(now)

    def next_wakeup(self) -> float | None:
        """When ``schedule`` may have work again without new input (set when it
        returned ``None`` while waiting to fill a background batch)."""
        return self._wakeup

    # ---- admission ---------------------------------------------------------------

    def admit(self, jobs: Sequence[Job], now: float) -> Refusal | None:
        """Queue all currently known segments of one new utterance, or refuse
        them all. Raises ValueError for malformed input (a programming error)."""
        if not jobs:
            raise ValueError("admit needs at least one job")
        key, lane = jobs[0].utterance, jobs[0].lane
        if any(j.utterance != key or j.lane is not lane for j in jobs):
            raise ValueError("admit takes the segments of one utterance, in one lane")
        utt = self.book.utterance(key)
        if utt is not None and not utt.done:
            raise ValueError(f"utterance {key!r} is already admitted; use add()")
        self._check_new(jobs)
        refusal = self.admission.refusal(lane, jobs, now, new=True)
        if refusal is not None:
            return refusal
        utt = self.book.new_utterance(key, lane, now)
        for job in sorted(jobs, key=lambda j: j.index):
            self.book.enqueue(utt, job)
        return None

    def admit_empty(self, key: Hashable, lane: Lane, arrival: float, now: float) -> Refusal | None:
        """May a new utterance with nothing to speak yet (streamed text, no
        sentence end so far) be accepted? Judged like ``admit`` with one
        nominal segment (``NOMINAL_CODES``). Nothing is queued: its segments
        come with ``add``. An accepted interactive one holds a place in the
        lane's capacity meanwhile (``scheduler.reservations``); ``release``
        gives it back should the utterance end first."""
        nominal = Job(id=-1, utterance=key, index=0, lane=lane, prompt_len=self.config.prompt_buckets[0],
                      est_tokens=NOMINAL_CODES, arrival=arrival)
        refusal = self.admission.refusal(lane, [nominal], now, new=True)
        if refusal is None and lane is Lane.INTERACTIVE and self.config.admission != QUEUE_ONLY:
            self.reservations.hold(key, now)
        return refusal

    def release(self, key: Hashable) -> None:
        """The utterance ``key`` ended: the place it held, if any, is free
        (its jobs end with ``cancel``)."""
        self.reservations.release(key)

    def add(self, job: Job, now: float) -> Refusal | None:
        """Queue a later segment of an admitted utterance (streamed text; the
        first segments of one admitted by ``admit_empty`` too). Never refused
        for interactive load in capacity mode: the utterance was accepted."""
        self.reservations.release(job.utterance)  # from now on a stream of the books
        utt = self.book.utterance(job.utterance)
        if utt is None:
            self._check_new([job])
            refusal = self.admission.refusal(job.lane, [job], now, new=False)
            if refusal is None:
                self.book.enqueue(self.book.new_utterance(job.utterance, job.lane, now), job)
            return refusal
        if job.lane is not utt.lane:
            raise ValueError("a segment must stay in its utterance's lane")
        if job.index in utt.segments:
            raise ValueError(f"segment {job.index} of {job.utterance!r} already exists")
        self._check_new([job])
        refusal = self.admission.refusal(job.lane, [job], now, new=False)
        if refusal is None:
            self.book.enqueue(utt, job)
        return refusal

    def cancel(self, job_id: JobId, now: float) -> None:
        """End a job in any state; a running one is in the next plan's
        ``release``. Unknown or already ended ids are ignored."""
        job = self.book.job(job_id)
        if job is not None:
            self.book.end(job, JobState.CANCELLED, now, release=True)

    def _check_new(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            if self.book.job(job.id) is not None:
                raise ValueError(f"job id {job.id} is already live")
            if job.state is not JobState.WAITING or job.tokens:
                raise ValueError(f"job {job.id} is not new")

    # ---- one step ----------------------------------------------------------------

    def schedule(self, now: float) -> StepPlan | None:
        """The next step's plan, or ``None`` when there is nothing to do."""
        cfg = self.config
        self._wakeup = None
        ranked = self._ranked_interactive()
        slots = self._interactive_budget(ranked, now)
        interactive = batching.pick_interactive(cfg, ranked, slots)
        bg_edf = self._runnable_background()
        starving = (bool(interactive) and bool(bg_edf)
                    and self._streak >= cfg.interactive_steps_per_background
                    and self.forecast.urgent(now))
        if interactive and not starving:
            rest = [j for j in ranked if j not in interactive]
            # No candidates, no riders: skip the cost look-ups.
            extra = batching.add_riders(cfg, self.cost, interactive, rest, slots) if rest else []
            if len(extra) < len(rest):
                extra += self._realtime_riders(interactive + extra, rest, slots)
            riders = (batching.add_riders(cfg, self.cost, interactive + extra, bg_edf,
                                          self._bg_budget(slots)) if bg_edf else [])
            interactive += extra
            self._streak = 0 if riders or not bg_edf else self._streak + 1
            return self._plan(Lane.INTERACTIVE, interactive + riders, now)
        if bg_edf:
            # The interactive picks above took no slots for real: start afresh.
            slots = self._bg_budget(batching.SlotBudget(self.book.free_slots))
            batch = batching.pick_background(cfg, self.cost, bg_edf, slots)
            if batch and not self._fill_wait(batch, now):
                self._streak = 0
                return self._plan(Lane.BACKGROUND, batch, now)
            if interactive:
                self._streak += 1
                return self._plan(Lane.INTERACTIVE, interactive, now)
        if self.book.releases:
            return self._plan(Lane.BACKGROUND, [], now)
        return None

    def update(self, plan: StepPlan, output: StepOutput, now: float) -> list[JobEvent]:
        """Take one executed step's results; returns the jobs that ended.
        Nothing is reported for cancelled jobs."""
        self._account(plan, output.seconds, now)
        if output.oom:
            return self._after_oom(plan, now)
        if plan.decode and not plan.prefill and output.seconds > 0 and not output.refining:
            self.cost.observe(plan.batch_size, plan.kv_bucket, output.seconds)  # a (batch, bucket) step
        # The runner forgets ended jobs itself: do not release them again.
        self.book.drop_releases(set(output.finished) | set(output.failed))
        for job_id, count in output.tokens.items():
            job = self.book.job(job_id)
            if job is None:
                continue
            if count > job.tokens:
                job.last_code_at = now
                if job.first_code_at is None:
                    job.first_code_at = now
            job.tokens = count
        take_refine(self.book.job, output)
        events: list[JobEvent] = []
        for job_id, message in output.failed.items():
            job = self.book.job(job_id)
            if job is not None:
                self.book.end(job, JobState.FAILED, now)
                events.append(JobEvent(job_id, JobOutcome.FAILED, message))
        for job_id in output.finished:
            job = self.book.job(job_id)
            if job is not None:
                self.book.end(job, JobState.FINISHED, now)
                events.append(JobEvent(job_id, JobOutcome.FINISHED))
        return events

    def _after_oom(self, plan: StepPlan, now: float) -> list[JobEvent]:
        """Nothing advanced: prefills go back to waiting, the batch is split
        (each job's cap halves); a job that was alone fails."""
        self.counters["oom_splits"] += 1
        for job_id in plan.prefill:
            job = self.book.job(job_id)
            if job is not None and job.state is JobState.ACTIVE:
                self.book.unstart(job)
        # A prefill cancelled meanwhile never reached the runner: nothing to release.
        self.book.drop_releases(plan.prefill)
        jobs = [j for j in map(self.book.job, plan.jobs) if j is not None]
        if len(plan.jobs) == 1 and jobs:
            job = jobs[0]
            self.book.end(job, JobState.FAILED, now, release=True)
            log.warning("job %s failed: out of memory even alone", job.id)
            return [JobEvent(job.id, JobOutcome.FAILED, "out of device memory")]
        cap = max(1, min(len(plan.jobs) - 1, self.config.padded_batch(len(plan.jobs)) // 2))
        for job in jobs:
            job.batch_cap = min(job.batch_cap, cap)
        log.info("out of memory at %d rows: splitting to %s", len(plan.jobs), cap)
        return []

    # ---- selection ---------------------------------------------------------------

    def _ranked_interactive(self) -> list[Job]:
        if not self.book.has_live(Lane.INTERACTIVE):
            return []
        return ranking.ranked_interactive(self.book.live_utterances(Lane.INTERACTIVE),
                                          self.first_audio_s,
                                          self.config.interactive_start_lead_s)

    def _interactive_budget(self, ranked: list[Job], now: float) -> batching.SlotBudget:
        """Free slots, the ones waiting streams need now (and the held ones
        will need for their first sentence) kept from early starts."""
        if not ranked:
            return batching.SlotBudget(self.book.free_slots)
        early: set[int] = set()
        reserve = self.reservations.count(now)
        for job in ranked:
            if job.state is JobState.WAITING:
                if self._stream_holds_a_slot(job):
                    early.add(job.id)
                else:
                    reserve += 1
        return batching.SlotBudget(self.book.free_slots, reserve, frozenset(early))

    def _stream_holds_a_slot(self, job: Job) -> bool:
        utt = self.book.utterance(job.utterance)
        return utt is not None and any(s.state is JobState.ACTIVE for s in utt.segments.values())

    def _realtime_riders(self, batch: list[Job], rest: list[Job],
                         slots: batching.SlotBudget) -> list[Job]:
        """Streams that also ride while the step is cheap enough (``batching.
        add_stream_riders``): running jobs and first segments, in rank order (a later
        segment is not started early on a slot a new stream may need)."""
        chosen = set(map(id, batch))
        candidates = [j for j in rest if id(j) not in chosen
                      and (j.state is JobState.ACTIVE or self._first_segment(j))]
        if not candidates:
            return []
        return batching.add_stream_riders(self.config, self.cost, batch, candidates, slots)

    def _first_segment(self, job: Job) -> bool:
        """No segment of ``job``'s utterance has started yet."""
        utt = self.book.utterance(job.utterance)
        return utt is not None and not any(s.started for s in utt.segments.values())

    def _runnable_background(self) -> list[Job]:
        if not self.book.has_live(Lane.BACKGROUND):
            return []
        return self.forecast.edf(job for utt in self.book.live_utterances(Lane.BACKGROUND)
                                 for job in ranking.runnable(utt))

    def _bg_budget(self, slots: batching.SlotBudget) -> batching.SlotBudget:
        held = self.book.held(Lane.BACKGROUND)
        return batching.SlotBudget(min(slots.free, self.config.background_slots - held))

    def _fill_wait(self, batch: list[Job], now: float) -> bool:
        """Hold back a lone new background batch for a fuller one while the
        earliest deadline's slack allows."""
        wait = self.config.background_fill_wait_s
        if wait <= 0 or len(batch) >= self.config.max_batch:
            return False
        if self.book.held(Lane.BACKGROUND):
            return False
        until = min(j.arrival for j in batch) + wait
        step = self.forecast.step_seconds(len(batch), now, share=1.0)
        slack = min((j.deadline - now - (j.remaining_tokens + 1) * step(j))
                    if j.deadline is not None else INF for j in batch)
        if now < until and slack > 2 * wait + self.config.urgent_slack_s:
            self._wakeup = until
            return True
        return False

    # ---- bookkeeping -------------------------------------------------------------

    def _plan(self, lane: Lane, jobs: list[Job], now: float) -> StepPlan:
        """The plan for ``jobs``: waiting ones take slots, shapes are chosen."""
        cfg = self.config
        prefill = [j for j in jobs if j.state is JobState.WAITING]
        decode = [j for j in jobs if j.state is JobState.ACTIVE]
        for job in prefill:
            self.book.start(job, now)
        plan = StepPlan(
            lane=lane,
            prefill=tuple(j.id for j in prefill),
            decode=tuple(j.id for j in decode),
            release=self.book.take_releases(),
            slots=tuple(j.slot for j in prefill + decode),
            work=tuple(j.work for j in prefill),
            batch_size=cfg.padded_batch(len(decode)) if decode else cfg.batch_sizes[0],
            kv_bucket=cfg.bucket(max(j.kv_len for j in decode)) if decode else 0,
            prefill_batch=cfg.padded_batch(len(prefill)) if prefill else 0,
            prompt_bucket=cfg.prompt_bucket(max(j.prompt_len for j in prefill)) if prefill else 0,
            follows=tuple(playout.follows(self.book.utterance(j.utterance), j.index) for j in prefill),
        )
        self.counters["steps"] += 1
        if jobs:
            self.counters["interactive_steps" if lane is Lane.INTERACTIVE else "background_steps"] += 1
            if lane is Lane.INTERACTIVE and any(j.lane is Lane.BACKGROUND for j in jobs):
                self.counters["rider_steps"] += 1
        self.last_plan = plan
        return plan

    def _account(self, plan: StepPlan, seconds: float, now: float) -> None:
        jobs = [j for j in map(self.book.job, plan.jobs) if j is not None]
        rows = sum(1 for j in jobs if j.lane is Lane.INTERACTIVE)
        self.load.account(plan, rows, len(jobs), seconds, now)

    # ---- self-check --------------------------------------------------------------

    def check_invariants(self) -> None:
        """Raise AssertionError if the scheduler's state is inconsistent.
        Cheap enough to call after every step in tests and simulations."""
        invariants.check_state(self)

    def check_plan(self, plan: StepPlan) -> None:
        """Raise AssertionError if ``plan`` (just returned by ``schedule``) names
        a job that is not live and holding its slot, or exceeds a job's cap."""
        invariants.check_plan(self, plan)
