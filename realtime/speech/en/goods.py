"""English readings of what shops write about their goods: a piece of furniture's sides
with the inch mark and the side's letter ('84"W x 38"D x 34"H' -> "eighty four inches
wide by thirty eight inches deep by thirty four inches high"), sides in inches marked on
each or after the last ('60" x 80" queen mattress', '9x13" pan' -> "sixty by eighty inch
queen mattress", "nine by thirteen inch pan"; 'the box is 12x8x4"' -> "... inches"), a
product's sides with "in" after the last ("11.97 x 8.46 x 0.24 in" -> "... by ...
inches", not "times"), and a pack's count of containers ("6 × 330 ml cans" -> "six cans of
three hundred thirty milliliters"), which the inch, dimension and unit rules would read
apart.
"""

from __future__ import annotations

import re

from realtime.speech.en.shorthand import MEASURED_AFTER, NOUN_NEXT, inside_quote
from realtime.speech.en.words import cardinal, number
from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import UNIT_END, UNIT_RE, UNITS, UNSIGNED, en_unit

_SIDES = {"W": "wide", "D": "deep", "H": "high", "L": "long"}
_SIDE = r"(\d{1,3}(?:\.\d{1,2})?)[\"″]\s?([WDHL])\b"
_INCHES = r"(\d{1,3}(?:\.\d{1,2})?)"


def _inch_word(m: re.Match[str]) -> str:
    """ "inch" before the noun a size describes ('a 20"W shelf', '9x13" pans'), else "inches"
    ('12x8x4".', '60" x 80" wide')."""
    noun = NOUN_NEXT.match(m.string, m.end()) and not MEASURED_AFTER.match(m.string, m.end())
    return "inch" if noun else "inches"


def _lettered_sides(m: re.Match[str]) -> str:
    sides = m.groups()
    said = [(sides[k], "inch" if sides[k] == "1" else _inch_word(m), _SIDES[sides[k + 1]])
            for k in range(0, len(sides), 2) if sides[k]]
    return " by ".join(f"{number(count)} {word} {side}" for count, word, side in said)


def _marked_sides(m: re.Match[str]) -> str | None:
    """The sides' numbers, then one inch word; none when the mark closes a quotation
    ('He said "use 9x13" loudly': no inches)."""
    if inside_quote(m.string[max(0, m.start() - 200):m.start()]):
        return None
    return " by ".join(number(g) for g in m.groups() if g) + " " + _inch_word(m)


def _inch_sides(m: re.Match[str]) -> str:
    return " by ".join(number(g) for g in m.groups()[:3] if g) + " inches"


def _pack(m: re.Match[str]) -> str:
    count, size, unit, container = m.groups()
    return f"{cardinal(int(count))} {container} of {number(size)} {en_unit(UNITS[unit][0], size)}"


# Before the inch mark, the dimensions and the units are read on their own.
RULES: tuple[Rule, ...] = (
    rule("lettered sides", r"(?<![\w.])" + _SIDE + r"(?:\s?[x×]\s?" + _SIDE + r")?(?:\s?[x×]\s?" + _SIDE
         + ")?", _lettered_sides),
    # a mark on each side, or after the last only ('60" x 80"', '9x13"')
    rule("marked sides", r"(?<![\w.])" + _INCHES + r"[\"″]?\s?[x×]\s?" + _INCHES + r"(?:[\"″]?\s?[x×]\s?"
         + _INCHES + r")?[\"″](?=\s[A-Za-z\d]|[,.;:)]|$)", _marked_sides),
    rule("sides in inches", r"(?<![\w.])(" + UNSIGNED + r")\s?[x×]\s?(" + UNSIGNED + r")(?:\s?[x×]\s?("
         + UNSIGNED + r"))?\s?(in|inches)\b(?=[;,.)]|$)", _inch_sides),  # "in" before a word is a word
    rule("pack", r"(?<![\w.])(\d{1,3})\s?[x×]\s?(" + UNSIGNED + r")\s?(" + UNIT_RE + ")" + UNIT_END
         + r"\s(cans|bottles|packs|bags|boxes|cartons|pouches|tubes|jars|sachets|tablets|capsules|rolls)\b",
         _pack),
)
