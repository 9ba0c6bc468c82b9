"""English readings: the rules, in priority order.

Numbers come last: every rule that gives a number its meaning (a date, a
price, a unit, an ordinal) runs before the plain reading. What no rule
reads is left for upstream (which drops characters the model cannot say).
"""

from __future__ import annotations

import re

from realtime.speech.en import (
    address,
    context,
    contractions,
    dates,
    fractions,
    goods,
    ids,
    money,
    names,
    references,
    shorthand,
    symbols,
    web,
)
from realtime.speech.en.words import cardinal, digits, number, ordinal, plural, year
from realtime.speech.rewrite import TAG_RULE, Rule, keep_final_period, rule, stop_kept
from realtime.speech.units import (
    BULLET,
    LIST_MARKER,
    MAX_SPOKEN_DIGITS,
    NUM,
    TEMPERATURE_SCALES,
    UNIT_END,
    UNIT_RE,
    UNITS,
    UNSIGNED,
    en_unit,
    is_minus,
)

_LONG_RUN = 7  # a digit run this long without separators is an id or phone number


# --- numbers with a meaning ---------------------------------------------------------


def _range(first: str, second: str | None) -> str:
    return number(first) + (" to " + number(second) if second else "")


def _percent(m: re.Match[str]) -> str:
    word = " per mille" if m.group(3) == "‰" else " percent"
    return _range(m.group(1), m.group(2)) + word


def _temperature(m: re.Match[str]) -> str:
    scale = (m.group(3) or "").upper() or ("C" if m.group(4) else "F" if m.group(5) else "")
    name = TEMPERATURE_SCALES.get(scale, "degree")
    return _range(m.group(1), m.group(2)) + " " + en_unit(name, m.group(2) or m.group(1))


def _unit(m: re.Match[str]) -> str:
    count = m.group(2) or m.group(1)
    return _range(m.group(1), m.group(2)) + " " + en_unit(UNITS[m.group(3)][0], count)


# A number right after an operator or a letter belongs to them ("4+5 m2", "Q7s").
_AFTER_OPERATOR = r"(?<![+×*÷=^A-Za-z])(?<![+×*÷^]\s)"


def _dimensions(m: re.Match[str]) -> str | None:
    """ "3 x 4 m", "4x6": "three by four meters", "four by six" (a spaced
    "3 x 4" without a unit is arithmetic, read by the operator rule)."""
    if not m.group(4) and " " in m.group(0):
        return None
    sides = [number(g) for g in m.groups()[:3] if g]
    unit = m.group(4)
    return " by ".join(sides) + (" " + en_unit(UNITS[unit][0], m.group(3) or m.group(2)) if unit else "")


def _unit_per(m: re.Match[str]) -> str:
    """ "8 min/mile", "5 L/100km", "7-9 hrs/night": the counted unit, then "per" the other."""
    per = UNITS[m.group(4)][0] if m.group(4) in UNITS else _PER.get(m.group(4), m.group(4))
    count = m.group(2) or m.group(1)
    return _range(m.group(1), m.group(2)) + " " + en_unit(UNITS[m.group(3)][0], count) + " per " + per


def _decade(m: re.Match[str]) -> str:
    written = m.group(1) or m.group(2)
    bare = len(m.group(0).rstrip("-")) == 3  # "30s", not "'30s" or "1930s"
    if bare and m.start() and not _DECADE_BEFORE.search(m.string, max(0, m.start() - 12), m.start()):
        return number(written) + " seconds"  # "wait 30s", "a timeout of 60s"
    if len(written) == 4 and not 1000 <= int(written) <= 2099:
        return number(written) + " seconds"  # "a TTL of 3600s": no decade
    return _plural_year(written)


# What a bare "30s" follows when it is a decade or an age ("in their 30s", "the 60s and 70s").
# "and", "or", "to" only after another decade: "the 60s and 70s", not "a timeout to 30s".
_DECADE_BEFORE = re.compile(r"(?:\b(?i:the|their|his|her|my|your|our|its|early|mid|late|low|high|upper|lower)"
                            r"|\d0['’]?s\s(?i:and|or|to))[\s-]$")


def _plural_year(written: str) -> str:
    n = int(written)
    if n < 100:
        return plural(cardinal(n))
    return plural(year(n) if n >= 1000 else cardinal(n))


