"""Chinese number words: 110 -> 一百一十, 100005 -> 十万零五, 3.14 -> 三点一四.

The readings are WeTextProcessing's and cn2an's (checked against both, see
docs/text.md); the code is small enough to own, which saves the 700 MB of
pynini that WeTextProcessing needs. "十" drops its "一" only at the head of
a number (十五, but 一百一十五).
"""

from __future__ import annotations

from functools import lru_cache

from realtime.speech.units import MAX_SPOKEN_DIGITS, read_number

DIGITS = "零一二三四五六七八九"
PHONE_DIGITS = "零幺二三四五六七八九"  # 1 is 幺 in phone and service numbers
_SMALL = ((1000, "千"), (100, "百"), (10, "十"))


def digits(run: str, phone: bool = False) -> str:
    table = PHONE_DIGITS if phone else DIGITS
    return "".join(table[ord(c) - 48] for c in run if "0" <= c <= "9")


def _below_10000(n: int, head: bool) -> str:
    """0 < n < 10000; ``head``: the number starts here (十五, not 一十五)."""
    out, zero = [], False
    for unit, word in _SMALL:
        d, n = divmod(n, unit)
        if d:
            if zero:
                out.append("零")
            out.append(word if (unit == 10 and d == 1 and head and not out) else DIGITS[d] + word)
            zero = False
        elif out:
            zero = True
    if n:
        if zero:
            out.append("零")
        out.append(DIGITS[n])
    return "".join(out)


@lru_cache(maxsize=4096)
def cardinal(n: int) -> str:
    """The Chinese reading; a leading 2 before 百/千/万/亿 is 两 (两千, 两万)."""
    words = _cardinal(n)
    if len(words) > 1 and words[0] == "二" and words[1] in "百千万亿":
        return "两" + words[1:]
    return words


def _cardinal(n: int) -> str:
    if n < 0:
        return "负" + _cardinal(-n)
    if n == 0:
        return "零"
    if len(str(n)) > MAX_SPOKEN_DIGITS:
        return digits(str(n))
    groups = []
    while n:
        n, g = divmod(n, 10000)
        groups.append(g)
    out: list[str] = []
    units = ("", "万", "亿", "万亿")
    need_zero = False
    for i in range(len(groups) - 1, -1, -1):
        g = groups[i]
        if g == 0:
            need_zero = bool(out)
            continue
        if out and (need_zero or g < 1000):
            out.append("零")
        out.append(_below_10000(g, head=not out) + units[i])
        need_zero = False
    return "".join(out)


_WORDS = {"-": "负", "+": "正", "zero": "零", "point": "点"}


def number(text: str) -> str:
    """A written number: "-3,000.25" -> "负三千点二五"."""
    return read_number(text, cardinal, digits, _WORDS)
