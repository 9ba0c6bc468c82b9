"""Places held in the interactive lane for streams accepted before their first sentence.

A voice assistant opens its turn with ``speak`` ``final:false`` and streams
the LLM's tokens after it: the utterance is accepted (``started``) before
there is a sentence to queue, and its later segments are never refused for
load. Were such a stream to count only once its first sentence came, a burst
of turns opened together would all be accepted against the same free
capacity and then all be served late. So an accepted empty stream holds a
place: it counts as a stream in capacity admission and in the saturation
report until its first segment is queued (it is then a stream of the books),
its utterance ends, or ``hold_s`` passes (a client that never sends text
holds capacity no longer than that; its text, should it come, is still
served).

Thread: model thread, like the scheduler.
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Iterator

log = logging.getLogger(__name__)

# What a streamed utterance without a sentence is judged by (and expected to
# last at least): about two seconds of speech, a typical first sentence.
NOMINAL_CODES = 94


class StreamReservations:
    """Held places by utterance key, each until a deadline. ``hold_s`` 0
    holds nothing (an empty stream then counts once its first sentence comes)."""

    def __init__(self, hold_s: float) -> None:
        self.hold_s = hold_s
        self._until: dict[Hashable, float] = {}

    def hold(self, key: Hashable, now: float) -> None:
        if self.hold_s > 0:
            self._until[key] = now + self.hold_s

    def release(self, key: Hashable) -> bool:
        """Give ``key``'s place back; whether it held one."""
        return self._until.pop(key, None) is not None

    def count(self, now: float) -> int:
        """Places held now (lapsed ones are dropped here)."""
        until = self._until
        if until and min(until.values()) <= now:
            lapsed = [key for key, end in until.items() if end <= now]
            for key in lapsed:
                del until[key]
            log.info("%d stream reservation(s) lapsed after %.1f s without a sentence",
                     len(lapsed), self.hold_s)
        return len(until)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._until

    def __iter__(self) -> Iterator[Hashable]:
        return iter(list(self._until))