def _suffix(n: int) -> str:
    if 11 <= n % 100 <= 13:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _ordinal(m: re.Match[str]) -> str:
    """ "21st", "2,000th"; a suffix that does not fit ("2th", "5rd") is no
    ordinal: the number, then its letters."""
    n = m.group(1).replace(",", "")
    if len(n) > MAX_SPOKEN_DIGITS:
        return digits(n)
    if m.group(2).lower() != _suffix(int(n)):
        return cardinal(int(n)) + " " + m.group(2)
    return ordinal(int(n))


def _year_range(m: re.Match[str]) -> str | None:
    first, second = m.group(1), m.group(2)
    last = int(first[:2] + second) if len(second) == 2 else int(second)
    if last <= int(first):
        return None  # no range runs down: "2010-05" is no year range
    return year(int(first)) + " to " + (cardinal(int(second)) if len(second) == 2 else year(last))


def _year_after_word(m: re.Match[str]) -> str | None:
    n = int(m.group(2))
    return f"{m.group(1)} {year(n)}" if 1100 <= n <= 2099 else None


def _era(m: re.Match[str]) -> str:
    """ "340 AD", "AD 79" (the era first: "A D seventy nine"), "the 3rd century BC"."""
    if m.group(3):
        return " ".join(m.group(3).replace(".", "").upper()) + " " + _in_era(m.group(4), None)
    if m.group(5) or m.group(6):
        return keep_final_period(m, " ".join((m.group(5) or m.group(6)).replace(".", "")))
    return keep_final_period(m, _in_era(m.group(1), m.group(2)))


