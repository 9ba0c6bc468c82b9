"""English number words, from num2words, in the form the model reads best.

num2words writes "one thousand, two hundred and thirty-four"; upstream's
normalizer turns a hyphen into a comma (a pause), so words are joined by
spaces, without the commas, and without the British "and" inside numbers
("two thousand and five" stays only for years, where it is what people say).
Integers of more than ``MAX_SPOKEN_DIGITS`` digits are read digit by digit.
"""

from __future__ import annotations

import re
from functools import lru_cache

from num2words import num2words

from realtime.speech.units import MAX_GROUPED_DIGITS, MAX_SPOKEN_DIGITS, read_number

DIGITS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_AND = re.compile(r",| and(?= )")


def _clean(words: str) -> str:
    return " ".join(_AND.sub("", words).replace("-", " ").split())


def digits(run: str) -> str:
    """ "4567" -> "four five six seven" (non-digits are skipped)."""
    return " ".join(DIGITS[ord(c) - 48] for c in run if "0" <= c <= "9")


@lru_cache(maxsize=4096)
def cardinal(n: int) -> str:
    if n < 0:
        return "minus " + cardinal(-n)
    if len(str(n)) > MAX_GROUPED_DIGITS:
        return digits(str(n))
    return _clean(num2words(n))


@lru_cache(maxsize=1024)
def ordinal(n: int) -> str:
    if len(str(n)) > MAX_SPOKEN_DIGITS:
        return digits(str(n)) + "th"
    return _clean(num2words(n, to="ordinal"))


@lru_cache(maxsize=1024)
def year(n: int) -> str:
    """1990 -> "nineteen ninety", 2005 -> "two thousand five", 1905 -> "nineteen oh five"."""
    if not 1000 <= n <= 2999:
        return cardinal(n)
    return _clean(num2words(n, to="year"))


def pairs(n: int) -> str:
    """A name's three or four digits in pairs: 4090 -> "forty ninety", 9001 ->
    "ninety oh one", 150 -> "one fifty", 4000 -> "four thousand" (a round one as a
    number)."""
    high, low = divmod(n, 100)
    if low == 0 or not 100 <= n <= 9999:
        return cardinal(n)
    return f"{cardinal(high)} {'oh ' if low < 10 else ''}{cardinal(low)}"


def plural(words: str) -> str:
    """The last word counted many: "nineteen ninety" -> "nineteen nineties",
    "one hundred" -> "one hundreds", "six" -> "sixes"."""
    head, _, last = words.rpartition(" ")
    last = last[:-1] + "ies" if last.endswith("y") else last + ("es" if last.endswith(("x", "s")) else "s")
    return (head + " " if head else "") + last


_WORDS = {"-": "minus ", "+": "plus ", "zero": "", "point": " point "}  # ".5": "point five"


def number(text: str) -> str:
    """A written number: "-3,000.25" -> "minus three thousand point two five"."""
    return read_number(text, cardinal, digits, _WORDS)


def scaled(text: str) -> str:
    """A number before its scale word: "75.0" (million) -> "seventy five", "1.50" -> "one point five"."""
    whole, dot, frac = text.partition(".")
    return number(whole + (dot + frac.rstrip("0") if frac.rstrip("0") else ""))
