"""A sentence's pieces as it should be read: our rules for English and
Chinese, before upstream's character clean-up (realtime/runtime/spoken.py).

``pieces(sentence, lang)`` returns ``(original, spoken)`` pairs covering
the sentence in order; an untouched span is ``(s, s)``. The caller decides
the language (``lang.decide``). Pure and fast: a sentence that no rule could
touch (``lang.needs_rules``) is one untouched piece without running any.
"""

from __future__ import annotations

from realtime.textfront import en, zh
from realtime.textfront.lang import decide, needs_rules
from realtime.textfront.rewrite import joined, run, spaced

# Longer sentences are refused by the caller before they get here; rules are
# linear, but a bound keeps every call's cost known.
MAX_CHARS = 20_000
# Full-width digits and signs read as their ASCII forms (rules see only those).
_FULL_WIDTH = str.maketrans("０１２３４５６７８９％＋＝＄", "0123456789%+=$")


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
    sentence = sentence.translate(_FULL_WIDTH)
    if lang == "zh":
        return joined(run(sentence, zh.RULES))
    return spaced(run(sentence, en.RULES))
