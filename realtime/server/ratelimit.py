"""Per-connection and per-token limits on what clients may ask of the model.

The protocol's own limits (``max_active`` per connection, ``max_text_chars``
per utterance, ``max_message_bytes``) bound one connection at one moment. A
client can still open many connections with the same token, or keep one
connection busy with a steady stream of text. This module adds the two limits
that close those gaps:

- text characters per minute, per connection and per token: a character
  bucket that holds at most one minute's allowance and refills continuously;
- active utterances per token, across all of that token's connections.

``QuotaBook`` is the server-wide registry; each connection opens one
``ConnectionQuota`` and asks it before accepting a ``speak`` or an
``append``. A refusal is a ``QuotaRefusal`` carrying the protocol error code
to send: ``too_many_active`` for the active-utterance limit and
``overloaded`` for the text rate (the client should back off and retry).

Tokens are never stored: a principal is a short SHA-256 digest of the token
(``realtime.server.http.auth.principal_of``), so a quota object printed or logged reveals
nothing.

Thread: event loop (no locking; the server touches quotas from one thread).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from protocol import ErrorCode

log = logging.getLogger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class QuotaLimits:
    """Zero disables a limit."""

    chars_per_minute: int = 30_000  # per connection
    token_chars_per_minute: int = 120_000  # per token, all its connections together
    token_max_active: int = 64  # active utterances per token


@dataclass(frozen=True)
class QuotaRefusal:
    """``retry_after_s``: when the same request would fit (None: it never
    will, or the limiter cannot tell; the session then estimates)."""

    code: ErrorCode
    message: str
    retry_after_s: float | None = None


class TextRateLimiter:
    """A bucket of text characters: ``chars_per_minute`` refilled per minute.

    The bucket starts full and holds at most one minute's allowance, so a
    client may spend a minute's budget at once and then ``chars_per_minute``
    per minute on average. ``chars_per_minute == 0`` means unlimited.
    """

    def __init__(self, chars_per_minute: int, clock: Clock = time.monotonic) -> None:
        if chars_per_minute < 0:
            raise ValueError("chars_per_minute must be >= 0")
        self.capacity = float(chars_per_minute)
        self._rate = chars_per_minute / 60.0  # characters per second
        self._clock = clock
        self._level = self.capacity
        self._at = clock()

    @property
    def unlimited(self) -> bool:
        return self.capacity == 0

    @property
    def available(self) -> float:
        """Characters that could be taken now."""
        if self.unlimited:
            return float("inf")
        self._refill()
        return self._level

    def allows(self, chars: int) -> bool:
        """Whether ``chars`` could be taken now (takes nothing)."""
        return self.unlimited or chars <= self.available

    def try_take(self, chars: int) -> bool:
        """Take ``chars`` if the bucket holds them; False (and take nothing) if not."""
        if not self.allows(chars):
            return False
        if not self.unlimited:
            self._level -= chars
        return True

    def retry_after(self, chars: int) -> float:
        """Seconds until ``chars`` could be taken (inf if it never fits)."""
        if self.unlimited:
            return 0.0
        if chars > self.capacity:
            return float("inf")
        missing = chars - self.available
        return max(0.0, missing / self._rate)

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._at)
        self._at = now
        self._level = min(self.capacity, self._level + elapsed * self._rate)


class _TokenQuota:
    """What all connections of one token share."""

    def __init__(self, limits: QuotaLimits, clock: Clock) -> None:
        self.text = TextRateLimiter(limits.token_chars_per_minute, clock)
        self.active = 0
        self.connections = 0


class ConnectionQuota:
    """One connection's view of its limits; see ``QuotaBook.open``."""

    def __init__(self, book: QuotaBook, principal: str | None, token: _TokenQuota | None) -> None:
        self._book = book
        self.principal = principal
        self._token = token
        self.text = TextRateLimiter(book.limits.chars_per_minute, book.clock)
        self.active = 0  # utterances this connection has open through this quota
        self._closed = False

    def admit_speak(self, chars: int) -> QuotaRefusal | None:
        """Before accepting a ``speak`` of ``chars`` characters.

        On success the utterance counts as active (until ``utterance_ended``)
        and its characters are spent; on refusal nothing changes.
        """
        limit = self._book.limits.token_max_active
        if self._token is not None and limit and self._token.active >= limit:
            return QuotaRefusal(ErrorCode.TOO_MANY_ACTIVE,
                                f"at most {limit} active utterances per token")
        refusal = self.take_text(chars)
        if refusal is not None:
            return refusal
        self.active += 1
        if self._token is not None:
            self._token.active += 1
        return None

    def take_text(self, chars: int) -> QuotaRefusal | None:
        """Spend ``chars`` characters of text (an ``append``), or refuse."""
        buckets = [self.text] + ([self._token.text] if self._token is not None else [])
        for bucket in buckets:
            if not bucket.allows(chars):
                wait = bucket.retry_after(chars)
                scope = "connection" if bucket is self.text else "token"
                never = wait == float("inf")
                after = "" if never else f"; retry in {wait:.1f} s"
                return QuotaRefusal(
                    ErrorCode.OVERLOADED,
                    f"text rate limit of {int(bucket.capacity)} characters per minute "
                    f"per {scope}{after}", None if never else wait)
        for bucket in buckets:
            bucket.try_take(chars)
        return None

    def utterance_ended(self) -> None:
        """An utterance admitted by ``admit_speak`` ended (any outcome)."""
        if self.active <= 0:
            log.warning("utterance_ended without a matching admit_speak")
            return
        self.active -= 1
        if self._token is not None:
            self._token.active -= 1

    def close(self) -> None:
        """The connection is gone: release whatever it still holds."""
        if self._closed:
            return
        self._closed = True
        while self.active:
            self.utterance_ended()
        self._book._closed(self.principal)


class QuotaBook:
    """Server-wide quotas, keyed by principal (see ``realtime.server.http.auth.principal_of``)."""

    def __init__(self, limits: QuotaLimits | None = None, clock: Clock = time.monotonic) -> None:
        self.limits = limits or QuotaLimits()
        self.clock = clock
        self._tokens: dict[str, _TokenQuota] = {}

    def open(self, principal: str | None) -> ConnectionQuota:
        """A new connection of ``principal`` (None: no token, connection limits only)."""
        token = None
        if principal is not None:
            token = self._tokens.get(principal)
            if token is None:
                token = self._tokens[principal] = _TokenQuota(self.limits, self.clock)
            token.connections += 1
        return ConnectionQuota(self, principal, token)

    def active(self, principal: str) -> int:
        token = self._tokens.get(principal)
        return token.active if token is not None else 0

    @property
    def principals(self) -> int:
        """Tokens with at least one open connection (bounded memory check)."""
        return len(self._tokens)

    def _closed(self, principal: str | None) -> None:
        if principal is None:
            return
        token = self._tokens.get(principal)
        if token is None:
            return
        token.connections -= 1
        # Forget a token once it is idle, but not while its text budget is
        # still recovering, or reconnecting would reset the rate limit.
        if token.connections <= 0 and token.active <= 0 and (
                token.text.unlimited or token.text.available >= token.text.capacity):
            del self._tokens[principal]
