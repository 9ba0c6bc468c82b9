"""An utterance's text on its way to segments: split, then read off the loop.

``SentenceIntake`` holds one utterance's ``SentenceSplitter`` and hands each
batch of complete sentences to a ``TextReader``, which turns every sentence
into ``Spoken`` (the text exactly as the model reads it, "" when nothing
speakable is left) and delivers the batch back, in order, as ``Reading``s.
The language of the previous sentence is the hint for the next one, so a
sentence with letters of neither script ("12:00.") is read in its
neighbours' language.

Readers:

- ``TextThread``: the server's one text thread (a single-worker executor).
  Normalization runs there, never on the event loop and not on the model
  thread; ``start`` builds and warms the reader before the server is ready.
  Batches are read in submission order and delivered on the event loop.
- ``InlineText``: reads on the caller's thread, delivering before it returns
  (the CLI's ``normalize`` command and tests without a loop).

``PlainReader`` reads text as written (the tone runner's server: no model
reads it); the model's reader is ``realtime.engine.text.spoken.TextNormalizer``.
A reader that raises for a sentence makes it unspoken, never an exception
on the loop or the model thread. A sentence of sound tags alone
(``[laugh]``) is given to the model as it is: it makes the sound.

Thread: ``SentenceIntake`` and the readers' ``read`` on the event loop (or the
caller's thread for ``InlineText``); a reader's ``spoken`` on its thread.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Protocol

import numpy as np

from realtime.engine.api import RequestError, SegmentRequest
from realtime.speech.script import has_words
from realtime.speech.sentences import SentenceSplitter

log = logging.getLogger(__name__)

# A sentence of ChatTTS's sound tags alone ("[laugh]" after "Ha! " at the
# text's end): the model makes the sound; no normalizer reads it as words.
_SOUND_TAGS = re.compile(r"(?:\s*\[(?:laugh|uv_break|v_break|lbreak|break_\d|laugh_\d|oral_\d)\])+\s*")


class SpokenText(Protocol):
    """A sentence as read (``realtime.engine.text.spoken.Spoken``, which imports
    torch with upstream's normalizer: the server imports it only to read)."""

    @property
    def text(self) -> str: ...  # exactly what the model reads; "" when nothing
    @property
    def lang(self) -> str: ...  # "en" | "zh"
    @property
    def pieces(self) -> tuple[tuple[str, str], ...]: ...  # (original, spoken) in order
    @property
    def unvoiced(self) -> tuple[str, ...]: ...  # runs the model cannot say, in a spoken sentence


class SentenceReader(Protocol):
    """What reads a sentence (``TextNormalizer``'s interface). Not thread-safe."""

    def spoken(self, sentence: str, lang: str | None = None) -> SpokenText: ...
    def warm_up(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Plain:
    """A ``SpokenText`` made here: a sentence read as written, or not read."""

    text: str
    lang: str
    pieces: tuple[tuple[str, str], ...]
    unvoiced: tuple[str, ...] = ()


class PlainReader:
    """Reads a sentence as written: for the tone runner, whose "model" reads
    anything; a sentence without a letter or digit says nothing."""

    def spoken(self, sentence: str, lang: str | None = None) -> SpokenText:
        text = sentence.strip() if has_words(sentence) else ""
        return Plain(text, lang or "en", ((sentence, text),))

    def warm_up(self) -> None:
        pass


@dataclass(frozen=True, slots=True)
class Reading:
    """A sentence of the client's text (``text``) and how it is read."""

    text: str
    spoken: SpokenText

    @property
    def unspoken(self) -> bool:
        return not self.spoken.text


def read_sentences(reader: SentenceReader, sentences: Sequence[str],
                   lang: str | None) -> tuple[list[Reading], str | None]:
    """Each sentence as read, in order, the previous one's language the hint
    of the next; returns the readings and the last language. Never raises:
    a sentence the reader cannot read is unspoken (and logged)."""
    readings = []
    for sentence in sentences:
        spoken: SpokenText
        try:
            spoken = reader.spoken(sentence, lang)
        except RequestError as exc:
            log.info("a sentence of %d characters is not read: %s", len(sentence), exc)
            spoken = Plain("", lang or "en", ((sentence, ""),))
        except Exception:  # a reader bug must not cost the whole utterance
            log.exception("the text front end failed on a sentence of %d characters", len(sentence))
            spoken = Plain("", lang or "en", ((sentence, ""),))
        if not spoken.text and _SOUND_TAGS.fullmatch(sentence):
            tags = " ".join(sentence.split())
            spoken = Plain(tags, spoken.lang, ((sentence, tags),))
        lang = spoken.lang
        readings.append(Reading(sentence, spoken))
    return readings, lang


class SegmentStatus(enum.Enum):
    SUBMITTED = "submitted"
    EMPTY = "empty"  # the model made nothing of it
    FINISHED = "finished"


@dataclass
class SegmentEntry:
    """A segment of an utterance, as the utterance keeps it (event loop)."""

    reading: Reading  # the client's sentence and how it is read
    order: int  # the sentence's place in the input (unspoken ones count too)
    job_id: int
    status: SegmentStatus = SegmentStatus.SUBMITTED
    buffered: list[np.ndarray] = field(default_factory=list)  # audio before its turn
    refined: str | None = None  # the text after a refine pass: what the model read

    @property
    def spoken(self) -> str:
        """``segment.spoken``: the text as the model read it."""
        return self.reading.spoken.text if self.refined is None else self.refined


ReadJob = Callable[[SentenceReader], list[Reading]]
Deliver = Callable[[list[Reading]], None]
Owe = Callable[[int], None]  # given the utterance's segment count
OnRead = Callable[[list[tuple[int, Reading]], Owe | None], None]


class TextReader(Protocol):
    def read(self, job: ReadJob, deliver: Deliver) -> None:
        """Run ``job`` with the reader, then ``deliver`` its result; jobs run,
        and their results are delivered, in the order they were given."""


class InlineText:
    """Reads on the caller's thread; ``deliver`` runs before ``read`` returns."""

    def __init__(self, reader: SentenceReader | None = None) -> None:
        self.reader = reader or PlainReader()

    def read(self, job: ReadJob, deliver: Deliver) -> None:
        deliver(job(self.reader))


class TextThread:
    """The server's text thread: one worker, so one reader and FIFO order.
    ``make_reader`` runs on that thread (``start``), as does every job."""

    def __init__(self, make_reader: Callable[[], SentenceReader]) -> None:
        self._make_reader = make_reader
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="text")
        self._reader: SentenceReader | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Build the reader and warm it up (seconds for the model's), on the thread."""
        self._loop = asyncio.get_running_loop()
        await self._loop.run_in_executor(self._pool, self._build)

    def _build(self) -> None:
        reader = self._make_reader()
        reader.warm_up()
        self._reader = reader
        log.info("text thread ready: %s", type(reader).__name__)

    def read(self, job: ReadJob, deliver: Deliver) -> None:
        assert self._loop is not None and self._reader is not None, "start() first"
        reader, loop = self._reader, self._loop

        def run() -> None:
            readings = job(reader)
            try:
                loop.call_soon_threadsafe(deliver, readings)
            except RuntimeError:  # the loop closed meanwhile: nobody waits for it
                log.debug("text thread: a reading outlived the event loop")

        self._pool.submit(run)

    def close(self) -> None:
        """Stop taking work; queued batches are dropped (their utterances ended)."""
        self._pool.shutdown(wait=False, cancel_futures=True)


class SentenceIntake:
    """One utterance's text: ``take`` and ``flush`` split it; complete
    sentences are read by ``reader`` and each batch comes back through
    ``on_read`` in order, as (sentence number, reading) for the sentences
    that say something (possibly none), with the ``owe`` of the ``flush``
    that sent it, if any; the others are kept for ``unspoken``. ``reading``
    counts batches not yet back. ``request`` makes the segment request of a
    reading: ``base`` (the speak's voice and settings) with its text."""

    def __init__(self, base: SegmentRequest, reader: TextReader, on_read: OnRead,
                 max_sentence_chars: int) -> None:
        self.splitter = SentenceSplitter(max_chars=max_sentence_chars)
        self.reader = reader
        self.reading = 0
        self._on_read = on_read
        self._count = 0  # sentences delivered
        self._unspoken: list[tuple[int, str]] = []
        self._lang: str | None = None  # the last sentence's language: the reader's thread only
        self._closed = False
        self.base = base

    @property
    def pending(self) -> bool:
        """Text taken but not yet delivered as readings."""
        return bool(self.reading or self.splitter.pending)

    def take(self, text: str, final: bool) -> None:
        sentences = self.splitter.feed(text)
        if final:
            sentences += self.splitter.flush()
        self._read(sentences)

    def flush(self, owe: Owe | None = None) -> None:
        """Release the buffered text; ``owe`` comes back with its batch (even
        an empty one), after every sentence taken before it."""
        self._read(self.splitter.flush(), owe)

    def close(self) -> None:
        """The utterance ended: readings still to come are dropped."""
        self._closed = True

    def not_spoken(self, number: int, text: str) -> None:
        """Sentence ``number`` was read but the model made nothing of it."""
        self._unspoken.append((number, text))

    @property
    def unspoken(self) -> tuple[str, ...]:
        """The client's sentences not spoken so far, and the runs of spoken
        sentences the model cannot say, in input order."""
        return tuple(text for _, text in sorted(self._unspoken, key=lambda entry: entry[0]))

    def request(self, reading: Reading) -> SegmentRequest:
        spoken = reading.spoken
        return replace(self.base, text=spoken.text, lang=spoken.lang, normalized=True)

    def _read(self, sentences: list[str], owe: Owe | None = None) -> None:
        if (not sentences and owe is None) or self._closed:
            return
        self.reading += 1
        self.reader.read(lambda reader: self._read_batch(reader, sentences),
                         lambda readings: self._deliver(readings, owe))

    def _read_batch(self, reader: SentenceReader, sentences: list[str]) -> list[Reading]:
        readings, self._lang = read_sentences(reader, sentences, self._lang)
        return readings

    def _deliver(self, readings: list[Reading], owe: Owe | None) -> None:
        self.reading -= 1
        if self._closed:
            return
        said = []
        for reading in readings:
            number, self._count = self._count, self._count + 1
            if reading.unspoken:
                self._unspoken.append((number, reading.text))
            else:
                self._unspoken.extend((number, run) for run in reading.spoken.unvoiced)
                said.append((number, reading))
        self._on_read(said, owe)

