"""English readings of money: "$1,299.99", "€5m", "USD 20", "$300–$500",
and Britain's money before 1971, pounds, shillings and pence: "£3 4s 6d" ->
"three pounds, four shillings and six pence", "10s 6d", "£2 10s".

A symbol or a code before the amount, or a code after it; a scale written
onto it ("$3T", "$4.5B", "€2bn"); dollars and cents said apart. An amount
after "a" or "an" and before its noun is an adjective, singular as a size
is: "a $5 bill" -> "a five dollar bill", "a $1.2 million deal"; so is one before a thing it
sizes, wherever the article is ("a 2-year, $30 million contract", "the $1.5 billion
question"). A contract's years before its money: "4-yr/$120M" -> "four year, one hundred
twenty million dollar".
"""

from __future__ import annotations

import re

from realtime.speech.en.shorthand import NOUN_AFTER
from realtime.speech.en.words import cardinal, number, scaled
from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import (
    CURRENCIES,
    CURRENCY_CODE_RE,
    CURRENCY_SYMBOL_RE,
    MAGNITUDE_RE,
    MAGNITUDE_WORDS,
    MAGNITUDES,
    MAX_SPOKEN_DIGITS,
    NUM,
    UNSIGNED,
    en_unit,
)


def money(currency: str, amount: str, magnitude: str | None, sign: str | None) -> str:
    major, minor, _ = CURRENCIES[currency]
    minus = ("plus " if sign == "+" else "minus ") if sign else ""  # "+€30": an extra charge
    if magnitude:
        scale = MAGNITUDES[magnitude]
        return f"{minus}{scaled(amount)} {MAGNITUDE_WORDS[scale]} {en_unit(major, 'many')}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if len(frac) > 2 and len(frac.rstrip("0")) <= 2:
        frac = frac.rstrip("0") or "0"  # "$30.500": fifty cents; "$4.000": four dollars
    if frac and minor and len(frac) <= 2 and len(whole) <= MAX_SPOKEN_DIGITS:
        cents, units = int(frac.ljust(2, "0")), int(whole or "0")
        parts = []
        if units or not cents:
            parts.append(f"{cardinal(units)} {en_unit(major, str(units))}")
        if cents:
            parts.append(f"{cardinal(cents)} {en_unit(minor, str(cents))}")
        return minus + " and ".join(parts)
    return f"{minus}{number(amount)} {en_unit(major, amount)}"


def _after(m: re.Match[str]) -> str:
    amount = m.group(1)
    sign = amount[0] if amount[0] in "-−+" else None
    return money(m.group(3), amount.lstrip("-−+"), m.group(2), sign)


def _before(m: re.Match[str]) -> str:
    """ "$20", "-€5", "USD 20", "$999+" (and up: "plus"); a code after the amount that names
    the same money is said once ("$100 USD", "€92.30 EUR"), or names which dollars ("$5 CAD")."""
    currency, code = m.group(2).strip(), m.group(6)
    said_code = ""
    if code:
        major, named = CURRENCIES[currency][0], CURRENCIES[code][0]
        if named == major or currency == "$" and named.endswith("dollar"):
            currency = code
        else:
            said_code = " " + code  # "€5 USD": as written
    spoken = money(currency, m.group(3), m.group(4), m.group(1)) + (" plus" if m.group(5) else "")
    return spoken + said_code


def _range(m: re.Match[str]) -> str:
    """ "$300–$500", "$2-3 million", "$2.5k–$3k": both ends read as money, "to" between."""
    first, second = m.group(1), m.group(4) or m.group(1)
    scale = m.group(6)
    return (money(first, m.group(2), m.group(3) or scale, None) + " to "
            + money(second, m.group(5), scale, None))


def _adjective(m: re.Match[str]) -> str | None:
    """ "a $5 bill" -> "a five dollar bill"; cents are left to the plain reading."""
    amount, scale = m.group(3), m.group(4)
    if "." in amount and not scale:
        return None
    words = (scaled(amount) + " " + MAGNITUDE_WORDS[MAGNITUDES[scale]]) if scale else number(amount)
    article = m.group(1)
    if article.strip() in ("a", "A") and words.startswith(("eight", "eleven")):
        article = article[0] + "n "  # "a $80 fee": said "an eighty dollar fee"
    return f"{article}{words} {CURRENCIES[m.group(2)][0]}"


