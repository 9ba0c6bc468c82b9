"""English readings: the rules, in priority order.

Numbers come last: every rule that gives a number its meaning (a date, a
price, a unit, an ordinal) runs before the plain reading. What no rule
reads is left for upstream (which drops characters the model cannot say).
"""

from __future__ import annotations

import re

from realtime.textfront import en_more, en_time
from realtime.textfront.en_words import cardinal, digits, number, ordinal, year
from realtime.textfront.rewrite import TAG_RULE, Rule, rule
from realtime.textfront.units import (
    BULLET,
    CURRENCIES,
    CURRENCY_CODE_RE,
    CURRENCY_SYMBOL_RE,
    LIST_MARKER,
    MAGNITUDE_RE,
    MAGNITUDE_WORDS,
    MAGNITUDES,
    MAX_SPOKEN_DIGITS,
    NUM,
    TLDS,
    UNIT_END,
    UNIT_RE,
    UNITS,
    UNSIGNED,
    en_unit,
    is_minus,
)

_LONG_RUN = 7  # a digit run this long without separators is an id or phone number


def _final(m: re.Match[str], spoken: str) -> str:
    return spoken + "." if m.group(0).endswith(".") and m.end() == len(m.string) else spoken


# --- money --------------------------------------------------------------------------


def _money(currency: str, amount: str, magnitude: str | None, sign: str | None) -> str:
    major, minor, _ = CURRENCIES[currency]
    minus = "minus " if sign else ""
    if magnitude:
        scale = MAGNITUDES[magnitude]
        return f"{minus}{number(amount)} {MAGNITUDE_WORDS[scale]} {en_unit(major, 'many')}"
    whole, _, frac = amount.replace(",", "").partition(".")
    if frac and minor and len(frac) <= 2 and len(whole) <= MAX_SPOKEN_DIGITS:
        cents, units = int(frac.ljust(2, "0")), int(whole or "0")
        parts = []
        if units or not cents:
            parts.append(f"{cardinal(units)} {en_unit(major, str(units))}")
        if cents:
            parts.append(f"{cardinal(cents)} {en_unit(minor, str(cents))}")
        return minus + " and ".join(parts)
    return f"{minus}{number(amount)} {en_unit(major, amount)}"


def _money_after(m: re.Match[str]) -> str:
    amount = m.group(1)
    sign = amount[0] if amount[0] in "-−" else None
    return _money(m.group(3), amount.lstrip("-−+"), m.group(2), sign)


def _money_range(m: re.Match[str]) -> str:
    """ "$300–$500", "$2-3 million": both ends read as money, "to" between."""
    first, second = m.group(1), m.group(3) or m.group(1)
    return _money(first, m.group(2), m.group(5), None) + " to " + _money(second, m.group(4), m.group(5), None)


_TLDS = frozenset(TLDS)


def _looks_like_url(m: re.Match[str]) -> bool:
    """A scheme, "www." or a known top-level domain: "3.14", "e.g" and
    "Node.js" are no addresses."""
    host = m.group(1)
    return m.group(0).startswith(("http", "www.")) or host.rsplit(".", 1)[-1].lower() in _TLDS


def _address(text: str) -> str:
    """An address's part, its dots said and its digits read one by one
    ("web3.io" -> "web three dot io"): upstream would drop the digits."""
    spoken = text.replace(".", " dot ")
    if any("0" <= c <= "9" for c in spoken):
        spoken = " ".join(re.sub(r"\d+", lambda d: " " + digits(d.group(0)) + " ", spoken).split())
    return spoken


def _url(m: re.Match[str]) -> str:
    host, path = m.group(1), m.group(2)
    stop = "." if path.endswith(".") else ""  # the sentence's full stop, not the path's
    spoken = _address(host.removeprefix("www."))
    parts = path.rstrip(".").strip("/").split("/")
    return spoken + "".join(" slash " + _address(part) for part in parts if part) + stop


# --- numbers with a meaning ---------------------------------------------------------


def _range(first: str, second: str | None) -> str:
    return number(first) + (" to " + number(second) if second else "")


