"""A sentence's pieces as it should be read: our rules for English and
Chinese, before upstream's character clean-up (realtime/engine/text/spoken.py).

``pieces(sentence, lang)`` returns ``(original, spoken)`` pairs covering
the sentence in order; an untouched span is ``(s, s)``. The caller decides
the language (``lang.decide``). Pure and fast: a sentence that no rule could
touch (``lang.needs_rules``) is one untouched piece without running any.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from realtime.speech import en, zh
from realtime.speech.lang import decide, needs_rules
from realtime.speech.rewrite import joined, run, spaced

# Longer sentences are refused by the caller before they get here; rules are
# linear, but a bound keeps every call's cost known.
MAX_CHARS = 20_000
# Full-width letters, digits and signs read as their ASCII forms: rules see
# only those, and upstream's clean-up would drop the full-width letters.
_FULL = ("０１２３４５６７８９ＡＢＣＤＥＦＧＨＩＪＫＬＭＮＯＰＱＲＳＴＵＶＷＸＹＺ"
         "ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ％＋＝＄＠＃＆")
_FULL_WIDTH = str.maketrans({
    **{c: chr(ord(c) - 0xFEE0) for c in _FULL},
    **{chr(0x2080 + d): str(d) for d in range(10)},  # subscript digits: "H₂O", "CO₂", "x₁"
    # numbers written as one sign, which upstream's clean-up would drop: "①", "⑳", "Ⅲ", "ⅻ"
    **{chr(0x2460 + n - 1): str(n) for n in range(1, 21)}, "⓪": "0",
    **{chr(c): unicodedata.normalize("NFKC", chr(c)) for c in range(0x2160, 0x2180)},
    "⁄": "/", "№": "No.",  # the fraction slash ("3⁄4"), the numero sign
    # typesetters' hyphens and spaces ("1‑800‑FLOWERS", "5 °C"): upstream drops them, gluing words
    "\u2010": "-", "\u2011": "-", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
})
# A vulgar fraction the rules do not read as one sign ("⅛ cup", "2⅜ in"): its digits, apart
# from a whole number before it ("½", "¼", "¾", "⅓", "⅔" have readings of their own).
# A thin or no-break space between groups of digits separates thousands ("1 000 000", SI style).
_GROUPED = re.compile(r"(?<=\d)[\u00a0\u2009\u202f](?=\d{3}(?!\d))")
_VULGAR = re.compile(r"(\d?)([⅐⅑⅒⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞])")


def fold_width(text: str) -> str:
    """Full-width letters, digits and signs as their ASCII forms ("ｉＰｈｏｎｅ" ->
    "iPhone"), and Latin letters without their accents ("café" -> "cafe"):
    upstream's clean-up keeps only ASCII letters, so "crème brûlée" would
    read "crme brle"."""
    if text.isascii():
        return text
    text = _GROUPED.sub(",", text).translate(_FULL_WIDTH)
    if text.isascii():
        return text
    text = _VULGAR.sub(lambda m: m.group(1) + (" " if m.group(1) else "")
                       + unicodedata.normalize("NFKC", m.group(2)).replace("⁄", "/"), text)
    return _ACCENTED.sub(_plain_latin, text)


# Latin-1 Supplement to Latin Extended-B and Latin Extended Additional, letters only.
_ACCENTED = re.compile(r"[\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")
_NO_DECOMPOSITION = {"ß": "ss", "ẞ": "SS", "æ": "ae", "Æ": "Ae", "œ": "oe", "Œ": "Oe", "ø": "o", "Ø": "O",
                     "đ": "d", "Đ": "D", "ł": "l", "Ł": "L", "ð": "d", "Ð": "D", "þ": "th", "Þ": "Th",
                     "ı": "i", "ħ": "h", "Ħ": "H"}


@lru_cache(maxsize=1024)
def _plain(ch: str) -> str:
    if ch in _NO_DECOMPOSITION:
        return _NO_DECOMPOSITION[ch]
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if base.isascii() and base.isalpha() else ch


def _plain_latin(m: re.Match[str]) -> str:
    return _plain(m.group(0))


class TextTooLong(ValueError):
    """The text is longer than the normalizer accepts (``MAX_CHARS``)."""


def normalize(sentence: str, hint: str | None = None) -> str:
    """The sentence's spoken text before upstream's clean-up (tests, tools)."""
    return "".join(said for _, said in pieces(sentence, decide(sentence, hint)))


def pieces(sentence: str, lang: str) -> list[tuple[str, str]]:
    if len(sentence) > MAX_CHARS:
        raise TextTooLong(f"text of {len(sentence)} characters, at most {MAX_CHARS}")
    if not needs_rules(sentence):
        return [(sentence, sentence)] if sentence else []
    sentence = fold_width(sentence)
    if lang == "zh":
        return joined(run(sentence, zh.RULES, zh.JOINTS))
    return spaced(run(sentence, en.RULES, en.JOINTS))