def _pre_decimal(m: re.Match[str]) -> str:
    """ "£3 4s 6d", "4s 6d", "£2 10s": each amount with its coin, "and" before the last."""
    found = m.groupdict()
    parts = [f"{cardinal(int(found[key]))} {en_unit(coin, found[key])}"
             for key, coin in (("l", "pound"), ("s", "shilling"), ("d", "penny")) if found.get(key)]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 2 else " and ".join(parts)


def _continental(m: re.Match[str]) -> str | None:
    """ "€7,50", "7,50 €", "1.299,00 €": a euro amount written with a decimal comma
    and dots between thousands (an English "€7.50" is left to "money before")."""
    whole, cents = m.group(2), m.group(3)
    if not cents and "." not in whole:
        return None
    return money("€", whole.replace(".", "") + ("." + cents if cents else ""), None, None)


def _pair(m: re.Match[str]) -> str | None:
    """A currency pair as traders say it: "EUR/USD" -> "euro dollar"."""
    if m.group(1) not in CURRENCIES or m.group(2) not in CURRENCIES:
        return None
    return CURRENCIES[m.group(1)][0] + " " + CURRENCIES[m.group(2)][0]


RULES: tuple[Rule, ...] = (
    rule("currency pair", r"\b([A-Z]{3})/([A-Z]{3})\b", _pair),
    rule("continental euros", r"(?<![\w.,€])(€\s?)?(\d{1,3}(?:\.\d{3})*+)(?:,(\d{2}))?(?(1)|\s?€)"
         r"(?!\d|[,.]\d)", _continental),
    # Shillings need pounds before them or pence after them: "10s" alone is ten seconds.
    rule("pounds shillings pence", r"(?<![\w$€£¥￥])£(?P<l>\d{1,7})\s(?P<s>\d{1,2})s(?:\s(?P<d>\d{1,2})d)?\b",
         _pre_decimal),
    rule("shillings pence", r"(?<![\w.£])(?P<s>\d{1,2})s\s(?P<d>\d{1,2})d\b", _pre_decimal),
    # "4-yr/$120M", "2 yrs/$30M": a contract's years, then its money
    rule("contract", r"(?<![\w.])(\d{1,2})[-\s]?(?:yrs?|years?)\s?/\s?(?=" + CURRENCY_SYMBOL_RE + r"\d)",
         lambda m: cardinal(int(m.group(1))) + " year, "),
    rule("money adjective", r"\b([Aa]n?\s)(" + CURRENCY_SYMBOL_RE + r")(" + UNSIGNED + r")(?:\s?("
         + MAGNITUDE_RE + r")\b)?" + NOUN_AFTER, _adjective),
    # "a 2-year, $30 million contract": a sum before a thing it sizes, wherever the article is
    rule("money before its thing", r"(?<![\w$€£¥￥])()(" + CURRENCY_SYMBOL_RE + r")(" + UNSIGNED + r")(?:\s?("
         + MAGNITUDE_RE + r")\b)?(?=\s(?:deal|contract|extension|budget|loan|settlement|package|fine|lawsuit"
         r"|investment|acquisition|buyout|round|offer|bid|valuation|program|project|fund|grant|bond|payout"
         r"|expansion|renovation|upgrade|makeover|bailout|stimulus|judgment|verdict|jackpot|prize|purse"
         r"|salary|bonus|signing|price\stag|question|industry|business|market)\b)", _adjective),
    rule("money range", r"(?<![\w$€£¥￥])(" + CURRENCY_SYMBOL_RE + r")(" + UNSIGNED + r")(?:\s?("
         + MAGNITUDE_RE + r")\b)?\s?[-–—]\s?(" + CURRENCY_SYMBOL_RE + r")?(" + UNSIGNED + r")(?:\s?("
         + MAGNITUDE_RE + r")\b)?", _range),
    rule("money before", r"(?<![\w$€£¥￥])([-−]|(?<![\w)])\+)?(" + CURRENCY_SYMBOL_RE + "|(?:"
         + CURRENCY_CODE_RE
         + r")\s)\s?(" + UNSIGNED + r")(?:\s?(" + MAGNITUDE_RE + r")\b)?(\+(?![\w+]))?"
         r"(?:\s(" + CURRENCY_CODE_RE + r")\b)?", _before),
    # "100 USD", "7,50 €", "5$", "500₽": a code or a sign after the amount (upstream drops a sign)
    rule("money after", "(" + NUM + r")(?:\s?(" + MAGNITUDE_RE + r")\b)?\s?(" + CURRENCY_CODE_RE
         + "|" + CURRENCY_SYMBOL_RE + r")(?![A-Za-z\d$€£¥￥])", _after),
)
