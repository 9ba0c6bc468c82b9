"""Sentence segmentation of Chinese, English and mixed text, for streamed input.

An utterance's text arrives in arbitrary pieces (an LLM's token stream may
break inside a word or inside "..." or "?!"). ``SentenceSplitter`` buffers it
and releases each sentence as soon as its end is certain, so synthesis of the
first sentence starts while the rest is still being written.

Rules, in order of the scan:

* A newline ends a sentence.
* A terminator run is a terminator (``. ! ? 。 ！ ？ ； … ｡``) followed by any
  further terminators and closing quotes/brackets; the sentence ends after the
  whole run, so closers stay with their sentence.
* A run holding a Chinese terminator ends the sentence whatever follows
  (no space needed). Otherwise the character after the run must be whitespace
  or CJK: ``3.14``, ``e.g.,`` and ``example.com`` are not sentence ends.
* Before whitespace, ``!``/``?`` end the sentence; a single ``.`` does unless
  the word before it is a title or Latin abbreviation (``Dr.``, ``e.g.``,
  ``vs.``, a capitalised ``Sen.`` or ``Lt.``); after ``etc.``, ``No.``,
  ``Rd.``, ``est.``, acronyms (``U.S.``, ``a.m.``, ``Ph.D.``) and ellipses
  the sentence continues when the next word starts lowercase, with a digit
  or with "§" ("26 U.S.C. § 501"), and after a street's kind before a
  compass point ("Ave. NW");
  after ``a.m.``/``p.m.`` it also continues in Chinese ("10:30 a.m. 我们见"
  is one mixed sentence).
* A list marker ("1.", "2)", "a.", "一、", "（1）") is read with its item: the
  dot of a marker that starts a sentence (or follows a colon) ends nothing.
* Control tags (``[laugh]``, ``[uv_break]``) glued to a terminator belong to
  its run ("Ha![laugh]" ends after the tag). A sentence shorter than
  ``min_chars``, or holding nothing but a list marker and tags, joins the
  next one.
* A sentence longer than ``max_chars`` is cut at its last clause punctuation
  (``，,、;：:—``), else at whitespace, else between two characters that are not
  both Latin letters or digits, else hard at ``max_chars``.

Every decision depends only on text already seen plus a bounded look-ahead;
when the look-ahead is missing the splitter waits (until more text or
``flush``). So any chunking of a text yields the same sentences as the whole
text, and the sentences joined equal the input up to whitespace at their
boundaries.
"""

from __future__ import annotations

import logging
import re

from realtime.speech.script import is_cjk
from realtime.speech.units import TITLES

log = logging.getLogger(__name__)

DEFAULT_MAX_CHARS = 150
DEFAULT_MIN_CHARS = 2

# Chinese / full-width terminators: the sentence ends after them, no space needed.
_CJK_TERMINATORS = frozenset("。！？；｡")
_TERMINATORS = frozenset(".!?…") | _CJK_TERMINATORS
_CLOSERS = frozenset("\"')]}”’」』）】》〉〕］｝»")
_RUN_CHARS = _TERMINATORS | _CLOSERS
_NEWLINES = frozenset("\n\r\u2028\u2029")
_CLAUSE = frozenset("，,、;；：:—–")
# ASCII clause marks inside numbers and words ("3,000", "10:30") are no cut points.
_ASCII_CLAUSE = frozenset(",;:")

