"""The scheduler's books: live jobs by lane and state, their utterances, KV slots.

``JobBook`` is the one place where a job changes state. It keeps, in step
with every change, what the scheduler reads several times per step: the
waiting and slot-holding counts per lane, the free KV slots, and the jobs
whose slots the runner must drop (cancelled while running). The policy
(``scheduler.core``), admission and the self-checks read it through its
public methods only.

KV slots are the scheduler's to give: a job takes the lowest free slot when
it is planned for prefill and gives it back when it ends or goes back to
waiting. A slot freed by a cancel may be handed out in the very next plan;
the runner drops released jobs before it prefills (see ``StepPlan``).

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping

from scheduler.jobs import Job, JobState
from scheduler.plan import JobId, Lane
from scheduler.playout import ScheduledUtterance

_PRUNE_AFTER = 256  # utterances kept before ended ones are pruned
_PRUNE_AGE_S = 60.0  # an ended utterance's playback is long over by then


def lane_index(lane: Lane) -> int:
    return 0 if lane is Lane.INTERACTIVE else 1


class JobBook:
    """Live jobs, their utterances and the ``max_slots`` KV slots."""

    def __init__(self, max_slots: int) -> None:
        self.max_slots = max_slots
        self._live: dict[Lane, dict[JobId, Job]] = {Lane.INTERACTIVE: {}, Lane.BACKGROUND: {}}
        # The same two dicts by name: hashing an Enum runs Python code, and the
        # hot paths look a lane up several times per step.
        self._interactive = self._live[Lane.INTERACTIVE]
        self._background = self._live[Lane.BACKGROUND]
        self._utterances: dict[Hashable, ScheduledUtterance] = {}
        self._waiting = [0, 0]  # per lane_index
        self._active = [0, 0]
        self._free_slots = list(range(max_slots))  # a min-heap
        self._release: list[JobId] = []
        self._seq = 0

    # ---- queries -------------------------------------------------------------

    def job(self, job_id: JobId) -> Job | None:
        """A live (not yet ended) job."""
        job = self._interactive.get(job_id)
        return job if job is not None else self._background.get(job_id)

    def jobs(self, lane: Lane) -> Mapping[JobId, Job]:
        """The live jobs of ``lane`` (read-only use)."""
        return self._interactive if lane is Lane.INTERACTIVE else self._background

    def has_live(self, lane: Lane) -> bool:
        return bool(self._interactive if lane is Lane.INTERACTIVE else self._background)

    def depth(self, lane: Lane) -> int:
        """Jobs of ``lane`` waiting for a slot."""
        return self._waiting[lane_index(lane)]

    def held(self, lane: Lane | None = None) -> int:
        """KV slots held by ``lane`` (both lanes when None)."""
        if lane is None:
            return self._active[0] + self._active[1]
        return self._active[lane_index(lane)]

    @property
    def free_slots(self) -> int:
        return len(self._free_slots)

    @property
    def idle(self) -> bool:
        return not (self._interactive or self._background or self._release)

    @property
    def releases(self) -> tuple[JobId, ...]:
        """Jobs whose slots the runner must drop in the next plan."""
        return tuple(self._release)

    @property
    def next_seq(self) -> int:
        """The admission number the next new utterance will get."""
        return self._seq + 1

    def utterance(self, key: Hashable) -> ScheduledUtterance | None:
        return self._utterances.get(key)

    def live_utterances(self, lane: Lane) -> list[ScheduledUtterance]:
        """The utterances with live jobs in ``lane``, each once."""
        utts: dict[Hashable, ScheduledUtterance] = {}
        for job in self.jobs(lane).values():
            if job.utterance not in utts:
                utts[job.utterance] = self._utterances[job.utterance]
        return list(utts.values())

    def counts(self, lane: Lane) -> tuple[int, int]:
        """(waiting, holding a slot) as counted, for the self-checks."""
        i = lane_index(lane)
        return self._waiting[i], self._active[i]

    def slot_owners(self) -> dict[int, JobId]:
        """Which job holds each taken slot (for the self-checks)."""
        return {j.slot: j.id for lane in self._live.values() for j in lane.values()
                if j.state is JobState.ACTIVE}

    def free_slot_list(self) -> list[int]:
        return sorted(self._free_slots)

    # ---- changes -------------------------------------------------------------

    def new_utterance(self, key: Hashable, lane: Lane, now: float) -> ScheduledUtterance:
        self._prune(now)
        self._seq += 1
        utt = ScheduledUtterance(key, lane, self._seq, now)
        self._utterances[key] = utt
        return utt

    def enqueue(self, utt: ScheduledUtterance, job: Job) -> None:
        utt.segments[job.index] = job
        self._live[job.lane][job.id] = job
        self._waiting[lane_index(job.lane)] += 1

    def start(self, job: Job, now: float) -> None:
        """A waiting job is planned for prefill: it takes the lowest free slot."""
        job.slot = heapq.heappop(self._free_slots)
        job.started_at = now
        self._set_state(job, JobState.ACTIVE)

    def unstart(self, job: Job) -> None:
        """A prefill did not happen (out of memory): back to waiting, slot freed."""
        self._give_slot(job)
        job.started_at = None
        self._set_state(job, JobState.WAITING)

    def end(self, job: Job, state: JobState, now: float, release: bool = False) -> None:
        """``job`` leaves the books in terminal ``state``. ``release``: the
        runner still holds it and must be told to drop it."""
        if release and job.state is JobState.ACTIVE:
            self._release.append(job.id)
        self._give_slot(job)
        self._set_state(job, state)
        job.ended_at = now
        (self._interactive if job.lane is Lane.INTERACTIVE else self._background).pop(job.id)

    def take_releases(self) -> tuple[JobId, ...]:
        """The releases for the next plan; the books forget them."""
        release, self._release = tuple(self._release), []
        return release

    def drop_releases(self, job_ids: set[JobId] | tuple[JobId, ...]) -> None:
        """The runner no longer holds these: do not tell it to release them."""
        self._release = [i for i in self._release if i not in job_ids]

    def _give_slot(self, job: Job) -> None:
        if job.slot >= 0:
            heapq.heappush(self._free_slots, job.slot)
            job.slot = -1

    def _set_state(self, job: Job, state: JobState) -> None:
        lane, old = lane_index(job.lane), job.state
        if old is JobState.WAITING:
            self._waiting[lane] -= 1
        elif old is JobState.ACTIVE:
            self._active[lane] -= 1
        if state is JobState.WAITING:
            self._waiting[lane] += 1
        elif state is JobState.ACTIVE:
            self._active[lane] += 1
        job.state = state

    def _prune(self, now: float) -> None:
        """Forget utterances that ended long ago (their playback is over)."""
        if len(self._utterances) < _PRUNE_AFTER:
            return
        for key in [k for k, u in self._utterances.items() if u.done
                    and max((j.ended_at or 0.0) for j in u.segments.values()) < now - _PRUNE_AGE_S]:
            del self._utterances[key]
