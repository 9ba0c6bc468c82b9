"""What an utterance and its connection say to each other.

``UtteranceLink`` is what a ``ServerUtterance`` needs from whatever carries
it (a WebSocket session, an OpenAI speech request); ``UtteranceMessage`` the
wire messages it sends through it; ``Outcome`` how it ended, for accounting.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Protocol

from protocol.messages import Cancelled, Done, Error, Segment, Started
from protocol.words import Flushed, Words

if TYPE_CHECKING:
    from realtime.handoff import Submission
    from realtime.utterance import ServerUtterance

UtteranceMessage = Started | Segment | Done | Cancelled | Error | Words | Flushed


class Outcome(enum.Enum):
    """How an utterance ended, for accounting (the wire says it with its terminal)."""

    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"  # an error message; the code says why
    DISCONNECTED = "disconnected"  # the connection went away first


class UtteranceLink(Protocol):
    """What an utterance needs from its connection (the session)."""

    def send_message(self, message: UtteranceMessage, owner: ServerUtterance | None = None) -> None:
        """``owner``: the message goes if the utterance's queued audio is purged."""
    def send_frame(self, utterance: ServerUtterance, frame: bytes) -> None: ...
    def submit(self, submission: Submission) -> None: ...
    def cancel_jobs(self, job_ids: tuple[int, ...], utterance: ServerUtterance) -> None:
        """``utterance`` ended: its live jobs stop, the capacity it held goes."""
    def purge(self, utterance: ServerUtterance) -> None: ...
    def utterance_ended(self, utterance: ServerUtterance, outcome: Outcome, code: str | None) -> None: ...
    def next_job_id(self) -> int: ...