# Titles and Latin abbreviations that never end a sentence ("Dr. Smith").
_NEVER_FINAL = frozenset({"dr", "mr", "mrs", "ms", "prof", "st", "vs", "e.g", "i.e", "a.k.a", "cf"})
_WEEKDAYS = frozenset({"mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri", "sat", "sun"})
# Abbreviations that end a sentence unless the next word is lowercase or a digit.
_MAYBE_FINAL = frozenset({"etc", "no", "nos", "jr", "sr", "inc", "ltd", "co", "corp", "approx",
                          "fig", "figs", "vol", "vols", "p", "pp", "ch", "chap", "eq", "eqs",
                          "sec", "secs", "ext", "dept", "ft", "mt", "jan", "feb", "mar", "apr", "jun",
                          "jul", "aug", "sep", "sept", "oct", "nov", "dec",
                          # addresses: "12 Oak Rd. in Leeds", "Apt. 4"
                          "ave", "blvd", "rd", "ln", "ct", "hwy", "pkwy", "apt", "ste", "bldg", "rm", "fl",
                          "pl", "cir", "ter", "n", "nn",  # "Mark's Pl. now", a footnote's "n. 4"
                          "rte", "c", "ca",  # "Rte. 1", "c. 1200 BCE"
                          "prop", "art", "para", "bk", "mi",  # "Prop. 47", "Art. 5", "3 mi. to"
                          # counts and measures: "est. cost", "2 hrs. later", "et al. found"
                          "est", "min", "mins", "max", "hr", "hrs", "wk", "wks", "mo", "mos", "yr", "yrs",
                          "lb", "lbs", "oz", "pt", "pts", "tsp", "tbsp", "al", "avg", "misc",
                          "reb", "ast", "stl", "blk",  # "9 ast. in 41 min."
                          "in", "yd", "yds", "gal", "qt", "qty", "rs", "incl", "excl", "govt", "sq", "pop",
                          "assoc", "evid",  # "Fed. R. Evid. 403"
                          # weekdays: "Thu. 12/12"
                          *_WEEKDAYS})
_STREET_KINDS = frozenset({"st", "ave", "blvd", "rd", "ln", "ct", "hwy", "pkwy", "dr"})
_COMPASS = re.compile(r"\s+(?:[NS][EW]?|[EW])(?=[\s.,;:!?]|$)")
# Spaces, then at most a word that reaches the buffer's end: it may still grow.
_UNFINISHED_WORD = re.compile(r"\s*+\S*+")
_TIME_ZONE = re.compile(r"\s+(?:[ECMP][SD]?T|UTC|GMT|CES?T|BST|IST|JST|AES?T|AEDT|HST|AKS?T)"
                        r"(?=[\s.,;:!?)/]|$)")
_MONTH = re.compile(r"\s+(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b")  # not "May I"
# A lone capital's dot between names: "Franklin D. Roosevelt", "J. K. Rowling".
_NAME_BEFORE = re.compile(r"(?:\b[A-Z][a-z]+|\b[A-Z]\.)\s+$")
_NAME_NEXT = re.compile(r"\s+[A-Z](?:[a-z]*|\.)")  # "R" may become "Roosevelt": waited for
_INITIAL_NEXT = re.compile(r"\s+[A-Z]\.")
_HOUSE_COMPASS = re.compile(r"(?<![-\w.])\d{2,5}\s[NSEW]$")  # "100 N. Main St.", not "I-95 S. Then"
_OPERATOR_NEXT = re.compile(r"\s+[=×*+/]")
_NUMBERING = frozenset({"vol", "vols", "ch", "chap", "pt", "bk", "no", "fig", "art", "sec"})
_NUMBERED_BEFORE = re.compile(r"\b(?i:model|part|serial|item|style|catalog|order|invoice|account|ref)\s+$")
_ROMAN_NEXT = re.compile(r"\s+[IVXLC]{1,7}\b")
# A court's rules, "Fed. R. Civ. P. 12(b)(6)": no dot inside the name ends the sentence. One
# word of look-ahead each, as streamed text allows ("the Fed. R. Jones" is read as one).
_COURT_NEXT = {word: re.compile(after) for word, after in (
    ("Fed", r"\s+R\."), ("R", r"\s+(?:Civ|Crim|App|Bankr|Evid)\."), ("Civ", r"\s+P\."),
    ("Crim", r"\s+P\."), ("App", r"\s+P\."), ("Bankr", r"\s+P\."))}
_HALF_DAY = frozenset({"a.m", "p.m"})  # before Chinese, their dot ends no sentence
# "U.S.", "a.m.", and degrees whose parts have two letters: "Ph.D.", "B.Sc.".
_ACRONYM = re.compile(r"(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,3}")
_WORD_BEFORE = re.compile(r"[A-Za-z][A-Za-z.]*$")
_WORD_REACH = 40  # the abbreviations and acronyms looked up are far shorter
# What follows a country's initials inside a sentence: another acronym or an institution
# ("the U.S. GDP", "U.S. Army"); one capital at the end of the text is waited for.
_AFTER_COUNTRY = re.compile(r"\s+(?:[A-Z]{2,5}\b|[A-Z]\Z|(?:Army|Navy|Air|Senate|House|Congress|Government"
                            r"|Supreme|Open|Postal|Embassy|Census|Treasury|Marines?|Coast|Dollar|Constitution"
                            r"|Capitol|Department|Court|Forces|Attorney|Bureau|Secretary|Parliament|Labour"
                            r"|Conservatives|Commission|Council|Security|Olympic|Steel|Bank)\b)")