def _percent(m: re.Match[str]) -> str:
    word = " per mille" if m.group(3) == "‰" else " percent"
    return _range(m.group(1), m.group(2)) + word


def _temperature(m: re.Match[str]) -> str:
    scale = (m.group(2) or "").upper() or ("C" if m.group(3) else "F" if m.group(4) else "")
    name = {"C": "degree Celsius", "F": "degree Fahrenheit"}.get(scale, "degree")
    return number(m.group(1)) + " " + en_unit(name, m.group(1))


def _unit(m: re.Match[str]) -> str:
    count = m.group(2) or m.group(1)
    return _range(m.group(1), m.group(2)) + " " + en_unit(UNITS[m.group(3)][0], count)


def _unit_per(m: re.Match[str]) -> str:
    """ "8 min/mile", "5 L/100km": the counted unit, then "per" the other."""
    per = UNITS[m.group(3)][0] if m.group(3) in UNITS else m.group(3)
    return number(m.group(1)) + " " + en_unit(UNITS[m.group(2)][0], m.group(1)) + " per " + per


def _plural_word(words: str) -> str:
    head, _, last = words.rpartition(" ")
    last = last[:-1] + "ies" if last.endswith("y") else last + ("es" if last.endswith("x") else "s")
    return (head + " " if head else "") + last


def _decade(m: re.Match[str]) -> str:
    n = int(m.group(1))
    if n < 100:
        return _plural_word(cardinal(n))
    return _plural_word(year(n) if n >= 1000 else cardinal(n))


def _ordinal(m: re.Match[str]) -> str:
    n = m.group(1)
    return ordinal(int(n)) if len(n) <= MAX_SPOKEN_DIGITS else digits(n)


_FRACTION_NAMES = {2: ("half", "halves"), 4: ("quarter", "quarters")}
_UNICODE_FRACTIONS = {"½": (1, 2), "¼": (1, 4), "¾": (3, 4), "⅓": (1, 3), "⅔": (2, 3)}


def _fraction_words(num: int, den: int, mixed: bool) -> str:
    singular, plural = _FRACTION_NAMES.get(den, (ordinal(den), ordinal(den) + "s"))
    if num == 1:
        return ("a " if mixed else "one ") + singular
    return cardinal(num) + " " + plural


def _fraction(m: re.Match[str]) -> str | None:
    whole, num, den = m.group(1), int(m.group(2)), int(m.group(3))
    if den == 0 or num == 0:
        return None
    if (num, den) == (24, 7) or num == den:
        spoken = cardinal(num) + " " + cardinal(den)  # "24/7", "50/50"
    elif den >= 100 or den == 10 and not m.string.startswith(" of", m.end()):
        spoken = cardinal(num) + " out of " + cardinal(den)  # a score: "98/100"
    else:
        spoken = _fraction_words(num, den, bool(whole))
    return number(whole) + " and " + spoken if whole else spoken


def _fraction_unit(m: re.Match[str]) -> str | None:
    """ "1/2 tsp" -> "half a teaspoon", "3/4 cup" -> "three quarters of a cup",
    "1 1/2 tsp" -> "one and a half teaspoons" (the unit rule would read "2 tsp")."""
    whole, num, den = m.group(1), int(m.group(2)), int(m.group(3))
    if not 0 < num < den:
        return None
    unit = UNITS[m.group(4)][0]
    if whole:
        return number(whole) + " and " + _fraction_words(num, den, True) + " " + en_unit(unit, "2")
    article = "an" if unit[0] in "aeiou" or unit.startswith("hour") else "a"
    if (num, den) == (1, 2):
        return f"half {article} {unit}"
    return f"{_fraction_words(num, den, False)} of {article} {unit}"


def _unicode_fraction(m: re.Match[str]) -> str:
    num, den = _UNICODE_FRACTIONS[m.group(2)]
    whole = m.group(1)
    spoken = _fraction_words(num, den, bool(whole))
    return number(whole) + " and " + spoken if whole else spoken


