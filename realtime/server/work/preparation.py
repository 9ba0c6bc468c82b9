"""Segment preparation off the model thread: prompts are ready before admission.

``Runner.prepare`` (the tokenizer, the speaker, any voice sample's codes, the
job's seed) used to run on the model thread between two steps, so every
admission stalled every decoding stream for the tokenizer's time.
``Preparation`` runs it on a thread of its own: ``submit`` queues a
``Submission`` there; the thread prepares each segment and posts a
``Prepared`` (the submission with its ``PreparedJob``s, or the one refusal
of the whole submission) to the model thread's inbox, where the model
thread only admits. ``prepare_submission`` is that work, also callable
inline (tests drive the worker's loop on their own thread).

Order. Submissions are prepared one at a time and posted in the order they
were submitted, so the runner sees ``prepare`` calls in the order the model
thread made them (unseeded jobs draw the same seeds). A cancel that names a
job, or the utterance of a submission, still queued or in preparation goes
through the thread behind it, so it reaches the model thread after the
submission it cancels, exactly as when both crossed the inbox; any other
cancel goes to the inbox at once and never waits for a tokenizer.

Errors: ``RequestError`` refuses the submission ``unsupported`` (with its
field), anything else ``internal`` (logged): what the model thread did.

Thread: ``submit``/``cancel`` on the event loop (any one thread); ``_run``
on the preparation thread; ``prepare_submission`` on the caller's.
"""

from __future__ import annotations

import collections
import logging
import queue
import threading
from dataclasses import dataclass

from protocol import ErrorCode
from realtime.engine.api import PreparedJob, RequestError, Runner
from realtime.server.work.handoff import CancelJobs, Submission, UpdateSink
from realtime.server.work.inbox import Inbox

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a whole submission is refused before admission."""

    code: ErrorCode
    message: str
    field: str | None = None


@dataclass(frozen=True, slots=True)
class Prepared:
    """A submission with its segments prepared (``jobs[i]`` for
    ``submission.segments[i]``), or refused (``refusal``; ``jobs`` then
    holds the segments prepared before the one refused)."""

    submission: Submission
    jobs: tuple[PreparedJob, ...] = ()
    refusal: Refusal | None = None


# What the model thread's inbox holds.
Command = Prepared | CancelJobs


def prepare_submission(runner: Runner, sub: Submission) -> Prepared:
    """Every segment of ``sub`` prepared, or the refusal of the first that
    cannot be (the later ones are not prepared). Never raises."""
    jobs: list[PreparedJob] = []
    for seg in sub.segments:
        try:
            jobs.append(runner.prepare(seg.request))
        except RequestError as exc:
            return Prepared(sub, tuple(jobs), Refusal(ErrorCode.UNSUPPORTED, str(exc), exc.field))
        except Exception:  # a failure of the front end on this request, not the client's
            log.exception("prepare failed for job %s", seg.job_id)
            return Prepared(sub, tuple(jobs), Refusal(ErrorCode.INTERNAL,
                                                      "the text front end failed on this utterance"))
    return Prepared(sub, tuple(jobs))


class Preparation:
    """The preparation thread in front of ``inbox`` (module docstring).
    ``start(runner)`` once the runner is built; ``stop`` ends the thread
    (what is queued is dropped: the server is stopping)."""

    def __init__(self, inbox: Inbox[Command]) -> None:
        self._inbox = inbox
        self._queue: queue.SimpleQueue[Submission | CancelJobs | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # What is queued or in preparation: the cancels that must follow it.
        self._jobs: set[int] = set()
        self._sinks: collections.Counter[UpdateSink] = collections.Counter()
        self._thread: threading.Thread | None = None
        self._runner: Runner | None = None

    @property
    def busy(self) -> bool:
        """A submission is queued or in preparation (a racy snapshot)."""
        return bool(self._jobs) or bool(self._sinks)

    def start(self, runner: Runner) -> None:
        self._runner = runner
        self._thread = threading.Thread(target=self._run, name="prepare", daemon=True)
        self._thread.start()

    def submit(self, sub: Submission) -> None:
        with self._lock:
            self._jobs.update(seg.job_id for seg in sub.segments)
            self._sinks[sub.sink] += 1
        self._queue.put(sub)

    def cancel(self, cancel: CancelJobs) -> None:
        with self._lock:
            behind = (cancel.sink is not None and cancel.sink in self._sinks) \
                or not self._jobs.isdisjoint(cancel.job_ids)
            if behind:  # inside the lock: the submission cannot be posted meanwhile
                self._queue.put(cancel)
                return
        self._inbox.post(cancel)

    def stop(self, timeout: float = 5.0) -> None:
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        runner = self._runner
        assert runner is not None
        while (item := self._queue.get()) is not None:
            if isinstance(item, CancelJobs):
                self._inbox.post(item)
                continue
            self._inbox.post(prepare_submission(runner, item))
            # Only once it is in the inbox: a cancel checked meanwhile queues behind it.
            with self._lock:
                self._jobs.difference_update(seg.job_id for seg in item.segments)
                self._sinks[item.sink] -= 1
                if self._sinks[item.sink] <= 0:
                    del self._sinks[item.sink]
