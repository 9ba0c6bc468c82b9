"""English readings of fractions: "1/2", "3/4 cup", "1 1/2 tsp", "½".

A fraction is read as one ("three quarters", "one and a half"), except
where the slash writes something else: "24/7", "50/50" and "9/11" are said
as two numbers; a score out of ten or of a large round total is "out of"
("98/100", "1520/1600"); a month and a day no fraction uses (a
denominator of 13-31 other than 16, no "of" after: "as of 12/31") is a
date; before a unit it is that much of the unit ("half a teaspoon"; before
an inch mark: shorthand.py).
"""

from __future__ import annotations

import re

from realtime.speech.en.words import cardinal, number, ordinal
from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import MONTHS, UNIT_END, UNIT_RE, UNITS, en_unit

_FRACTION_NAMES = {2: ("half", "halves"), 4: ("quarter", "quarters")}
_UNICODE_FRACTIONS = {"½": (1, 2), "¼": (1, 4), "¾": (3, 4), "⅓": (1, 3), "⅔": (2, 3)}


def fraction_words(num: int, den: int, mixed: bool) -> str:
    singular, plural = _FRACTION_NAMES.get(den, (ordinal(den), ordinal(den) + "s"))
    if num == 1:
        return ("a " if mixed else "one ") + singular
    return cardinal(num) + " " + plural


# A count after a slash's numbers: "8/16 cores" is eight out of sixteen, no fraction or date.
COUNT_AFTER = re.compile(r"\s(?:cores|threads|nodes|servers|machines|people|users|votes|games|points|items"
                         r"|students|players|seats|rooms|patients|questions|tests|respondents)\b")


# A product's name before its two releases ("Windows 10/11"), not a word that dates ("By 10/11").
_NAME_BEFORE = re.compile(r"\b(?!(?:By|On|In|From|Until|Since|At|Due|To|For|Of|And|Or|Before|After|Through"
                          r"|Till|The|Between|Ends?|Starts?)\s)(?:[A-Z][A-Za-z]+|i[A-Z][a-z]+)\s$")


def _fraction(m: re.Match[str]) -> str | None:
    whole, num, den = m.group(1), int(m.group(2)), int(m.group(3))
    if den == 0 or num == 0:
        return None
    of_after = m.string.startswith(" of", m.end())
    if den == num + 1 and num >= 10 and not whole and _NAME_BEFORE.search(m.string, max(0, m.start() - 20),
                                                                           m.start()):
        return cardinal(num) + " or " + cardinal(den)  # "Windows 10/11": two releases
    if num == den and den in (5, 10) and not whole:
        return cardinal(num) + " out of " + cardinal(den)  # "a 10/10", "5/5": a full score
    if (num, den) in ((24, 7), (9, 11)) or num == den or num + den == 100 and not whole:
        spoken = cardinal(num) + " " + cardinal(den)  # "24/7", "50/50", "9/11", "80/20"
    elif not whole and not of_after and num <= 12 and 13 <= den <= 31 and den != 16:
        return MONTHS[num - 1] + " " + ordinal(den)  # "as of 12/31": no fraction is in thirty firsts
    elif den >= 100 and den % 50 == 0 or den == 10 and not of_after or COUNT_AFTER.match(m.string, m.end()):
        spoken = cardinal(num) + " out of " + cardinal(den)  # a score of a round total: "98/100", "1520/1600"
    elif den == 1:
        spoken = cardinal(num) + " over one"
    else:
        spoken = fraction_words(num, den, bool(whole))
    return number(whole) + " and " + spoken if whole else spoken


def _fraction_unit(m: re.Match[str]) -> str | None:
    """ "1/2 tsp" -> "half a teaspoon", "3/4 cup" -> "three quarters of a cup",
    "1 1/2 tsp" -> "one and a half teaspoons" (the unit rule would read "2 tsp")."""
    unit = UNITS[m.group(4)][0]
    return _share(m.group(1), int(m.group(2)), int(m.group(3)), unit)


def _share(whole: str | None, num: int, den: int, unit: str) -> str | None:
    if not 0 < num < den:
        return None
    if whole:
        return number(whole) + " and " + fraction_words(num, den, True) + " " + en_unit(unit, "2")
    article = "an" if unit[0] in "aeiou" or unit.startswith("hour") else "a"
    if (num, den) == (1, 2):
        return f"half {article} {unit}"
    share = fraction_words(num, den, True)  # "a quarter", "two thirds"
    if share.startswith("a e"):
        share = "an" + share[1:]  # "an eighth of an inch"
    return f"{share} of {article} {unit}"


_CONTAINERS = frozenset({"cup", "teaspoon", "tablespoon", "pound", "ounce", "stick", "gallon", "liter",
                         "litre", "pint", "quart", "dozen", "can", "glass", "bottle", "slice", "loaf"})
