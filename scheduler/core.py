"""The two-lane scheduler over one shared model.

At every step boundary ``schedule(now)`` returns one ``StepPlan``:

- Interactive work has strict priority: whenever an interactive job can run,
  the step is an interactive step. Its jobs (``interactive_batch_size``, 1 by
  default) are ranked by deadline: a waiting segment by its first-audio
  deadline (moved ``interactive_start_lead_s`` earlier), a running one by
  when its audio so far runs dry. More interactive jobs, then background
  jobs, ride along in the same step when the cost model says the bigger
  batch costs almost nothing more (a launch-bound GPU step).
- Otherwise a background step: earliest deadline first, batched by KV bucket,
  new jobs joining the running batch at the step boundary (prefill + decode
  in one plan). A preempted background job keeps its KV slot.
- Starvation bound: while the earliest background deadline is at risk (slack
  below ``urgent_slack_s``), at most ``interactive_steps_per_background``
  interactive steps run between two steps that advance background work.

Admission (``scheduler.admission``) refuses ``overloaded`` when a lane's
queue is full and, for background work, ``deadline_unmeetable`` when the EDF
completion estimate misses the new work's deadline or would push admitted
work past its own. ``scheduler.invariants`` holds the self-checks.

Per step the work is O(live jobs): waiting and slot-holding jobs are counted
as their states change, and runnable jobs come from one walk per utterance
(``scheduler.ranking``).

Thread: not thread-safe; the worker calls everything from the model thread.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Iterable, Sequence

from scheduler import admission, batching, estimate, invariants, ranking
from scheduler.config import SchedulerConfig
from scheduler.cost import CostModel
from scheduler.jobs import Job, JobEvent, JobState, Refusal
from scheduler.plan import JobId, Lane, StepOutput, StepPlan
from scheduler.playout import Utterance

log = logging.getLogger(__name__)

INF = math.inf


def _lane_index(lane: Lane) -> int:
    return 0 if lane is Lane.INTERACTIVE else 1


class Scheduler:
    """Decides each model step; see the module docstring for the policy."""

    def __init__(self, config: SchedulerConfig, cost: CostModel) -> None:
        self.config = config
        self.cost = cost
        self._live: dict[Lane, dict[JobId, Job]] = {Lane.INTERACTIVE: {}, Lane.BACKGROUND: {}}
        # The same two dicts, by name: hashing an Enum runs Python code, and
        # the hot paths look a lane up several times per step.
        self._interactive = self._live[Lane.INTERACTIVE]
        self._background = self._live[Lane.BACKGROUND]
        self._utterances: dict[Hashable, Utterance] = {}
        self._release: list[JobId] = []  # slots the runner holds for jobs that are gone
        # Live jobs by state, per lane (index: _lane_index), kept in step with
        # every state change (_set_state): queue depths and held slots are
        # read several times per step.
        self._waiting = [0, 0]
        self._active = [0, 0]
        self._seq = 0
        self._streak = 0  # interactive steps in a row that left waiting background work idle
        # Decayed seconds of model time interactive work took, over a short
        # and a long window (the long one remembers bursts a quiet spell hides).
        self._interactive_time = [0.0, 0.0]
        self._load_at = 0.0
        self._wakeup: float | None = None
        self._last_plan: StepPlan | None = None
        self.counters = {"steps": 0, "interactive_steps": 0, "background_steps": 0,
                         "rider_steps": 0, "oom_splits": 0, "refused_overloaded": 0,
                         "refused_deadline": 0}

    # ---- queries -----------------------------------------------------------------

    def depth(self, lane: Lane) -> int:
        """Jobs of ``lane`` waiting for a slot."""
        return self._waiting[_lane_index(lane)]

    @property
    def active_slots(self) -> int:
        """KV slots the runner holds for us (including ones to release next step)."""
        return self._held() + len(self._release)

    def job(self, job_id: JobId) -> Job | None:
        """A live (not yet ended) job."""
        job = self._interactive.get(job_id)
        return job if job is not None else self._background.get(job_id)

    @property
    def idle(self) -> bool:
        return not (self._interactive or self._background or self._release)

    def interactive_load(self, now: float) -> float:
        """Share of the model interactive work took from background lately
        (0..1): the larger of a ``load_window_s`` and a 6x longer average."""
        return min(max(t / w for t, w in zip(self._decayed(now), self._windows())), 1.0)

    def estimate_start(self, lane: Lane, now: float) -> float:
        """When a job of ``lane`` admitted now would get its first code (estimate)."""
        return admission.estimate_start(self, lane, now)

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
        if key in self._utterances and not self._utterances[key].done:
            raise ValueError(f"utterance {key!r} is already admitted; use add()")
        self._check_new(jobs)
        refusal = admission.refusal(self, lane, jobs, now)
        if refusal is not None:
            return refusal
        self._prune(now)
        self._seq += 1
        utt = Utterance(key, lane, self._seq, now)
        self._utterances[key] = utt
        for job in sorted(jobs, key=lambda j: j.index):
            self._enqueue(utt, job)
        return None

    def add(self, job: Job, now: float) -> Refusal | None:
        """Queue a later segment of an admitted utterance (streamed text)."""
        utt = self._utterances.get(job.utterance)
        if utt is None:
            return self.admit([job], now)
        if job.lane is not utt.lane:
            raise ValueError("a segment must stay in its utterance's lane")
        if job.index in utt.segments:
            raise ValueError(f"segment {job.index} of {job.utterance!r} already exists")
        self._check_new([job])
        refusal = admission.refusal(self, job.lane, [job], now)
        if refusal is None:
            self._enqueue(utt, job)
        return refusal

    def cancel(self, job_id: JobId, now: float) -> None:
        """End a job in any state; its slot goes back in the next plan's
        ``release``. Unknown or already ended ids are ignored."""
        job = self.job(job_id)
        if job is None:
            return
        if job.state is JobState.ACTIVE:
            self._release.append(job_id)
        self._end(job, JobState.CANCELLED, now)

    def cancel_utterance(self, utterance: Hashable, now: float) -> None:
        utt = self._utterances.get(utterance)
        if utt is not None:
            for job in list(utt.segments.values()):
                self.cancel(job.id, now)

    def _check_new(self, jobs: Iterable[Job]) -> None:
        for job in jobs:
            if self.job(job.id) is not None:
                raise ValueError(f"job id {job.id} is already live")
            if job.state is not JobState.WAITING or job.tokens:
                raise ValueError(f"job {job.id} is not new")

    def _enqueue(self, utt: Utterance, job: Job) -> None:
        utt.segments[job.index] = job
        self._live[job.lane][job.id] = job
        self._waiting[_lane_index(job.lane)] += 1

    def _prune(self, now: float) -> None:
        """Forget utterances that ended long ago (their playback is over)."""
        if len(self._utterances) < 256:
            return
        for key in [k for k, u in self._utterances.items()
                    if u.done and max((j.ended_at or 0.0) for j in u.segments.values()) < now - 60.0]:
            del self._utterances[key]

    # ---- one step ----------------------------------------------------------------

    def schedule(self, now: float) -> StepPlan | None:
        """The next step's plan, or ``None`` when there is nothing to do."""
        cfg = self.config
        self._wakeup = None
        slots = batching.SlotBudget(cfg.max_slots - self._held())
        ranked = self._ranked_interactive(now)
        interactive = batching.pick_interactive(cfg, ranked, slots)
        bg_edf = self._runnable_background()
        starving = (bool(interactive) and bool(bg_edf)
                    and self._streak >= cfg.interactive_steps_per_background
                    and self._background_urgent(now))
        if interactive and not starving:
            rest = [j for j in ranked if j not in interactive]
            # No candidates, no riders: skip the cost look-ups.
            extra = batching.add_riders(cfg, self.cost, interactive, rest, slots) if rest else []
            riders = (batching.add_riders(cfg, self.cost, interactive + extra, bg_edf,
                                          self._bg_budget(slots)) if bg_edf else [])
            interactive += extra
            self._streak = 0 if riders or not bg_edf else self._streak + 1
            return self._plan(Lane.INTERACTIVE, interactive + riders, now)
        if bg_edf:
            # The interactive picks above took no slots for real: start afresh.
            slots = self._bg_budget(batching.SlotBudget(cfg.max_slots - self._held()))
            batch = batching.pick_background(cfg, self.cost, bg_edf, slots)
            if batch and not self._fill_wait(batch, now):
                self._streak = 0
                return self._plan(Lane.BACKGROUND, batch, now)
            if interactive:
                self._streak += 1
                return self._plan(Lane.INTERACTIVE, interactive, now)
        if self._release:
            return self._plan(Lane.BACKGROUND, [], now)
        return None

    def update(self, plan: StepPlan, output: StepOutput, now: float) -> list[JobEvent]:
        """Take one executed step's results; returns the jobs that ended.
        Nothing is reported for cancelled jobs."""
        self._account(plan, output.seconds, now)
        if output.oom:
            return self._after_oom(plan, output, now)
        if plan.decode and not plan.prefill and output.seconds > 0:
            self.cost.observe(plan.batch_size, plan.kv_bucket, output.seconds)
        ended = set(output.finished) | set(output.failed)
        # The runner frees the slots of ended jobs itself: do not release them twice.
        self._release = [i for i in self._release if i not in ended]
        for job_id, count in output.tokens.items():
            job = self.job(job_id)
            if job is None:
                continue
            job.tokens = count
            if job.first_code_at is None and count > 0:
                job.first_code_at = now
        events: list[JobEvent] = []
        for job_id, message in output.failed.items():
            job = self.job(job_id)
            if job is not None:
                self._end(job, JobState.FAILED, now)
                events.append(JobEvent(job_id, "failed", message))
        for job_id in output.finished:
            job = self.job(job_id)
            if job is not None:
                self._end(job, JobState.FINISHED, now)
                events.append(JobEvent(job_id, "finished"))
        return events

    def _after_oom(self, plan: StepPlan, output: StepOutput, now: float) -> list[JobEvent]:
        """Nothing advanced: prefills go back to waiting, the batch is split
        (each job's cap halves); a job that was alone fails."""
        self.counters["oom_splits"] += 1
        for job_id in plan.prefill:
            job = self.job(job_id)
            if job is not None:
                self._set_state(job, JobState.WAITING)
                job.started_at = None
        # A prefill cancelled meanwhile never got its slot: nothing to release.
        self._release = [i for i in self._release if i not in plan.prefill]
        jobs = [j for j in map(self.job, plan.jobs) if j is not None]
        if len(plan.jobs) == 1 and jobs:
            job = jobs[0]
            if job.state is JobState.ACTIVE:
                self._release.append(job.id)
            self._end(job, JobState.FAILED, now)
            log.warning("job %s failed: out of memory even alone", job.id)
            return [JobEvent(job.id, "failed", "out of device memory")]
        cap = max(1, min(len(plan.jobs) - 1, plan.batch_size // 2))
        for job in jobs:
            job.batch_cap = min(job.batch_cap, cap)
        log.info("out of memory at batch %s: splitting to %s", plan.batch_size, cap)
        return []

    # ---- selection ---------------------------------------------------------------

    def _live_utterances(self, lane: Lane) -> list[Utterance]:
        """The utterances with live jobs in ``lane`` (each once)."""
        utts: dict[Hashable, Utterance] = {}
        for job in (self._interactive if lane is Lane.INTERACTIVE else self._background).values():
            if job.utterance not in utts:
                utts[job.utterance] = self._utterances[job.utterance]
        return list(utts.values())

    def _ranked_interactive(self, now: float) -> list[Job]:
        if not self._interactive:
            return []
        return ranking.ranked_interactive(self._live_utterances(Lane.INTERACTIVE),
                                          self.config.interactive_first_audio_s,
                                          self.config.interactive_start_lead_s)

    def _runnable_background(self) -> list[Job]:
        if not self._background:
            return []
        return self._edf(job for utt in self._live_utterances(Lane.BACKGROUND)
                         for job in ranking.runnable(utt))

    def _edf(self, jobs: Iterable[Job], extra: Utterance | None = None) -> list[Job]:
        def key(job: Job) -> tuple:
            utt = self._utterances.get(job.utterance) or extra
            deadline = INF if job.deadline is None else job.deadline
            return (deadline, utt.seq if utt else 0, job.index, job.id)

        return sorted(jobs, key=key)

    def _bg_order(self, jobs: Iterable[Job], extra: Utterance | None = None) -> list[Job]:
        """Background jobs in the order they will get rows: the running ones
        keep theirs (background never holds more slots than one batch, so a
        running job is not displaced), then the waiting ones by deadline."""
        ordered = self._edf(jobs, extra)
        return ([j for j in ordered if j.state is JobState.ACTIVE]
                + [j for j in ordered if j.state is not JobState.ACTIVE])

    def _bg_budget(self, slots: batching.SlotBudget) -> batching.SlotBudget:
        held = self._active[1]
        return batching.SlotBudget(min(slots.free, self.config.background_slots - held))

    def _background_urgent(self, now: float) -> bool:
        """Would some background job miss its deadline (less ``urgent_slack_s``)
        if background got only its guaranteed share of the model from now on?"""
        jobs = self._bg_order(self._live[Lane.BACKGROUND].values())
        done = estimate.finish_times(jobs, now, self._bg_machines(),
                                     self._bg_step(len(jobs), now, share=self._bg_floor()))
        return any(j.deadline is not None and j.deadline - done[j.id] < self.config.urgent_slack_s
                   for j in jobs)

    def _bg_floor(self) -> float:
        """The share of steps the starvation bound guarantees background work."""
        return 1.0 / (self.config.interactive_steps_per_background + 1)

    def _bg_share(self, now: float) -> float:
        """The share of the model background work can count on: what recent
        interactive load and the interactive work queued now leave, never
        less than the starvation bound's guarantee."""
        backlog = self._interactive_backlog() / self.config.load_window_s
        return max(1.0 - max(self.interactive_load(now), backlog), self._bg_floor())

    def _interactive_backlog(self) -> float:
        """Seconds of model time the live interactive jobs still need, counted
        like ``_account``: a row's share of a step when background can ride
        along, else the whole step."""
        cfg = self.config
        total = 0.0
        for job in self._live[Lane.INTERACTIVE].values():
            bucket = cfg.bucket(job.final_kv_len)
            step = self.cost.step_time(1, bucket)
            if self.cost.step_time(cfg.max_batch, bucket) <= step * (1.0 + cfg.rider_overhead):
                step = self.cost.step_time(cfg.max_batch, bucket) / cfg.max_batch
            total += job.remaining_tokens * step
        return total

    def _fill_wait(self, batch: list[Job], now: float) -> bool:
        """Hold back a lone new background batch for a fuller one while the
        earliest deadline's slack allows."""
        wait = self.config.background_fill_wait_s
        if wait <= 0 or len(batch) >= self.config.max_batch:
            return False
        if self._active[1]:
            return False
        until = min(j.arrival for j in batch) + wait
        step = self._bg_step(len(batch), now, share=1.0)
        slack = min((j.deadline - now - (j.remaining_tokens + 1) * step(j)) if j.deadline is not None else INF
                    for j in batch)
        if now < until and slack > 2 * wait + self.config.urgent_slack_s:
            self._wakeup = until
            return True
        return False

    def _bg_machines(self) -> int:
        return max(1, min(self.config.max_batch, self.config.background_slots))

    def _bg_step(self, count: int, now: float, share: float | None = None):
        """Seconds per step a background job sees: the batch's step time over
        the share of the model the background lane gets."""
        cfg = self.config
        batch = cfg.padded_batch(max(1, min(count, self._bg_machines())))
        if share is None:
            share = self._bg_share(now)

        def seconds(job: Job) -> float:
            return self.cost.step_time(batch, cfg.bucket(job.final_kv_len)) / share

        return seconds

    # ---- bookkeeping -------------------------------------------------------------

    def _plan(self, lane: Lane, jobs: list[Job], now: float) -> StepPlan:
        release, self._release = tuple(self._release), []
        prefill = [j for j in jobs if j.state is JobState.WAITING]
        decode = [j for j in jobs if j.state is JobState.ACTIVE]
        for job in prefill:
            self._set_state(job, JobState.ACTIVE)
            job.started_at = now
        size = self.config.padded_batch(len(jobs)) if jobs else self.config.batch_sizes[0]
        bucket = self.config.bucket(max(j.kv_len for j in jobs)) if jobs else 0
        plan = StepPlan(lane=lane, prefill=tuple(j.id for j in prefill),
                        decode=tuple(j.id for j in decode), release=release,
                        batch_size=size, kv_bucket=bucket)
        self.counters["steps"] += 1
        if jobs:
            self.counters["interactive_steps" if lane is Lane.INTERACTIVE else "background_steps"] += 1
            if lane is Lane.INTERACTIVE and any(j.lane is Lane.BACKGROUND for j in jobs):
                self.counters["rider_steps"] += 1
        self._last_plan = plan
        return plan

    def _end(self, job: Job, state: JobState, now: float) -> None:
        self._set_state(job, state)
        job.ended_at = now
        (self._interactive if job.lane is Lane.INTERACTIVE else self._background).pop(job.id)

    def _set_state(self, job: Job, state: JobState) -> None:
        """Every state change of a live job goes through here (the counts)."""
        lane, old = _lane_index(job.lane), job.state
        if old is JobState.WAITING:
            self._waiting[lane] -= 1
        elif old is JobState.ACTIVE:
            self._active[lane] -= 1
        if state is JobState.WAITING:
            self._waiting[lane] += 1
        elif state is JobState.ACTIVE:
            self._active[lane] += 1
        job.state = state

    def _held(self) -> int:
        return self._active[0] + self._active[1]

    def _windows(self) -> tuple[float, float]:
        return self.config.load_window_s, 6.0 * self.config.load_window_s

    def _decayed(self, now: float) -> list[float]:
        age = max(now - self._load_at, 0.0)
        return [t * math.exp(-age / w) for t, w in zip(self._interactive_time, self._windows())]

    def _account(self, plan: StepPlan, seconds: float, now: float) -> None:
        """Track the share of the model interactive work takes from background.

        A step's interactive share is its interactive rows over the largest
        batch when background work rode along (or could have: the cost model
        says a full batch costs about the same), else the whole step.
        """
        self._interactive_time = self._decayed(now)
        self._load_at = now
        jobs = [j for j in map(self.job, plan.jobs) if j is not None]
        rows = sum(1 for j in jobs if j.lane is Lane.INTERACTIVE)
        if plan.lane is not Lane.INTERACTIVE or not rows or seconds <= 0:
            return
        cfg = self.config
        shared = len(jobs) > rows or self.cost.step_time(cfg.max_batch, plan.kv_bucket) <= (
            self.cost.step_time(plan.batch_size, plan.kv_bucket) * (1.0 + cfg.rider_overhead))
        taken = seconds * (rows / cfg.max_batch if shared else 1.0)
        self._interactive_time = [t + taken for t in self._interactive_time]

    # ---- self-check --------------------------------------------------------------

    def check_invariants(self) -> None:
        """Raise AssertionError if the scheduler's state is inconsistent.
        Cheap enough to call after every step in tests and simulations."""
        invariants.check_state(self)

    def check_plan(self, plan: StepPlan) -> None:
        """Raise AssertionError if ``plan`` (just returned by ``schedule``) names
        a job that is not live and holding a slot, or exceeds a job's cap."""
        invariants.check_plan(self, plan)