# A list marker's label: "1", "12", "a", "B", "十二" (before "." or ")" or "、").
_LABEL = r"(?:\d{1,3}|[A-Za-z]|[一二三四五六七八九十]{1,3})"
# The text before a marker's dot: the label, alone or after a colon.
_MARKER_REACH = 16  # a label and the colon or start before it
_MARKER_BEFORE_DOT = re.compile(rf"(?:^\s*|:\s+|：\s*){_LABEL}$")  # not "12:00."
_MARKER = rf"(?:{_LABEL}[.)．、]|[(（]{_LABEL}[)）]|[\u2460-\u2473])"
# ChatTTS's control tags, as the runtime's front end strips them.
_TAG = re.compile(r"\[\w+\]")
_PARTIAL_TAG = re.compile(r"\[\w*\Z")
_WAITING = -1  # _next_end: a decision waits for look-ahead (not "no end within max_chars")
# A sentence that says nothing by itself: a list marker and/or tags.
_LEAD_ONLY = re.compile(rf"(?:{_MARKER})?(?:\s*\[\w+\])*")
_LEAD = re.compile(rf"{_LEAD_ONLY.pattern}\s*")  # ... and the space after it


def _is_latin_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


class _Wait(Exception):
    """The look-ahead needed for a decision has not arrived yet."""


