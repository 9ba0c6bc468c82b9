"""The word timings, as the client hands them out and integrations consume them.

`Words` (word timings of one segment, `speak(timestamps=True)`), `Word` (one word: the
protocol's `WordTiming`) and `Flushed` (the answer to `flush(flush_id=...)`) come in the
utterance's item stream beside `AudioChunk` and `protocol.Segment`; they are the
`protocol` package's own messages (protocol/words.py). This module adds what clients
do with them: which words a listener has heard by some moment (`words_started_before`),
the caller's word a spoken word came from (`caller_word`), and `WordCursor`, which
hands words on as the audio in which they start goes out.
"""

from __future__ import annotations

from protocol.words import Flushed, Pong, Words, WordStart
from protocol.words import WordTiming as Word


def caller_word(word: Word | WordStart) -> str:
    """The word of the caller's text `word` came from ("$20" for "twenty"): what a
    transcript of the caller's text shows."""
    return word.original if word.original is not None else word.word


def words_started_before(words: list[Word], audio_ms: float) -> list[Word]:
    """The words that had started by `audio_ms` of the utterance's audio: what a
    listener interrupted at that moment has heard (at most the last one in part)."""
    return [w for w in words if w.start_ms < audio_ms]


class WordCursor:
    """Hands an utterance's timed words on as its audio goes out, for integrations that
    attach words to the audio frame in which they start (Pipecat, LiveKit).

    `add(words, pending)` as `Words` arrive; before handing on an audio frame that ends
    at `until_ms` of the utterance's audio, `take(until_ms)` returns the words that
    start before it, in order. With `pending` (token chunking: words begun, their end
    not known yet) a word comes back as soon as its start is due, as a `WordStart`,
    and not again when it comes with its end; without it, words come once committed
    (at most the word in progress late). The words one input word became ("$20" ->
    "twenty", "dollars") come back once, as the first of them: a transcript of the
    caller's text wants "$20" at the moment "twenty" starts.
    """

    def __init__(self) -> None:
        self._ready: list[Word] = []
        self._pending: tuple[WordStart, ...] = ()
        self._ahead = 0  # pending words already handed on, not yet committed
        self._last_original: str | None = None

    def add(self, words: tuple[Word, ...] | list[Word], pending: tuple[WordStart, ...] = ()) -> None:
        handed = min(self._ahead, len(words))  # pending words come again first
        self._ahead -= handed
        self._ready.extend(words[handed:])
        self._pending = pending

    def take(self, until_ms: float) -> list[Word | WordStart]:
        ready = 0
        while ready < len(self._ready) and self._ready[ready].start_ms < until_ms:
            ready += 1
        taken: list[Word | WordStart] = [*self._ready[:ready]]
        self._ready = self._ready[ready:]
        while (not self._ready and self._ahead < len(self._pending)
               and self._pending[self._ahead].start_ms < until_ms):
            taken.append(self._pending[self._ahead])
            self._ahead += 1
        out: list[Word | WordStart] = []
        for word in taken:
            if word.original is not None and word.original == self._last_original:
                continue
            self._last_original = word.original
            out.append(word)
        return out


__all__ = ["Flushed", "Pong", "Word", "WordCursor", "WordStart", "Words", "caller_word",
           "words_started_before"]