def _year_after_word(m: re.Match[str]) -> str | None:
    n = int(m.group(2))
    return f"{m.group(1)} {year(n)}" if 1100 <= n <= 2099 else None


def _era(m: re.Match[str]) -> str:
    return year(int(m.group(1))) + " " + " ".join(m.group(2).upper())  # "B C"


def _number(m: re.Match[str]) -> str:
    text = m.group(0)
    bare = text.lstrip("-−+")
    if "," not in bare and "." not in bare and len(bare) >= _LONG_RUN and bare.rstrip("0")[2:]:
        return digits(bare)  # 5551234567, 4111111111111111: an id, not a quantity
    return number(text)


# --- symbols and abbreviations ------------------------------------------------------

_OPERATORS = {"<=": "is at most", ">=": "is at least", "!=": "is not equal to", "==": "equals",
              "+": "plus", "×": "times", "*": "times", "x": "times", "X": "times", "÷": "divided by",
              "/": "divided by", "=": "equals", "<": "is less than", ">": "is greater than",
              "≤": "is at most", "≥": "is at least", "≠": "is not equal to", "^": "to the power of",
              "±": "plus or minus", "≈": "is about", "~": "to", "～": "to"}
_ANYWHERE = {"=": "equals", "==": "equals", "≠": "is not equal to", "≈": "is about", "±": "plus or minus",
             "≤": "is at most", "≥": "is at least", "×": "times", "÷": "divided by", "&": "and",
             "√": "square root of", "²": "squared", "³": "cubed"}


def _operator(m: re.Match[str]) -> str:
    op = m.group(2)
    if op in "-−–":
        return "minus" if is_minus(m) else "to"
    return _OPERATORS[op]


def _symbol(m: re.Match[str]) -> str:
    return _ANYWHERE[m.group(0)]


_ABBREVIATIONS = {"dr": "Doctor", "mr": "Mister", "mrs": "Missus", "ms": "Miz", "prof": "Professor",
                  "jr": "Junior", "sr": "Senior", "mt": "Mount", "ave": "Avenue", "vs": "versus",
                  "etc": "et cetera", "approx": "approximately", "e.g": "for example", "i.e": "that is"}
_PLACE_BEFORE = re.compile(r"(?:\S\s+[A-Z][a-z]+|\d+[a-z]*)\s+$")  # "Main St.", "221 Baker St."


# Contractions whose apostrophe upstream's clean-up drops, leaving another
# word ("we'll" -> "well", "he'll" -> "hell"): expanded. The rest ("don't",
# "it's", "let's") sound the same without it and stay.
_CONTRACTED = {"ll": "will", "re": "are", "d": "would", "ve": "have", "m": "am"}
_CONTRACTS = {"i": "ll d ve m", "you": "ll re d ve", "we": "ll re d ve", "they": "ll re d ve",
              "he": "ll d", "she": "ll d", "it": "ll d", "who": "ll re d ve", "that": "ll d"}


def _contraction(m: re.Match[str]) -> str | None:
    pronoun, suffix = m.group(1), m.group(2).lower()
    if suffix not in _CONTRACTS.get(pronoun.lower(), "").split():
        return None
    verb = _CONTRACTED[suffix]
    if suffix == "d" and re.match(r"\s+(?:been|better)\b", m.string[m.end():m.end() + 8]):
        verb = "had"  # "I'd been", "you'd better"
    return pronoun + " " + verb


def _abbreviation(m: re.Match[str]) -> str:
    word = m.group(1)
    key = word.lower()
    if key in ("st", "dr"):
        before = m.string[max(0, m.start() - 40):m.start()]  # bounded: linear over the sentence
        is_place = _PLACE_BEFORE.search(before) is not None or before.strip() == ""
        capital_next = re.match(r"\s+[A-Z]", m.string[m.end():]) is not None
        if key == "st":
            spoken = "Saint" if capital_next and not _PLACE_BEFORE.search(before) else "Street"
        else:
            spoken = "Drive" if is_place and before.strip() and not capital_next else "Doctor"
    else:
        spoken = _ABBREVIATIONS[key]
    return _final(m, spoken)