class SentenceSplitter:
    """Incremental sentence segmentation of one utterance's text.

    ``feed`` appends text and returns the sentences now complete; ``flush``
    releases everything buffered (the input ended, or the client asked to
    synthesize what it has). Returned sentences are stripped, never empty and
    never longer than ``max_chars``. Not thread-safe: one owner.
    """

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS, min_chars: int = DEFAULT_MIN_CHARS):
        if max_chars < 1:
            raise ValueError(f"max_chars must be >= 1, got {max_chars}")
        if not 0 <= min_chars <= max_chars:
            raise ValueError(f"min_chars must be in [0, max_chars], got {min_chars}")
        self.max_chars = max_chars
        self.min_chars = min_chars
        self._buf = ""

    @property
    def pending(self) -> str:
        """Text buffered and not yet released (leading whitespace dropped)."""
        return self._buf

    def feed(self, text: str) -> list[str]:
        """Append ``text``; return the sentences whose end is now certain."""
        self._buf += text
        return self._drain(final=False)

    def flush(self) -> list[str]:  # the buffer's end is the text's end: release it all
        return self._drain(final=True)

    def _drain(self, final: bool) -> list[str]:
        out: list[str] = []
        while True:
            self._buf = self._buf.lstrip()
            if not self._buf:
                return out
            end = self._next_end(final)
            if end == _WAITING and not final:
                return out  # an end inside the window waits for text to come: so does its cut
            if end is None or end == _WAITING:
                if len(self._buf.rstrip()) > self.max_chars:  # no end in the window: cut it
                    end = self._cut_point()
                elif final:
                    end = len(self._buf)
                else:
                    return out
            elif len(self._buf[:end].strip()) > self.max_chars:
                end = self._cut_point()
            out.append(self._buf[:end].strip())
            self._buf = self._buf[end:]

    def _next_end(self, final: bool) -> int | None:
        """Index just past the first certain sentence end in the buffer, _WAITING while
        one waits for look-ahead, or None. Reads no further than max_chars: an end
        past it is cut there anyway (``_drain``): one pass, not one a cut."""
        buf = self._buf
        n = min(len(buf), self.max_chars + 1)
        i = 0
        while i < n:
            ch = buf[i]
            if ch in _NEWLINES:
                i += 1
                if self._long_enough(i):
                    return i
                continue
            if ch not in _TERMINATORS:
                i += 1
                continue
            try:
                j = self._run_end(i, final)
                if self._run_ends_sentence(i, j, final) and self._long_enough(j):
                    return j
            except _Wait:
                return _WAITING
            i = j
        return None

    def _run_end(self, i: int, final: bool) -> int:
        """End of the terminator run starting at buf[i]: further terminators,
        closers and control tags glued to it ("Ha![laugh]" keeps its laugh).
        Raises _Wait on a tag still being written at the buffer's end."""
        buf, n = self._buf, len(self._buf)
        j = i + 1
        while j < n:
            if buf[j] in _RUN_CHARS:
                j += 1
                continue
            if buf[j] == "[":
                tag = _TAG.match(buf, j)
                if tag is not None:
                    j = tag.end()
                    continue
                if not final and _PARTIAL_TAG.match(buf, j):
                    raise _Wait  # "[lau" may become a tag of this run
            break
        return j

    def _long_enough(self, end: int) -> bool:
        sentence = self._buf[:end].strip()
        return len(sentence) >= self.min_chars and not _LEAD_ONLY.fullmatch(sentence)

    def _run_ends_sentence(self, i: int, j: int, final: bool) -> bool:
        """Whether the terminator run buf[i:j] ends a sentence; raises _Wait."""
        buf = self._buf
        if j == len(buf):
            # The run may still grow ("." -> "...") or gain a closer.
            if final:
                return True
            raise _Wait
        run = buf[i:j]
        if run == "." and _MARKER_BEFORE_DOT.search(buf, max(0, i - _MARKER_REACH), i):
            return False  # "1. Open the app": the marker is read with its item
        if any(ch in _CJK_TERMINATORS for ch in run):
            return True
        after = buf[j]
        m = _WORD_BEFORE.search(buf, max(0, i - _WORD_REACH), i)  # bounded: linear over the text
        word = m.group(0).lower() if m else ""
        if run == "." and word in _HALF_DAY:
            # "at 10:30 a.m. 我们见": the time's dot, the sentence goes on in Chinese;
            # "11:59 p.m. ET on": and before a time zone
            if after.isspace() and self._next_is(_TIME_ZONE, j, final):
                return False
            return not self._next_is_cjk(j, final) and (is_cjk(after) or (
                after.isspace() and self._next_word_is_new_sentence(j, final)))
        if is_cjk(after):
            return True
        if not after.isspace():
            return False
        if run[-1] == ")" and not self._next_word_is_new_sentence(j, final):
            return False  # "(D-Mass.) voted no": the aside's own stop, its sentence goes on
        if "…" in run or run.count(".") >= 2:
            return self._next_word_is_new_sentence(j, final)
        if run == "!" and i and buf[i - 1].isdigit() and self._next_is(_OPERATOR_NEXT, j, final):
            return False  # "3! = 6": a factorial
        if "!" in run or "?" in run:  # 'He asked, "Why?" and left': a quote's end goes on
            return not (run[-1] in _CLOSERS and self._next_char(j, final).islower())
        if m is not None and m.group(0) in _COURT_NEXT and self._next_is(_COURT_NEXT[m.group(0)], j, final):
            return False
        if word in _NEVER_FINAL or m is not None and m.group(0) in TITLES:
            # a capitalised title before a name ("Sen. Warren"); a lowercase
            # word ("one more rep.", "the next gen.") may end a sentence
            return False
        if _HOUSE_COMPASS.search(buf, max(0, i - 9), i):
            return False  # a street's compass point after its house number
        if m is not None and len(word) == 1 and self._is_initial(m, j, final):
            return False  # "Franklin D. Roosevelt", "J. K. Rowling", "Roe v. Wade"
        if word in _STREET_KINDS and self._next_is(_COMPASS, j, final):
            return False  # "1600 Pennsylvania Ave. NW"
        if word in _WEEKDAYS and self._next_is(_MONTH, j, final):
            return False  # "Sun. Dec. 1"
        if _ACRONYM.fullmatch(word) and self._next_is(_AFTER_COUNTRY, j, final):
            return False  # "the U.S. GDP", "U.K. Parliament"
        if word in _NUMBERING and self._next_is(_ROMAN_NEXT, j, final):
            return False  # "Vol. III of"
        if word == "no" and _NUMBERED_BEFORE.search(buf, max(0, i - 14), i - len(word)):
            return False  # "Model no. XR-2000B"
        if word in _MAYBE_FINAL or len(word) == 1 or _ACRONYM.fullmatch(word):  # "D. and": no end
            return self._next_word_is_new_sentence(j, final)
        return True

    def _is_initial(self, m: re.Match[str], j: int, final: bool) -> bool:
        """Whether a lone letter's dot is a name's: an initial between a name and a
        name, or before another initial; "v." between two names. ("an A. Then"
        ends; "Plan B. We" does not, a pause either way.)"""
        if m.group(0) == "v":
            return self._next_is(_NAME_NEXT, j, final)
        if not m.group(0).isupper() or not self._next_is(_NAME_NEXT, j, final):
            return False
        return (_NAME_BEFORE.search(self._buf, max(0, m.start() - 40), m.start()) is not None
                or self._next_is(_INITIAL_NEXT, j, final))

    def _next_is(self, word: re.Pattern[str], j: int, final: bool) -> bool:
        """Whether ``word`` matches at buf[j]; raises _Wait when it matches up
        to the buffer's end ("N" may become "Next", "ET" "ETA"), or the next word
        has not ended yet ("a.m. E" before "ET"; "Franklin D. " before "Roosevelt")."""
        m = word.match(self._buf, j)
        if m is None:
            if not final and _UNFINISHED_WORD.fullmatch(self._buf, j):
                raise _Wait
            return False
        if m.end() == len(self._buf) and not final:
            raise _Wait
        return True

    def _next_char(self, j: int, final: bool) -> str:
        """The first non-space character at or after buf[j] ("" at the end of
        the input); raises _Wait when more text may still come."""
        buf = self._buf
        k = j
        while k < len(buf) and buf[k].isspace():
            k += 1
        if k == len(buf):
            if final:
                return ""
            raise _Wait
        return buf[k]

    def _next_is_cjk(self, j: int, final: bool) -> bool:
        nxt = self._next_char(j, final)
        return bool(nxt) and is_cjk(nxt)

    def _next_word_is_new_sentence(self, j: int, final: bool) -> bool:
        """After an ambiguous end: a lowercase letter, a digit, "§", a currency
        sign ("approx. $1.2 bn") or an aside ("Apple Inc. (NASDAQ: AAPL)") continues it."""
        nxt = self._next_char(j, final)
        return not (nxt.islower() or nxt.isdigit() or nxt in "§$€£¥₹(")

    def _cut_point(self) -> int:
        """Where to cut a sentence longer than max_chars (1 <= cut <= max_chars).

        Needs buf[0] non-space and len(buf) > max_chars; reads buf[:max_chars + 1].
        """
        buf, limit = self._buf, self.max_chars
        clause = space = edge = 0
        for p in range(1, limit + 1):
            prev, nxt = buf[p - 1], buf[p]
            if nxt.isspace() and not prev.isspace():
                space = p
            if self._is_clause_cut(p):
                clause = p
            if not (_is_latin_alnum(prev) and _is_latin_alnum(nxt)):
                edge = p
        floor = limit // 3
        # A clause or word boundary in the last two thirds first, so that
        # pieces are not tiny; then any of them, nearest the limit.
        preferred = [c for c in (clause, space) if c >= floor]
        # Never right after a leading list marker or tag: it would stand alone.
        lead = _LEAD.match(buf, 0, limit + 1)  # reads no further than the rest
        lead_end = lead.end() if lead else 0
        for cut in (*preferred, clause, space, edge):
            if cut > lead_end:
                return cut
        log.debug("hard cut of a %d+ char word", limit)
        return limit

    def _is_clause_cut(self, p: int) -> bool:
        """Whether p ends a run of clause marks and closers holding a clause mark."""
        buf = self._buf
        marks = _CLAUSE | _CLOSERS
        if buf[p] in marks or buf[p - 1] not in marks:
            return False
        if buf[p - 1] in _ASCII_CLAUSE and _is_latin_alnum(buf[p]):
            return False
        k = p - 1
        while k >= 0 and buf[k] in marks:
            if buf[k] in _CLAUSE:
                return True
            k -= 1
        return False


def split_sentences(
    text: str, max_chars: int = DEFAULT_MAX_CHARS, min_chars: int = DEFAULT_MIN_CHARS
) -> list[str]:
    """Split a whole text into sentences; the same as one ``feed`` plus ``flush``."""
    splitter = SentenceSplitter(max_chars=max_chars, min_chars=min_chars)
    return splitter.feed(text) + splitter.flush()
