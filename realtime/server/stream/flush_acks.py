"""The ``flushed`` answers one utterance owes (``flush`` with a ``flush_id``).

A flush covers every segment the utterance had made when it came (the text
flushed so far); its answer is due once the utterance's cursor has closed all
of them: after the last frame and the ``segment`` message of the last one,
or at once when none is left to send. Answers go out in the order of the
flushes. When the utterance is cancelled or fails, the owed answers are
dropped: its terminal message ends them (docs/protocol.md, "flushed").

Thread: event loop (the utterance's).
"""

from __future__ import annotations

import collections


class FlushAcks:
    def __init__(self) -> None:
        self._owed: collections.deque[tuple[int, str]] = collections.deque()

    def __bool__(self) -> bool:
        return bool(self._owed)

    def add(self, flush_id: str, segments: int) -> None:
        """A flush covering the first ``segments`` segments."""
        self._owed.append((segments, flush_id))

    def due(self, closed: int) -> list[str]:
        """The flush ids answered now that ``closed`` segments are out, in order."""
        out: list[str] = []
        while self._owed and self._owed[0][0] <= closed:
            out.append(self._owed.popleft()[1])
        return out
