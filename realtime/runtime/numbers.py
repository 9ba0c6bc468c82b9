"""Spelling out digits, registered into upstream's text normalizer.

ChatTTS's ``Normalizer`` drops characters outside its accepted set (digits
among them) unless a number normalizer is registered for the language. These
two small functions read integers and decimals aloud in English and Chinese;
anything else made of digits is read digit by digit.
"""

from __future__ import annotations

import re

_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
         "nineteen"]
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ((10**9, "billion"), (10**6, "million"), (1000, "thousand"), (100, "hundred"))
_ZH_DIGITS = "零一二三四五六七八九"
_ZH_UNITS = ((10**8, "亿"), (10**4, "万"), (1000, "千"), (100, "百"), (10, "十"))
_MAX_SPOKEN = 10**12  # longer digit runs (phone numbers, ids) are read digit by digit


def english_integer(n: int) -> str:
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    for scale, word in _SCALES:
        if n >= scale:
            head, rest = divmod(n, scale)
            tail = "" if rest == 0 else " " + english_integer(rest)
            return f"{english_integer(head)} {word}{tail}"
    raise AssertionError(n)


def chinese_integer(n: int) -> str:
    if n < 10:
        return _ZH_DIGITS[n]
    for unit, word in _ZH_UNITS:
        if n >= unit:
            head, rest = divmod(n, unit)
            lead = "" if (unit == 10 and head == 1) else chinese_integer(head)
            if rest == 0:
                return lead + word
            gap = "零" if rest < unit // 10 else ""
            return lead + word + gap + chinese_integer(rest)
    raise AssertionError(n)


def _reader(integer, digit_words, point: str, sep: str):
    def read(match: re.Match) -> str:
        whole, _, frac = match.group(0).partition(".")
        if len(whole) > 1 and whole.startswith("0") or int(whole) >= _MAX_SPOKEN:
            spoken = sep.join(digit_words[int(d)] for d in whole)
        else:
            spoken = integer(int(whole))
        if frac:
            spoken += sep + point + sep + sep.join(digit_words[int(d)] for d in frac)
        return f" {spoken} " if sep else spoken
    return read


_read_en = _reader(english_integer, _ONES[:10], "point", " ")
_read_zh = _reader(chinese_integer, _ZH_DIGITS, "点", "")


def normalize_numbers_en(text: str) -> str:
    return re.sub(r"\s{2,}", " ", _NUMBER.sub(_read_en, text)).strip()


def normalize_numbers_zh(text: str) -> str:
    return _NUMBER.sub(_read_zh, text)