def _in_era(written: str, era: str | None) -> str:
    """ "340 AD" -> "three forty A D"; without an era, a year as said."""
    n = int(written)
    if not era:
        return year(n) if n >= 1000 else cardinal(n)
    spoken = year(n) if n >= 1000 or n < 100 or n % 100 < 10 else cardinal(n // 100) + " " + cardinal(n % 100)
    return spoken + " " + " ".join(era.replace(".", "").upper())


def _how_often(m: re.Match[str]) -> str:
    n = int(m.group(1))
    return {1: "once ", 2: "twice "}.get(n, cardinal(n) + " times ")


def _number(m: re.Match[str]) -> str:
    text = m.group(0)
    bare = text.lstrip("-−+")
    if "," not in bare and "." not in bare and len(bare) >= _LONG_RUN and bare.rstrip("0")[2:] \
            and not context.COUNTED.match(m.string, m.end()):
        return digits(bare)  # 5551234567, 4111111111111111: an id; "1001111 people" are counted
    return number(text)


# --- symbols and abbreviations ------------------------------------------------------

# "$20/mo", "£3/wk", "15/kg": what the abbreviation after "per" stands for.
_PER = {"mo": "month", "mos": "month", "yr": "year", "wk": "week", "d": "day", "hr": "hour", "h": "hour",
        "min": "minute", "sec": "second", "ea": "each", "pp": "person", "ppl": "person",
        **{unit: names[0] for unit, names in UNITS.items() if len(unit) > 1 and unit.isalpha()}}

_OPERATORS = {"<=": "is at most", ">=": "is at least", "!=": "is not equal to", "==": "equals",
              "+": "plus", "×": "times", "*": "times", "x": "times", "X": "times", "÷": "divided by",
              "/": "divided by", "=": "equals", "<": "is less than", ">": "is greater than",
              "≤": "is at most", "≥": "is at least", "≠": "is not equal to", "^": "to the power of",
              "±": "plus or minus", "≈": "is about", "~": "to", "～": "to"}
_LEFT = re.compile(r"(\d++)\s?$")
_RIGHT = re.compile(r"\s?[-−]?(\d++)")


def _operator(m: re.Match[str]) -> str:
    op = m.group(2)
    if op in "-−–":
        if is_minus(m):
            return "minus"
        left = _LEFT.search(m.string, max(0, m.start() - 20), m.start())
        right = _RIGHT.match(m.string, m.end() - len(m.group(3)))
        first, second = (left.group(1), right.group(1)) if left and right else ("0", "0")
        if first == second == "50":
            return " "  # "a 50-50 chance": fifty fifty
        if int(first) > max(int(second), 12) and not (len(first) == 4 and len(second) == 2) \
                and not shorthand.is_score(m):
            # "864-2": no range runs down ("1970-85" does: a year shortened; "8-6",
            # "9-1": hours of a clock; "won 105-98": a score)
            return ","
        return "to"
    return _OPERATORS[op]


_ABBREVIATIONS = {"dr": "Doctor", "mr": "Mister", "mrs": "Misses", "ms": "Miz", "prof": "Professor",
                  "jr": "Junior", "sr": "Senior", "mt": "Mount", "ave": "Avenue", "sq": "Square",
                  "vs": "versus",
                  "etc": "et cetera", "approx": "approximately", "e.g": "for example", "i.e": "that is",
                  "cf": "compare", "a.k.a": "also known as",
                  # mid-sentence only ("the name is apt."): see the rule
                  "apt": "apartment", "dept": "department", "govt": "government", "incl": "including",
                  "excl": "excluding", "avg": "average", "misc": "miscellaneous", "pop": "population",
                  "assoc": "associate"}
_PLACE_BEFORE = re.compile(r"(?:\S\s+[A-Z][a-z]+|\d+[a-z]*)\s+$")  # "Main St.", "221 Baker St."


def _abbreviation(m: re.Match[str]) -> str:
    word = m.group(1) or m.group(2) or m.group(3)
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
        first = spoken[0].upper() if word[0].isupper() else spoken[0].lower()
        spoken = first + spoken[1:]  # "Pop. 5,000": Population; "an assoc. prof.": professor
    return keep_final_period(m, spoken)


RULES: tuple[Rule, ...] = (
    TAG_RULE,
    rule("bullet", BULLET, lambda m: ""),
    *ids.PHONE_RULES,  # "(555) 123-4567" is no list marker
    rule("list marker", LIST_MARKER, lambda m: cardinal(int(m.group(1) or m.group(2))) + ","),
    address.WIRE_STATE_RULE,
    shorthand.WIRE_RULE,
    *web.EARLY_RULES,
    ids.NUMBER_SIGN_RULE,
    *address.RULES,
    *shorthand.TITLE_RULES,  # before the words after them are read
    *references.RULES,
    context.APPROX_RULE,
    *shorthand.DATE_RULES,  # before the date rules claim both ends
    *dates.DATE_RULES,  # before phone numbers
    rule("short phone", r"(?<![\w+.,-])(\d{3})-(\d{4})(?![\d-])", lambda m: digits(m.group(1)) + ", "
         + digits(m.group(2))),
    context.RACE_TIME_RULE,
    # "8:15 p.m. ET/5:15 p.m. PT": the second clock after a pause (upstream drops "/")
    rule("zone slash", r"\b([ECMP][SD]?T|UTC|GMT|BST|CES?T)/(?=\s?\d)", lambda m: m.group(1) + ","),
    # "a 1:10 ratio", "odds of 3:1": no clock time
    rule("ratio word", r"(?<![\d:])(\d{1,3}):(\d{1,3}(?:,\d{3})*+)"
         r"(?=\s(?:ratio|odds|split|mix|dilution|scale)\b)"  # "a 1:50,000 scale map"
         r"|(?:(?<=\bratio\sof\s)|(?<=\bodds\sof\s))(\d{1,3}):(\d{1,3})(?![\d:])",
         lambda m: f"{number(m.group(1) or m.group(3))} to {number(m.group(2) or m.group(4))}"),
    *dates.TIME_RULES,  # the clock, after them
    shorthand.FRACTION_INCH_RULE,
    fractions.FRACTION_WORD_RULE,
    *ids.RULES,
    context.PACE_RULE,
    rule("feet and inches", r"(?<![\d.])(\d{1,2})['’′]\s?(\d{1,2})(?:[\"”″]|'')",
         lambda m: cardinal(int(m.group(1))) + " foot " + cardinal(int(m.group(2)))),
    context.MATCH_MINUTE_RULE,  # "scored in 90'", "in the 89'"
    rule("feet before a noun", r"\b((?i:a|an|the|this|that)\s)(\d{1,3})['’′](?=\s[a-z])",
         lambda m: m.group(1) + cardinal(int(m.group(2))) + " foot"),  # "a 6' fence", "a 7' tall man"
    rule("feet mark", r"(?<![\w.'’′])(\d{1,3})['’′](?=\s[a-z]|[,;:)]|\.?$)",
         lambda m: cardinal(int(m.group(1))) + " " + en_unit("foot", m.group(1))),  # "the door is 7' tall"
    context.SCIENTIFIC_RULE,  # before the hyphen in "2E-3" is read as a space
    context.POWER_RULE,
    rule("decade range", r"(?<![\w'])'?(\d{1,3}0)'?s\s?[-–—]\s?'?(\d{1,3}0)'?s\b",
         lambda m: _plural_year(m.group(1)) + " to " + _plural_year(m.group(2))),  # 1970s-90s
    *names.HYPHENED_NAME_RULES,
    rule("word-number hyphen", r"(?<=[A-Za-z])-(?=['’]?\d)", lambda m: " "),  # mid-1990s, COVID-19, mid-'80s
    *shorthand.COMPARISON_RULES,  # "p < 0.05", "< 5 ms": before the numbers are read
    *money.RULES,
    names.NAMED_VERSION_RULE,  # "Python 3.12+" before a count's "at least"
    *context.RULES,
    *goods.RULES,  # '84"W x 38"D', "6 × 330 ml cans": before the inch mark and the units
    *shorthand.COUNTED_RULES,
    rule("percent", "(" + NUM + r")(?:[%％]?\s?(?:-|–|to)\s?(" + UNSIGNED + r"))?\s?(%|％|‰)", _percent),
    rule("temperature", "(" + NUM + r")(?:\s?(?:-|–|to)\s?(" + UNSIGNED + r"))?"
         r"\s?(?:[°º]\s?([CcFf])\b|(℃)|(℉)|[°º])",
         _temperature),
    # "in both °C and °F": a scale named without a number
    rule("scale", r"(?<![\d°º])(?<!\d\s)[°º]\s?([CF])\b",
         lambda m: en_unit(TEMPERATURE_SCALES[m.group(1)], "2")),
    # "Bake at 425 F": an oven's temperature without its degree sign
    rule("oven temperature", r"\b((?i:bake|roast|preheat|oven|broil)\s(?:at|to)\s)(\d{2,3})\s?([CF])\b",
         lambda m: f"{m.group(1)}{number(m.group(2))} " + en_unit(TEMPERATURE_SCALES[m.group(3)], "2")),
    rule("decade", r"(?<![\w'])'?(\d{1,3}0)'?s\b(?:-(?=[a-z]))?|(?<![\w.,])(1\d{2}0|20\d0) s\b", _decade),
    fractions.FRACTION_UNIT_RULE,
    *fractions.FRACTION_WORD_UNIT_RULES,
    *shorthand.SIDES_RULES,
    rule("lumber", r"(?<![\w.])(\d{1,2})x(\d{1,2})s\b",
         lambda m: f"{cardinal(int(m.group(1)))} by {plural(cardinal(int(m.group(2))))}"),  # "2x4s"
    rule("dimensions", r"(?<![\w.])(" + UNSIGNED + r")\s?[x×]\s?(" + UNSIGNED + r")(?:\s?[x×]\s?(" + UNSIGNED
         + r"))?(?:\s?(" + UNIT_RE + ")" + UNIT_END + ")?", _dimensions),  # 3 x 4 m, 4x6
    rule("scaled unit", "(" + NUM + r")\s(thousand|million|billion|trillion)\s(" + UNIT_RE + ")" + UNIT_END,
         lambda m: f"{number(m.group(1))} {m.group(2)} {en_unit(UNITS[m.group(3)][0], '2')}"),
    rule("unit per", _AFTER_OPERATOR + "(" + NUM + r")(?:\s?(?:-|–|to)\s?(" + UNSIGNED + r"))?\s?("
         + UNIT_RE + r")/(" + UNIT_RE + r"|[A-Za-z]{2,})\b", _unit_per),
    shorthand.UNIT_ADJECTIVE_RULE,
    shorthand.ARTICLE_UNIT_RULE,
    rule("unit", _AFTER_OPERATOR + "(" + NUM + r")(?:\s?(?:-|–|to)\s?(" + UNSIGNED + r"))?\s?("
         + UNIT_RE + ")" + UNIT_END + r"(?:\.(?=\s[a-z]))?",  # "3 Tbsp. olive oil": no stop
         _unit),
    rule("floor", r"(?<![\w.,/])(\d{1,3})(?:st|nd|rd|th)\s(?:fl|flr)\.",
         lambda m: ordinal(int(m.group(1))) + " floor" + stop_kept(m)),  # "on the 4th fl."
    rule("ordinals", r"(?<![\w.,/])\d{1,3}(?:st|nd|rd|th)(?:/\d{1,3}(?:st|nd|rd|th))++\b",
         lambda m: ", ".join(ordinal(int(o[:-2])) for o in m.group(0).split("/"))),  # "1st/2nd/3rd"
    rule("ordinal", r"(?<![\w.,/])(\d{1,3}(?:,\d{3})++|\d++)(st|nd|rd|th)\b(?:-(?=[A-Za-z]))?", _ordinal),
    rule("rating", r"(?<![\w/.])(\d{1,3}(?:\.\d{1,2})?)/(\d{1,3})(?=\s?(?:stars?|points?)\b)"
         r"|(?<![\w/.])(\d{1,3}\.\d{1,2})/(\d{1,3})(?![\w/])",
         lambda m: number(m.group(1) or m.group(3)) + " out of " + number(m.group(2) or m.group(4))),
    rule("rated", r"\b((?i:rated|rates|rating|scored|scores?(?:\s(?:of|was|is))?|graded"
         r"|grade(?:\s(?:of|was))?|marks?(?:\s(?:of|was))?):?\s)(\d{1,3}(?:\.\d{1,2})?)/(\d{1,3})(?![\w/]|\s(?:of|the)\b)",
         lambda m: m.group(1) + number(m.group(2)) + " out of " + number(m.group(3))),  # "Rated 4/5"
    *fractions.RULES,
    rule("circa", r"\b(?:c|ca)\.\s?(\d{2,4})(?![\d,.]\d)(?:\s?(A\.D\.?|B\.C\.?|AD|BCE|BC|CE)(?!\w))?",
         lambda m: keep_final_period(m, "circa " + _in_era(m.group(1), m.group(2)))),  # "c. 1200 BCE"
    rule("era", r"(?<![\d.])(\d{1,4})\s?(A\.D\.?|B\.C\.?|AD|BCE|BC|CE)(?!\w)"
         r"|\b(AD|A\.D\.)\s?(\d{1,4})\b(?![\d,.]\d)"
         r"|(?<=century\s)(BCE|BC|AD|CE)\b\.?|(?<=millennium\s)(BCE|BC|AD|CE)\b\.?", _era),
    rule("year range", r"(?<![\w.,-])(1[1-9]\d\d|20\d\d)\s?[-–—]\s?(1[1-9]\d\d|20\d\d|\d\d)(?![\w-]|[.,]\d)",
         _year_range),  # 1990-1995, 1970-85
    rule("year", r"\b((?i:in|since|by|until|till|during|circa|year|around|before|after|from|between))"
         r"\s(\d{4})"
         r"(?![\d,.]\d|\s?%|\s?(?:" + UNIT_RE + ")" + UNIT_END + ")", _year_after_word),
    rule("operator", r"(?<=\d)(\s?)(<=|>=|!=|==|[-−–+×*xX÷/=<>≤≥≠^±≈~～])(\s?)(?=[-−]?\d)", _operator),
    rule("ratio", r"(?<![\d:])(\d{1,3}):(\d{1,2})(?![\d:])",
         lambda m: cardinal(int(m.group(1))) + " to " + cardinal(int(m.group(2)))),
    rule("hyphen", r"(?<=\d)-(?=[A-Za-z])", lambda m: " "),  # 5-year-old
    *shorthand.MARK_RULES,
    # upstream reads "-" as a comma: "well-known" would pause mid-word
    rule("word hyphen", r"(?<=[A-Za-z])[-–](?=[A-Za-z])", lambda m: " "),  # "Paris–London" too
    contractions.RULE,
    shorthand.RATE_RULE,
    rule("per letter", r"(?<=\d)/([A-Za-z])\b(?![/.-]\w)", lambda m: "per " + m.group(1)),  # 5/s
    rule("word per", r"(?<![\w.])(\d++(?:\.\d++)?)\s?([A-Za-z]{1,4})/([A-Za-z]{1,4})\b",
         lambda m: f"{number(m.group(1))} {m.group(2)} per {_PER.get(m.group(3), m.group(3))}"),  # 5 cc/h
    rule("per unit", r"(?<![A-Za-z/])/\s?(" + "|".join(_PER) + r")\b", lambda m: "per " + _PER[m.group(1)]),
    rule("per", r"(?<![A-Za-z/])/(?=[A-Za-z]{2,})", lambda m: "per"),  # $19.99/month
    *web.RULES,
    rule("emergency", r"\b((?i:call|dial|text|phone))\s(\d{3})\b",
         lambda m: m.group(1) + " " + digits(m.group(2))),  # call 911
    rule("short code", r"\b((?i:text|txt|sms)\s\S{1,20}\sto)\s(\d{4,6})\b",
         lambda m: m.group(1) + " " + digits(m.group(2))),  # "text STOP to 12345"
    names.YEAR_BEFORE_NAME_RULE,
    names.YEAR_BEFORE_A_THING_RULE,
    rule("year first", r"^(1[1-9]\d\d|20\d\d)(?=\s(?:was|is|were|saw|for|marked|began|ended|became)\b|,)",
         lambda m: year(int(m.group(1)))),  # "1990 was ...": a year opens the sentence
    rule("bare year", r"(?<![\d.,$€£¥\w#-])(1[1-9]\d\d|20\d\d)(?=[!?,;:)]|\.(?!\d)|$)",
         lambda m: year(int(m.group(1)))),  # "tips for 2024!", "1155" alone
    rule("how often", r"(?<![\w.])(\d{1,2})[xX]\s(?=(?:daily|weekly|monthly|yearly|a\s(?:day|week|month|year)"
         r"|per\s(?:day|week|month|year)|an\shour)\b)", _how_often),  # "2x daily": twice daily
    # "10x faster" is ten times faster; "a 4x zoom", "2x points" keep their "x"
    rule("times", r"(?<![\w.])(\d++(?:\.\d++)?)[xX]\b(?:(?=\s(?:more|less|fewer|as|the|over|faster|slower"
         r"|larger|smaller|bigger|higher|lower|cheaper|better|worse|longer|shorter|quicker|greater|stronger|heavier"
         r"|lighter|safer|denser|EBITDA|earnings|revenue|sales|book|leverage)\b)())?",
         lambda m: number(m.group(1)) + (" times" if m.group(2) is not None else " x")),
    *names.NAME_RULES,  # before "code" reads "49 ers", "v twenty"
    ids.CODE_RULE,
    rule("number sign", r"(?:\b[Nn]o\.|#)\s?(?=\d)", lambda m: "number"),
    rule("abbreviation", r"\b(Dr|Mrs|Mr|Ms|Prof|prof|Jr|Sr|Mt|Ave|Sq|St|(?i:vs|etc|approx|cf)|e\.g|i\.e"
         r"|a\.k\.a)\."
         r"|\b((?i:apt|dept|govt|incl|excl|avg|misc|pop|assoc))\.(?=\s[a-z\d$€£])"
         r"|\b((?i:dept|govt|incl|excl|avg|misc|assoc))\.(?=$|[,;:)])", _abbreviation),  # no word ends there
    *shorthand.SYMBOL_RULES,
    rule("versus", r"\bvs\b|(?<=[a-z]\s)v\.(?=\s[A-Z])", lambda m: "versus"),  # "Roe v. Wade"
    *symbols.RULES,
    rule("at", r"(?<=\s)@(?=\s)", lambda m: "at"),
    rule("ip address", r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?!\d|\.\d)",
         lambda m: " dot ".join(digits(p) for p in m.group(0).split("."))),
    rule("version", r"(?<![\d.])\d++(?:\.\d++){2,}(?!\d|\.\d)",
         lambda m: " point ".join(number(p) for p in m.group(0).split("."))),
    shorthand.SLASH_RULE,
    rule("number", NUM, _number),
    rule("stray digits", r"\d++", lambda m: digits(m.group(0))),  # never left for upstream to drop
)
# A mark alone between two readings (rewrite.run): a dash or tilde is a range
# ("3rd–5th", "20°C~25°C"), a slash, an em dash or a table's "|" a pause ("72°F / 22°C"),
# "@" "at" ("$12@12%"), "x" "by" ('12" x 8"').
JOINTS = {"-": "to", "–": "to", "~": "to", "～": "to", "—": ",", "/": ",", "@": "at", "|": ",", "x": "by",
          "×": "by"}