# What a recipe measures out, after its measure: "1/2 cup butter" is half a cup of butter.
_CONTENT_AFTER = re.compile(r"\s(?!(?:of|or|and|to|each|per|more|less|plus|at|in|for|with|is|was|a|an|the"
                            r"|if|as|on|from|into|then|until|but)\b)[a-z]")


def _of_content(spoken: str | None, unit: str, m: re.Match[str]) -> str | None:
    """A share of a container with "of" before what it holds ("half a cup" of "butter")."""
    if spoken is not None and unit in _CONTAINERS and _CONTENT_AFTER.match(m.string, m.end()):
        return spoken + " of"
    return spoken


def _share_of_measure(m: re.Match[str]) -> str | None:
    """ "3/4 cup" -> "three quarters of a cup", "1/2–3/4 cup" -> "half to three quarters of a
    cup", "1/2 cup butter" -> "half a cup of butter"."""
    last = _of_content(_share(None, int(m.group(3)), int(m.group(4)), m.group(5)), m.group(5), m)
    if last is None or not m.group(1):
        return last
    num, den = int(m.group(1)), int(m.group(2))
    if not 0 < num < den:
        return None
    return ("half" if (num, den) == (1, 2) else fraction_words(num, den, True)) + " to " + last


def _unicode_fraction(m: re.Match[str]) -> str:
    num, den = _UNICODE_FRACTIONS[m.group(2)]
    whole = m.group(1)
    spoken = fraction_words(num, den, bool(whole))
    return number(whole) + " and " + spoken if whole else spoken


# Before the identifiers read "3/8-inch" as a code: a fraction hyphened to its word.
FRACTION_WORD_RULE = rule("fraction before a word", r"(?<![\w/.])()(\d{1,2})/(\d{1,2})-(?=[A-Za-z])",
                          _fraction)
# Before the unit rule would read "2 tsp" of "1/2 tsp".
FRACTION_UNIT_RULE = rule("fraction unit", r"(?<![\w/.])(?:(\d++)\s)?(\d{1,2})/(\d{1,2})\s?(" + UNIT_RE + ")"
                          + UNIT_END, _fraction_unit)
_MEASURES = (r"(cup|teaspoon|tablespoon|hour|mile|inch|pound|ounce|stick|gallon|liter|litre|pint|quart|dozen"
             r"|acre|yard|day|week|month|year|minute|second|lap|loaf|can|glass|bottle|page|slice)(?:e?s)?\b")


def _unicode_share(m: re.Match[str]) -> str | None:
    """ "½ tsp" -> "half a teaspoon", "2¼ lbs" -> "two and a quarter pounds", "¾ cup sugar" ->
    "three quarters of a cup of sugar"."""
    num, den = _UNICODE_FRACTIONS[m.group(2)]
    unit = UNITS[m.group(3)][0] if m.group(3) else m.group(4)
    spoken = _share(m.group(1), num, den, unit)
    return spoken if m.group(1) else _of_content(spoken, unit, m)


# "3/4 cup", "1/2 hour": a share of one measure, said as of one ("three quarters of a cup");
# a fraction's character before a unit or a measure ("½ tsp.", "¾ cup")
FRACTION_WORD_UNIT_RULES: tuple[Rule, ...] = (
    rule("fraction of a measure", r"(?<![\w/.])(?<!\d[\s-])(?:(\d)/(\d{1,2})\s?[-–]\s?)?(\d)/(\d{1,2})\s"
         + _MEASURES, _share_of_measure),
    rule("fraction character of a measure", r"(?<![\d.])(?:(\d++)\s?)?([½¼¾⅓⅔])\s?(?:(" + UNIT_RE + ")"
         + UNIT_END + r"|" + _MEASURES + r")(?:\.(?=\s[a-z]))?", _unicode_share),
)
# After the ratings ("4.5/5 stars").
RULES: tuple[Rule, ...] = (
    rule("fraction range", r"(?<=[\d½¼¾⅓⅔])\s?[-–—]\s?(?=\d*[½¼¾⅓⅔])|(?<=\d/\d)\s?[-–—]\s?(?=\d{1,2}/\d)",
         lambda m: " to "),  # "1–1½ hours", "1/2–3/4 cup"
    rule("unicode fraction", r"(?<![\d.])(?:(\d++)\s?)?([½¼¾⅓⅔])(?:-(?=[A-Za-z]))?",
         _unicode_fraction),  # "a 2½-hour drive": no pause before "hour"
    rule("fraction", r"(?<![\w/.])(?:(\d++)[\s-])?(\d{1,5})/(\d{1,5})(?i:st|nd|rd|th)?(?![\w/])", _fraction),
)