RULES: tuple[Rule, ...] = (
    TAG_RULE,
    rule("bullet", BULLET, lambda m: ""),
    rule("list marker", LIST_MARKER, lambda m: cardinal(int(m.group(1) or m.group(2))) + ","),
    rule("email", r"(?<![\w.+-])([\w.+-]{1,64})@([\w-]{1,63}(?:\.[\w-]{1,63}){1,8})\b",
         lambda m: _address(m.group(1)) + " at " + _address(m.group(2))),
    rule("url", r"\b(?:https?://)?((?:www\.)?[\w-]{1,63}(?:\.[\w-]{1,63}){1,8})((?:/[\w.~-]{0,100}){0,20})"
         r"(?=[\s,;!?)]|\.?$|\.\s)", lambda m: _url(m) if _looks_like_url(m) else None),
    en_more.APPROX_RULE,
    *en_time.DATE_RULES,  # before phone numbers
    rule("phone", r"(?<![\w+])(?:(\+\d{1,3})[\s.-]?)?(?:\((\d{3})\)\s?|(\d{3})[\s.-])"
         r"(\d{3})[\s.-](\d{4})(?!\d)",
         lambda m: ", ".join(digits(g) for g in m.groups() if g)),
    rule("short phone", r"(?<![\w+.,-])(\d{3})-(\d{4})(?![\d-])", lambda m: digits(m.group(1)) + ", "
         + digits(m.group(2))),
    en_more.PHONE_RULE,
    *en_time.TIME_RULES,  # the clock, after them
    rule("code", r"\b((?i:code|pin|otp|passcode))(\s(?i:is)\s|:\s?|\s)(\d{4,12})\b",
         lambda m: m.group(1) + m.group(2) + digits(m.group(3))),
    en_more.PACE_RULE,
    rule("feet and inches", r"(?<![\d.])(\d{1,2})['’′](\d{1,2})(?:[\"”″]|'')",
         lambda m: cardinal(int(m.group(1))) + " foot " + cardinal(int(m.group(2)))),
    en_more.SCIENTIFIC_RULE,  # before the hyphen in "2E-3" is read as a space
    rule("word-number hyphen", r"(?<=[A-Za-z])-(?=\d)", lambda m: " "),  # mid-1990s, COVID-19
    rule("money range", r"(?<![\w$€£¥￥])(" + CURRENCY_SYMBOL_RE + r")(" + UNSIGNED + r")\s?[-–—]\s?("
         + CURRENCY_SYMBOL_RE + r")?(" + UNSIGNED + r")(?:\s?(" + MAGNITUDE_RE + r")\b)?", _money_range),
    rule("money before", r"(?<![\w$€£¥￥])([-−])?(" + CURRENCY_SYMBOL_RE + "|(?:" + CURRENCY_CODE_RE
         + r")\s)\s?(" + UNSIGNED + r")(?:\s?(" + MAGNITUDE_RE + r")\b)?",
         lambda m: _money(m.group(2).strip(), m.group(3), m.group(4), m.group(1))),
    rule("money after", "(" + NUM + r")(?:\s?(" + MAGNITUDE_RE + r")\b)?\s?(" + CURRENCY_CODE_RE
         + r"|€|£)(?![A-Za-z])", _money_after),
    *en_more.RULES,
    rule("percent", "(" + NUM + r")(?:\s?(?:-|–|to)\s?(" + UNSIGNED + r"))?\s?(%|％|‰)", _percent),
    rule("temperature", "(" + NUM + r")\s?(?:°\s?([CcFf])\b|(℃)|(℉)|°)", _temperature),
    rule("decade", r"(?<![\w'])'?(\d{1,3}0)'?s\b", _decade),
    rule("fraction unit", r"(?<![\w/.])(?:(\d++)\s)?(\d{1,2})/(\d{1,2})\s?(" + UNIT_RE + ")" + UNIT_END,
         _fraction_unit),
    rule("unit per", "(" + NUM + r")\s?(" + UNIT_RE + r")/(" + UNIT_RE + r"|[A-Za-z]{2,})\b", _unit_per),
    rule("unit", "(" + NUM + r")(?:\s?(?:-|–|to)\s?(" + UNSIGNED + r"))?\s?(" + UNIT_RE + ")" + UNIT_END,
         _unit),
    rule("ordinal", r"(?<![\w.])(\d++)(?:st|nd|rd|th)\b(?:-(?=[A-Za-z]))?", _ordinal),  # 2nd-highest
    rule("rating", r"(?<![\w/.])(\d{1,3}(?:\.\d{1,2})?)/(\d{1,3})(?=\s?(?:stars?|points?)\b)"
         r"|(?<![\w/.])(\d{1,3}\.\d{1,2})/(\d{1,3})(?![\w/])",
         lambda m: number(m.group(1) or m.group(3)) + " out of " + number(m.group(2) or m.group(4))),
    rule("unicode fraction", r"(?<![\d.])(?:(\d++)\s?)?([½¼¾⅓⅔])", _unicode_fraction),
    rule("fraction", r"(?<![\w/.])(?:(\d++)\s)?(\d{1,3})/(\d{1,3})(?![\w/])", _fraction),
    rule("era", r"(?<![\d.])(\d{1,4})\s?(AD|BC|BCE|CE)\b", _era),
    rule("year", r"\b((?i:in|since|by|until|till|during|circa|year|around|before|after|from|between))"
         r"\s(\d{4})"
         r"(?![\d,.]\d|\s?%|\s?(?:" + UNIT_RE + ")" + UNIT_END + ")", _year_after_word),
    rule("operator", r"(?<=\d)(\s?)(<=|>=|!=|==|[-−–+×*xX÷/=<>≤≥≠^±≈~～])(\s?)(?=[-−]?\d)", _operator),
    rule("ratio", r"(?<![\d:])(\d{1,3}):(\d{1,2})(?![\d:])",
         lambda m: cardinal(int(m.group(1))) + " to " + cardinal(int(m.group(2)))),
    rule("hyphen", r"(?<=\d)-(?=[A-Za-z])", lambda m: " "),  # 5-year-old
    # upstream reads "-" as a comma: "well-known" would pause mid-word
    rule("word hyphen", r"(?<=[A-Za-z])-(?=[A-Za-z])", lambda m: " "),
    rule("contraction", r"\b([A-Za-z]{1,4})['’]([A-Za-z]{1,2})\b", _contraction),
    rule("per", r"(?<![A-Za-z/])/(?=[A-Za-z]{2,})", lambda m: "per"),  # $19.99/month
    rule("emergency", r"\b((?i:call|dial|text|phone))\s(\d{3})\b",
         lambda m: m.group(1) + " " + digits(m.group(2))),  # call 911
    rule("bare year", r"(?<![\d.,$€£¥\w-])(1[5-9]\d\d|20\d\d)(?=[.!?,;:)]|$)",
         lambda m: year(int(m.group(1)))),  # "tips for 2024!"
    rule("times", r"(?<![\w.])(\d++(?:\.\d++)?)[xX]\b", lambda m: number(m.group(1)) + " times"),
    rule("number sign", r"(?:\b[Nn]o\.|#)\s?(?=\d)", lambda m: "number"),
    rule("abbreviation", r"\b(Dr|Mrs|Mr|Ms|Prof|Jr|Sr|Mt|Ave|St|vs|etc|approx|e\.g|i\.e)\.", _abbreviation),
    rule("versus", r"\bvs\b", lambda m: "versus"),
    rule("symbol", r"==|[=≠≈±≤≥×÷&√²³]", _symbol),
    rule("at", r"(?<=\s)@(?=\s)", lambda m: "at"),
    rule("ip address", r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])",
         lambda m: " dot ".join(digits(p) for p in m.group(0).split("."))),
    rule("version", r"(?<![\d.])\d++(?:\.\d++){2,}(?!\d|\.\d)",
         lambda m: " point ".join(number(p) for p in m.group(0).split("."))),
    rule("number", NUM, _number),
    rule("stray digits", r"\d++", lambda m: digits(m.group(0))),  # never left for upstream to drop
)

