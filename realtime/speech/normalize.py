"""A sentence's pieces as it should be read: our rules for English and
Chinese, before upstream's character clean-up (realtime/engine/text/spoken.py).

``pieces(sentence, lang)`` returns ``(original, spoken)`` pairs covering
the sentence in order; an untouched span is ``(s, s)``. The caller decides
the language (``lang.decide``). Pure and fast: a sentence that no rule could
touch (``lang.needs_rules``) is one untouched piece without running any.
"""

from __future__ import annotations

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
_FULL_WIDTH = str.maketrans(_FULL, "".join(chr(ord(c) - 0xFEE0) for c in _FULL))


def fold_width(text: str) -> str:
    """Full-width letters, digits and signs as their ASCII forms ("ｉＰｈｏｎｅ" -> "iPhone")."""
    return text.translate(_FULL_WIDTH)


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
