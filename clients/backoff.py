"""Bounded backoff that honours the server's retry hints.

A refusal caused by load (`overloaded`, `too_many_active`, the text rate limits) may
carry `retry_after_ms`: the earliest time the same request is worth retrying on that
server. `Backoff` turns such a refusal and the attempt number into a wait: the hint
when the server gave one, else an exponential step from `base_s`; stretched by a random
factor in [1, 1 + jitter] so that clients refused together do not come back together;
never above `max_delay_s`. It gives up (returns None) after `max_attempts` attempts, or
when the waits would add up to more than `max_total_s`, or for an error that retrying
does not cure. A voice agent keeps the totals short: a second of silence is worse
than trying another replica.

`speak_admitted` speaks and waits for `started`, retrying refusals as the backoff says.

    utt = await speak_admitted(client, "Hello there.", backoff=Backoff(max_total_s=2.0))
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from clients.errors import TTSError
from protocol import ErrorCode

if TYPE_CHECKING:
    from clients.client import RealtimeClient
    from clients.utterance import Utterance

log = logging.getLogger(__name__)

# Refusals that say "not now": retrying later may succeed.
RETRYABLE = frozenset({str(ErrorCode.OVERLOADED), str(ErrorCode.TOO_MANY_ACTIVE)})


@dataclass(frozen=True)
class Backoff:
    """How long to wait before retrying a refused request, and when to stop."""

    max_attempts: int = 4  # attempts in all, the first one included
    base_s: float = 0.1  # first wait when the server gave no hint; doubles each time
    max_delay_s: float = 5.0
    max_total_s: float = 10.0
    jitter: float = 0.2

    def delay(self, error: BaseException, attempt: int, waited_s: float = 0.0,
              rng: random.Random | None = None) -> float | None:
        """Seconds to wait after attempt number ``attempt`` (1 for the first)
        failed with ``error``, having waited ``waited_s`` so far; None: give up."""
        if not retryable(error) or attempt >= self.max_attempts:
            return None
        hint: int | None = getattr(error, "retry_after_ms", None)
        wait = hint / 1000.0 if hint is not None else self.base_s * 2.0 ** (attempt - 1)
        wait *= 1.0 + self.jitter * (rng or random).random()
        wait = min(wait, self.max_delay_s)
        if waited_s + wait > self.max_total_s:
            return None
        return wait


def retryable(error: BaseException) -> bool:
    """A refusal that may succeed later (load), not one that never will."""
    return isinstance(error, TTSError) and error.code in RETRYABLE


async def speak_admitted(client: RealtimeClient, text: str, *, backoff: Backoff | None = None,
                         rng: random.Random | None = None,
                         sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
                         **speak_args: Any) -> Utterance:
    """``client.speak(text, **speak_args)`` and wait for ``started``; when refused
    for load, wait as ``backoff`` says (the server's hint first) and speak again.
    Returns the started utterance; raises the last refusal when the backoff gives
    up, and any other error at once."""
    backoff = backoff or Backoff()
    waited = 0.0
    attempt = 0
    while True:
        attempt += 1
        utt = await client.speak(text, **speak_args)
        try:
            await utt.started()
            return utt
        except TTSError as exc:
            wait = backoff.delay(exc, attempt, waited, rng)
            if wait is None:
                raise
            log.info("speak refused (%s); retrying in %.0f ms", exc.code, 1000 * wait)
            waited += wait
            await sleep(wait)


__all__ = ["RETRYABLE", "Backoff", "retryable", "speak_admitted"]
