"""The events of protocol v1's second set of additions, as the client hands them out.

`Words` (word timings of one segment, `speak(timestamps=True)`), `Flushed` (the answer to
`flush(flush_id=...)`) and `Pong` (the answer to a `ping`). They come in the utterance's
item stream beside `AudioChunk` and `protocol.Segment` (`Pong` goes to the connection).

`decode_event` reads one server message the `protocol` package does not know (yet): a
client built against an older `protocol` still gets these events. Messages it cannot
read are reported as None, never raised: an unreadable optional event must not stop the
utterance's audio.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Word:
    """One spoken word: `start_ms`/`end_ms` count from the utterance's first audio
    sample (the clock of `Segment.offset_ms`). `word` is the word as the model read it;
    `original` the word of the caller's text it came from, when the two differ
    ("$20" -> "twenty", "dollars"), else None."""

    word: str
    start_ms: float
    end_ms: float
    original: str | None = None

    @property
    def text(self) -> str:
        """The caller's word: what a transcript of the caller's text shows."""
        return self.original if self.original is not None else self.word


@dataclass(frozen=True, slots=True)
class Words:
    """The timings of segment `segment`'s words; `method` is "estimated" (the segment's
    audio divided over its words by weight) or "aligned" (from the model)."""

    TYPE = "words"

    id: str
    segment: int
    words: tuple[Word, ...]
    method: str


@dataclass(frozen=True, slots=True)
class Flushed:
    """All audio of the text flushed up to `flush_id` has been sent."""

    TYPE = "flushed"

    id: str
    flush_id: str | None


@dataclass(frozen=True, slots=True)
class Pong:
    """The server's answer to a `ping`."""

    TYPE = "pong"


def _ms(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"not a time in ms: {value!r}")
    return float(value)


def _word(obj: object) -> Word:
    if not isinstance(obj, dict) or not isinstance(obj.get("word"), str):
        raise ValueError(f"not a word: {obj!r}")
    original = obj.get("original")
    return Word(obj["word"], _ms(obj.get("start_ms")), _ms(obj.get("end_ms")),
                original if isinstance(original, str) else None)


def decode_event(obj: dict[str, Any]) -> Words | Flushed | Pong | None:
    """The event of one decoded JSON message, or None when it is none of these (or
    malformed: logged)."""
    kind = obj.get("type")
    try:
        if kind == Pong.TYPE:
            return Pong()
        if kind == Flushed.TYPE and isinstance(obj.get("id"), str):
            flush_id = obj.get("flush_id")
            return Flushed(obj["id"], flush_id if isinstance(flush_id, str) else None)
        if kind == Words.TYPE and isinstance(obj.get("id"), str):
            segment = obj.get("segment")
            if isinstance(segment, bool) or not isinstance(segment, int) or segment < 0:
                raise ValueError(f"bad segment {segment!r}")
            words = obj.get("words")
            if not isinstance(words, list):
                raise ValueError("words is not a list")
            method = obj.get("method")
            return Words(obj["id"], segment, tuple(_word(w) for w in words),
                         method if isinstance(method, str) else "estimated")
    except ValueError as exc:
        log.warning("server %s message skipped: %s", kind, exc)
        return None
    return None


def words_started_before(words: list[Word], audio_ms: float) -> list[Word]:
    """The words that had started by `audio_ms` of the utterance's audio: what a
    listener interrupted at that moment has heard (at most the last one in part)."""
    return [w for w in words if w.start_ms < audio_ms]


class WordCursor:
    """Hands an utterance's timed words on as its audio goes out, for integrations that
    attach words to the audio frame in which they start (Pipecat, LiveKit).

    `add(words)` as `Words` arrive; before handing on an audio frame that ends at
    `until_ms` of the utterance's audio, `take(until_ms)` returns the words that start
    before it, in order. The words one input word became ("$20" -> "twenty",
    "dollars") come back once, as the first of them: a transcript of the caller's text
    wants "$20" at the moment "twenty" starts.
    """

    def __init__(self) -> None:
        self._pending: list[Word] = []
        self._last_original: str | None = None

    def add(self, words: tuple[Word, ...] | list[Word]) -> None:
        self._pending.extend(words)

    def take(self, until_ms: float) -> list[Word]:
        ready = 0
        while ready < len(self._pending) and self._pending[ready].start_ms < until_ms:
            ready += 1
        taken, self._pending = self._pending[:ready], self._pending[ready:]
        out: list[Word] = []
        for word in taken:
            if word.original is not None and word.original == self._last_original:
                continue
            self._last_original = word.original
            out.append(word)
        return out


__all__ = ["Flushed", "Pong", "Word", "WordCursor", "Words", "decode_event",
           "words_started_before"]
