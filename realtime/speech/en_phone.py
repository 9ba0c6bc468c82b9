"""English readings of telephone numbers: digit by digit, a pause between groups.

- North American numbers: "+1 (555) 123-4567", "555.123.4567",
  "555-123-4567-89" -> "plus one, five five five, one two three, four five
  six seven" (an extension after a fourth dash is one more group).
- Social security numbers: "111-22-3333" -> "one one one, two two, three three
  three three" (no range "to" between its groups).
- Toll-free words: "1-800-FLOWERS" -> "one, eight hundred, FLOWERS".
- International numbers: "+44 20 7946 0958", "+44 (0)20 7946 0958",
  "+442079460958" -> "plus four four, two zero, ..." (a "(0)" is said: it is
  dialled inside the country).
"""

from __future__ import annotations

import re

from realtime.speech.en_words import digits
from realtime.speech.rewrite import Rule, rule


def _groups(m: re.Match[str]) -> str:
    plus = m.group(1)
    spoken = ", ".join(digits(g) for g in m.groups()[1:] if g)
    return ("plus " + digits(plus) + ", " if plus else "") + spoken


def _international(m: re.Match[str]) -> str | None:
    groups = [m.group(1), *(g for g in re.split(r"[\s.()-]+", m.group(2)) if g)]
    if sum(map(len, groups)) < 8:
        return None
    return "plus " + ", ".join(digits(g) for g in groups)


def _unbroken(m: re.Match[str]) -> str:
    """ "+442079460958": the country code cannot be told apart; the digits, after "plus"."""
    return "plus " + digits(m.group(1))


_TOLL_FREE = {"800": "eight hundred", "888": "eight eight eight", "877": "eight seven seven",
              "866": "eight six six", "855": "eight five five", "844": "eight four four",
              "833": "eight three three"}

RULES: tuple[Rule, ...] = (
    rule("phone", r"(?<![\w+])(?:\+(\d{1,3})[\s.-]?)?(?:\((\d{3})\)[\s-]?|(\d{3})[\s.-])"
         r"(\d{3})[\s.-](\d{4})(?:-(\d{1,4}))?(?![\d-])", _groups),
    rule("social security", r"(?<![\w+.-])()(\d{3})-(\d{2})-(\d{4})(?![\d-])", _groups),
    rule("toll free", r"(?<![\w+-])1-(8[0-8][0-8])-(?=[A-Z0-9]{1,7}(?:-[A-Z0-9]{1,7}){0,3}\b)",
         lambda m: "one, " + _TOLL_FREE.get(m.group(1), digits(m.group(1))) + ", " if m.group(1) in _TOLL_FREE
         else None),
    rule("international phone", r"(?<![\w+])\+(\d{1,3})((?:[\s.-](?:\(0\)\s?)?\d{1,4}){2,5})(?!\d|[.-]\d)",
         _international),
    rule("international unbroken", r"(?<![\w+])\+(\d{8,15})(?!\d)", _unbroken),
)
