"""Rule passes over a sentence that keep track of what became what.

A sentence is a list of ``Span`` s. Each rule (a regex and a reader) runs
over the spans no earlier rule rewrote; a match the reader accepts becomes
its own span, rewritten and closed to later rules. So rules run in priority
order (money before plain numbers) and the sentence's pieces, original text
and spoken text, stay aligned for word timing.

Every pattern here must be linear: no nested quantifiers that could
backtrack, since the input is anything a client sends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

# A reader returns the spoken text for a match, or None to leave it alone.
Reader = Callable[[re.Match[str]], "str | None"]


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    read: Reader


def rule(name: str, pattern: str, read: Reader, flags: int = re.ASCII) -> Rule:
    """A rule; ``\\w``, ``\\d`` and ``\\b`` are ASCII: a Han character next to a
    number is no letter ("花了$100", "1/5的人")."""
    return Rule(name, re.compile(pattern, flags), read)


def keep_final_period(m: re.Match[str], spoken: str) -> str:
    """``spoken`` with the sentence's final period when the match swallowed
    it ("5 p.m.", "Main St.", "2% p.a.")."""
    return spoken + "." if m.group(0).endswith(".") and m.end() == len(m.string) else spoken


def stop_kept(m: re.Match[str]) -> str:
    """ "." where the match's own dot also ends a sentence: at the text's end or
    before a capital ("Elm St. It was", "the 4th fl. The lobby"); else ""."""
    after = m.string[m.end():m.end() + 2]
    return "." if m.group(0).endswith(".") and (not after.strip() or after[1:].isupper()) else ""


# Upstream's control tags ([uv_break], [laugh_0]) pass through every rule untouched.
TAG_RULE = Rule("tag", re.compile(r"\[[\w_]+\]"), lambda m: m.group(0))


@dataclass
class Span:
    original: str
    spoken: str
    done: bool = False


def _apply(spans: list[Span], r: Rule) -> list[Span]:
    out: list[Span] = []
    for span in spans:
        if span.done:
            out.append(span)
            continue
        text, pos = span.original, 0
        for m in r.pattern.finditer(text):
            if m.end() == m.start():
                continue
            spoken = r.read(m)
            if spoken is None:
                continue
            if m.start() > pos:
                out.append(Span(text[pos:m.start()], text[pos:m.start()]))
            out.append(Span(m.group(0), spoken, done=True))
            pos = m.end()
        if pos == 0:
            out.append(span)
        elif pos < len(text):
            out.append(Span(text[pos:], text[pos:]))
    return out


def run(sentence: str, rules: Sequence[Rule], joints: Mapping[str, str] | None = None) -> list[Span]:
    """The sentence's spans after every rule, in order; then ``joints``' reading
    of a mark left alone between two readings ("20°C–25°C": each rule saw one
    side, upstream's clean-up would drop the "–")."""
    spans = [Span(sentence, sentence)]
    for r in rules:
        spans = _apply(spans, r)
    if joints:
        for i in range(1, len(spans) - 1):
            span = spans[i]
            mark = span.original.strip()
            said = joints.get(mark)
            if mark.isalpha() and not (_DIGIT.search(spans[i - 1].original)
                                       and _DIGIT.match(spans[i + 1].original.lstrip())):
                said = None  # a letter joins measures only ('12" x 8"'), not "= x²"
            if said is not None and not span.done and spans[i - 1].done and spans[i + 1].done:
                spans[i] = Span(span.original, said, done=True)
    return spans


_DIGIT = re.compile(r"[0-9]")
_NO_SPACE_AFTER = frozenset("([{\"'“‘#$")
_NO_SPACE_BEFORE = frozenset(",;:.!?")  # a reading that is a pause joins the word before it


def spaced(spans: list[Span]) -> list[tuple[str, str]]:
    """Pieces for a spaced script: a rewritten span is separated from its
    neighbours by exactly one space where a word would otherwise touch it
    ("5km" -> "five kilometers", "x=5" -> "x equals five", "Tom & Jerry"
    keeps its own spaces)."""
    pieces: list[tuple[str, str]] = []
    for i, span in enumerate(spans):
        spoken = span.spoken
        if span.done and spoken != span.original and spoken.strip():
            spoken = spoken.strip()
            before = pieces[-1][1] if pieces else ""
            after = spans[i + 1].spoken if i + 1 < len(spans) else ""
            if before and not before[-1].isspace() and before[-1] not in _NO_SPACE_AFTER \
                    and spoken[0] not in _NO_SPACE_BEFORE:
                spoken = " " + spoken
            if after and after[0].isalnum():
                spoken += " "
        pieces.append((span.original, spoken))
    return pieces


def joined(spans: list[Span]) -> list[tuple[str, str]]:
    return [(s.original, s.spoken) for s in spans]
