"""Retry hints: when a refused request is worth sending again.

The scheduler's own refusals carry their hint. This module computes the
hints of the refusals the server makes itself, the same on both fronts
(a WebSocket ``error``'s ``retry_after_ms``, an HTTP ``Retry-After``):

- ``too_many_active``: when one of the connection's utterances is expected
  to end (``active_retry_s``); a connection with none of its own (the
  token's limit, reached on other connections) waits ``UNKNOWN_END_S``;
- the text rate limits: the bucket's exact refill time
  (``realtime.server.ratelimit.QuotaRefusal.retry_after_s``).

Thread: event loop (pure arithmetic).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Protocol

from protocol import ErrorCode
from realtime.server.ratelimit import QuotaRefusal
from realtime.speech.script import CODES_PER_OTHER_CHAR
from scheduler import CODES_PER_SECOND

# Bounds of every retry hint the server sends (the scheduler's defaults).
RETRY_MIN_S = 0.05
RETRY_MAX_S = 30.0
# A connection at its limit with no utterance of its own to wait for (the
# token's limit, reached on other connections): a second, then try again.
UNKNOWN_END_S = 1.0


class Active(Protocol):
    """What a retry hint reads of an active utterance."""

    @property
    def received(self) -> float: ...

    @property
    def text_chars(self) -> int: ...


def clamp_s(seconds: float) -> float:
    return min(max(seconds, RETRY_MIN_S), RETRY_MAX_S)


def to_ms(seconds: float | None) -> int | None:
    """A hint in seconds as the wire's whole milliseconds, rounded up (a
    retry a fraction early would be refused again); None stays None."""
    return None if seconds is None else max(0, math.ceil(seconds * 1000.0 - 1e-6))


def active_retry_s(utterances: Iterable[Active], now: float) -> float:
    """When one of a connection's active utterances is expected to end: its
    receipt plus the audio its text is expected to last (synthesis keeps up
    with real time; a faster model frees the place sooner). Bounded."""
    ends = [u.received + u.text_chars * CODES_PER_OTHER_CHAR / CODES_PER_SECOND
            for u in utterances]
    if not ends:
        return UNKNOWN_END_S
    return clamp_s(min(ends) - now)


def quota_retry_ms(refusal: QuotaRefusal, utterances: Iterable[Active], now: float) -> int | None:
    """The hint of a quota refusal on a connection whose active utterances
    are ``utterances`` (none for a speech request: its connection holds none)."""
    if refusal.code is ErrorCode.TOO_MANY_ACTIVE:  # the token's limit
        return to_ms(active_retry_s(utterances, now))
    return to_ms(refusal.retry_after_s)
