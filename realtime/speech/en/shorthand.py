"""English readings of written shorthand: titles, counts, marks and names.

What an LLM writes for a reader and a listener needs said:

- titles before a name ("Sen. Warren", "Lt. Col. Rhodes": capitalised, with
  their dot), "est." (estimated; "Est. 1885": established; "(2023 est.)"),
  a prescription's times ("b.i.d.", "q6h");
- a spaced dash between dates ("Jan 1 - Dec 31": "to"), a year cut to two
  digits ("'08": "oh eight"; a quarter's "Q4 '23" is the quarter rule's);
- counts after a number ("0.5pp", "23 pct", "12 pts", "72 bpm", "25 bps",
  "60 fps", "11 reb"), cents ("50¢"), feet then inches ("5 ft 10 in"),
  pounds then ounces, a dotted "in." ("2 in. of rain"), an inch mark ('a
  6.1" display', a fraction's: '1/4" bit'; not a quotation's closing mark), bearings ("42° N"),
  factorials ("3! = 6"), video codecs ("H.264");
- sizes as adjectives, singular: hyphened ("a 60-min podcast") or after an
  article ("a 2 TB drive"); a unit on each side of an "x" ("12 ft × 14
  ft": twelve by fourteen feet);
- a betting line's "O/U" (over under); a slash before a span of time or an amount of
  a measure: "4 doses/24 hrs" -> "four doses per twenty four hours", "6 L/100km";
  a life's dates ("(b. 1564, d. 1616)": born, died; "r.", "fl."), "Op. 125" (Opus);
- symbols upstream's clean-up would drop or glue: "YoY", "y/y", "w/", a spaced "+",
  "r/python", "p.a.", phone keys ("press * then #"; "a * b" is "times"), comparisons
  ("p < 0.05"), "an A-", arrows, underscores, "10k req/s" and a slash between two words ("cores/32");
  chat shorthand ("btw", "idk", "l8r", "can u"); maths notation is symbols.py's
  (``symbols.NOTATION_RULES`` run here, before "^" is read on its own);
- scores: a dash running down between two numbers after or before a
  result word ("won 105-98", "a 3-2 win", "improving to 45-30 on the season") is "to"
  (``is_score``, for the operator rule).

Each group is placed in ``en.RULES`` where its priority puts it (names below).
"""

from __future__ import annotations

import re

from realtime.speech.en import symbols
from realtime.speech.en.fractions import fraction_words
from realtime.speech.en.web import NUMBERED_BEFORE
from realtime.speech.en.words import cardinal, number, year
from realtime.speech.rewrite import Rule, keep_final_period, rule
from realtime.speech.units import MONTH_RE, NUM, TITLES, UNIT_END, UNIT_RE, UNITS, UNSIGNED, en_unit

# A result, where a number runs down: "won 3-2", "a 105-98 loss", "score: 2-1", "passed 218-214".
_SCORE_BEFORE = re.compile(r"\b(?i:scored?|scores|won|wins?|lost|loses|lose|beat|beats|defeated|leads?|led"
                           r"|trail(?:s|ed)?|drew|tied|went|final|finished|record|victory|votes?|voted|poll"
                           r"|tally|passed|failed|approved|rejected|confirmed|ruled|improv(?:ed|es|ing)"
                           r"|fell|falls|dropped|slipped|climbed|moved)\b(?:\W{1,3}\w+){1,4}$")
_SCORE_AFTER = re.compile(r"\S*\s(?i:wins?|victory|loss|defeat|lead|record|win|vote|decision|final|ruling"
                          r"|majority|margin|split|on\sthe\s(?:season|year|road)|this\s(?:season|year)"
                          r"|at\shome|overall|in\sconference)\b")


def is_score(m: re.Match[str]) -> bool:
    """Whether a dash running down between two numbers is a result ("won 105-98")."""
    before = m.string[max(0, m.start() - 30):m.start()]  # bounded: linear over the sentence
    after = m.string[m.end():m.end() + 30]
    return _SCORE_BEFORE.search(before) is not None or _SCORE_AFTER.match(after) is not None


_COUNT_THEN_PAREN = re.compile(r"\d\s?\($")


def _estimated(m: re.Match[str]) -> str:
    """ "est. cost" -> "estimated cost"; "Est. 1885", a year after it: "Established"."""
    after_count = _COUNT_THEN_PAREN.search(m.string, max(0, m.start() - 4), m.start()) is not None
    word = "established" if m.group(2) and not after_count else "estimated"  # "3,000 (est. 2019)"
    return word.capitalize() if m.group(1)[0] == "E" else word


_DOSES = {"b": "twice a day", "t": "three times a day", "q": "four times a day", "p": "as needed"}
_ORDER_WORDS = {"PO": "by mouth", "BID": "twice a day", "TID": "three times a day", "QID": "four times a day",
                "PRN": "as needed", "QHS": "at bedtime", "QD": "once a day"}
# An order's capitals are its words after a dose ("400 mg PO BID"), not a name elsewhere.
_DOSE_BEFORE = re.compile(r"\d\s?(?:mg|mcg|µg|g|mL|ml|units?|tabs?|tablets?|caps?|capsules?|puffs?|drops?)\b"
                          r"|\b(?:by mouth|a day|as needed|hours|PO|BID|TID|QID)\s$")


def _dosing(m: re.Match[str]) -> str | None:
    if m.group(1):
        hours = cardinal(int(m.group(1))) + (" to " + cardinal(int(m.group(2))) if m.group(2) else "")
        return keep_final_period(m, f"every {hours} hours")
    if m.group(3):
        before = m.string[max(0, m.start() - 30):m.start()]  # bounded: linear over the sentence
        return _ORDER_WORDS[m.group(3)] if _DOSE_BEFORE.search(before) else None
    written = m.group(0).lower()
    return keep_final_period(m, "once a day" if written.startswith("q.d") else _DOSES[written[0]])


def _inches(m: re.Match[str]) -> str | None:
    """ '6.1" display' -> "six point one inch display": a double quote after a number
    is an inch mark unless it closes a quote opened before it ('"I have 5" he said')."""
    if m.group(2) == '"' and inside_quote(m.string[max(0, m.start() - 200):m.start()]):
        return None
    before = m.string[max(0, m.start() - 12):m.start()]  # bounded: linear over the sentence
    after = m.string[m.end():m.end() + 12]
    size = _SIZE_BEFORE.search(before) is not None and after[:1] == " " and not MEASURED_AFTER.match(after)
    unit = en_unit("inch", "1" if size else m.group(1))
    return number(m.group(1)) + (" plus " if m.group(3) else " ") + unit


def _fraction_inch(m: re.Match[str]) -> str | None:
    """ '1/4" bit' -> "quarter inch bit", '3/4" thick' -> "three quarters of an
    inch thick", '1 1/2" pipe' -> "one and a half inch pipe"."""
    whole, num, den = m.group(1), int(m.group(2)), int(m.group(3))
    if den == 0 or inside_quote(m.string[max(0, m.start() - 200):m.start()]):
        return None
    spoken = fraction_words(num, den, bool(whole))
    if whole:
        return number(whole) + " and " + spoken + " inch"
    after = m.string[m.end():m.end() + 12]
    before = m.string[max(0, m.start() - 12):m.start()]
    if after[:1] == " " and (not MEASURED_AFTER.match(after) or _SIZE_BEFORE.search(before)):
        return spoken.removeprefix("one ") + " inch"  # a size before its noun: 'a 1/4" thick board'
    return ("half an inch" if (num, den) == (1, 2) else spoken.replace("one ", "a ", 1) + " of an inch")


def inside_quote(before: str) -> bool:
    """Whether a quotation is open at the end of ``before``: a '"' opens one
    unless it follows a digit (an inch mark), and closes an open one."""
    open_ = False
    for i, ch in enumerate(before):
        if ch != '"':
            continue
        if open_:
            open_ = False
        elif not (i and before[i - 1].isdigit()):
            open_ = True
    return open_


# 'a 27" monitor': a size before a noun, singular; '65" wide', 'by 10"', '2" more': lengths.
_SIZE_BEFORE = re.compile(r"\b(?i:a|an|the|this|that|my|your|his|her|our|their|its)\s$")
MEASURED_AFTER = re.compile(r"\s(?:wide|long|tall|high|deep|thick|across|by|x|×|diagonal)\b")


def _dotted_inches(m: re.Match[str]) -> str:
    upper = " to " + number(m.group(2)) if m.group(2) else ""
    return keep_final_period(m, number(m.group(1)) + upper + " " + en_unit("inch", m.group(2) or m.group(1)))


def _short_year(m: re.Match[str]) -> str:
    """ "'08" -> "oh eight", "'99" -> "ninety nine"."""
    n = int(m.group(1))
    return "oh " + cardinal(n) if n < 10 else cardinal(n)


def _key(m: re.Match[str]) -> str:
    """A phone key standing alone: "press * then #" -> "star", "pound"; a spaced "*"
    between two operands with no key word before it is "times" ("a * b")."""
    before = m.string[max(0, m.start() - 30):m.start()]  # bounded: linear over the sentence
    if m.group(0) == "*":
        operands = (re.search(r"(?:\b[A-Za-z]|[\d)])\s$", before)
                    and re.match(r"\s(?:[A-Za-z](?!\w)|[\d(])", m.string[m.end():m.end() + 3]))
        return "times" if operands and not _KEY_WORDS.search(before) else "star"
    if NUMBERED_BEFORE.search(before):
        return "number"  # "issue #42a" (the code rule took "42a")
    return "pound" if _KEY_WORDS.search(before) else "hash"


_KEY_WORDS = re.compile(r"\b(?i:press|hit|dial|tap|key|enter|then)\b")

# After a number: "0.5pp", "23 pct", "12 pts".
_COUNTED = {"pp": "percentage points", "pct": "percent", "pts": "points", "ppts": "percentage points",
            "bpm": "beats per minute", "★": "stars", "☆": "stars", "bps": "basis points",
            "bp": "basis points", "fps": "frames per second", "reb": "rebounds", "ast": "assists",
            "stl": "steals", "blk": "blocks"}


def _counted(m: re.Match[str]) -> str:
    word = _COUNTED[m.group(2) or m.group(3)]
    if m.group(1).lstrip("+") in ("1", "1.0"):  # "1★", "1 bp": the counted word singular
        head, per, tail = word.partition(" per ")
        word = (head[:-1] + per + tail) if per else re.sub(r"s$", "", word)
    return keep_final_period(m, number(m.group(1)) + " " + word)


_PER_WORD = {**{u: UNITS[u][0] for u in ("lbs", "lb", "oz", "kg", "km", "mi", "hrs", "hr", "min", "mins",
                                         "sec", "secs", "sq ft", "ft", "yd", "gal", "tsp", "tbsp")},
             "qt": "quart", "pt": "pint", "mo": "month", "yr": "year", "wk": "week"}
# "10k req/s": the counted word and the time it is per.
_PERIODS = {"yr": "year", "mo": "month", "wk": "week"}
_RATED = {"req": "requests", "reqs": "requests", "ops": "operations", "tok": "tokens", "msg": "messages",
          "msgs": "messages", "it": "iterations", "img": "images", "txn": "transactions",
          "txns": "transactions", "tx": "transactions"}
_PER_TIME = {"s": "second", "sec": "second", "min": "minute", "h": "hour", "hr": "hour"}
_COMPASS = {"N": "north", "S": "south", "E": "east", "W": "west"}
# Chat shorthand an assistant echoes back: said in full.
_CHAT = {"brb": "be right back", "idk": "I don't know", "tbh": "to be honest", "tmrw": "tomorrow",
         "thx": "thanks", "bday": "birthday", "btw": "by the way", "imo": "in my opinion",
         "imho": "in my humble opinion", "afaik": "as far as I know", "ttyl": "talk to you later",
         "tix": "tickets", "l8r": "later", "gr8": "great", "ppl": "people", "ngl": "not gonna lie",
         "eod": "end of day", "b4": "before", "2day": "today", "2morrow": "tomorrow", "pls": "please",
         "plz": "please", "rn": "right now", "u": "you", "ur": "your"}


def _chat(m: re.Match[str]) -> str:
    said, written = _CHAT[m.group(0).lower()], m.group(0)
    # "Thx", "Btw" keep their capital; "BTW" only where a sentence starts
    capital = written[0].isupper() and (m.start() == 0 or not written.isupper())
    return said[0].upper() + said[1:] if capital else said


_LIFE = {"b": "born", "d": "died", "r": "reigned", "fl": "flourished"}
_WIRES = {"prnewswire": "PR Newswire", "businesswire": "Business Wire", "globenewswire": "Globe Newswire",
          "accesswire": "Access Wire", "newsfile": "Newsfile"}
_SHORTHAND = {"YoY": "year over year", "QoQ": "quarter over quarter", "w/": "with", "w/o": "without",
              "WWI": "World War One", "WWII": "World War Two", "y/y": "year over year",
              "q/q": "quarter over quarter", "m/m": "month over month", "O/U": "over under",
              "YTD": "year to date", "A/B": "A B", "I/O": "I O", "P/E": "P E", "N/A": "not applicable",
              "b/w": "between", "K/D": "K D"}


def _shorthand(m: re.Match[str]) -> str | None:
    return _SHORTHAND.get(m.group(0))  # "y/q" is none


# Before the words after them are read: their lookahead sees only text not yet rewritten.
# A press release's dateline: "NEW YORK, Dec. 4, 2026 /PRNewswire/ --" (before a path is read).
WIRE_RULE = rule("wire", r"\s?/((?i:PR\s?Newswire|Business\s?Wire|Globe\s?Newswire|Accesswire|Newsfile))/",
                 lambda m: ", " + _WIRES.get(m.group(1).lower().replace(" ", ""), m.group(1)) + ",")
TITLE_RULES: tuple[Rule, ...] = (
    # a life's dates: "(b. 1564, d. 1616)", "(r. 1558–1603)", "(fl. 8th century BC)"; a work's "Op. 125"
    rule("life dates", r"(?:(?<=\()|(?<=[,;]\s))(b|d|r|fl)\.\s?(?=(?:c\.\s?|ca\.\s?)?\d)",
         lambda m: _LIFE[m.group(1)] + " "),
    rule("opus", r"\b(Op|op)\.\s?(?=\d)", lambda m: "Opus " if m.group(1) == "Op" else "opus "),
    rule("chat number", r"\b(?:l8r|gr8|b4|2day|2morrow)\b", _chat),  # before a digit is read: "l8r"
    # "max 4 doses/24 hrs", "6 L/100km", "kcal/100g": a slash before a span of time or an
    # amount of a measure is "per" (upstream drops it)
    rule("per time", r"(?<=[A-Za-z])/(?=\d{1,3}\s?(?:hrs?|hours?|h|days?|wks?|weeks?|mins?|minutes?|mos?"
         r"|months?|yrs?|years?|km|kms|mi|miles?|g|kg|lbs?|oz|ml|mL|L)\b)", lambda m: " per "),
    rule("title", r"\b(" + "|".join(TITLES) + r")\.(?=\s[A-Z])", lambda m: TITLES[m.group(1)]),
    rule("estimated", r"\b([Ee]st)\.(?=\s(?:(1[5-9]\d\d|20\d\d)\b|[a-z$€£¥\d]))", _estimated),
    # a prescription's times: "10 mg b.i.d.", "q6h", "q4-6h", "p.r.n." (before "6h" is read as hours)
    rule("dosing", r"\b(?:(?i:b\.i\.d|t\.i\.d|q\.i\.d|p\.r\.n|q\.d)(?!\w)\.?|q(\d{1,2})(?:[-–](\d{1,2}))?h\b"
         r"|(PO|BID|TID|QID|PRN|QHS|QD)\b)", _dosing),  # "400 mg PO q6–8h PRN"
    rule("year's estimate", r"(?<=\()(1[5-9]\d\d|20\d\d)\s[Ee]st\.?(?=\))",
         lambda m: year(int(m.group(1))) + " estimate"),  # "pop. 1,204,000 (2023 est.)"
)
# Before the date rules claim both ends (upstream would pause on "-").
DATE_RULES: tuple[Rule, ...] = (
    rule("date range", r"(?<=\d)\s?[-–—]\s?(?=" + MONTH_RE + r"\.?\s\d)", lambda m: " to "),
    rule("short year", r"(?<![\w'’])(?<!Q[1-4]\s)(?<!H[12]\s)(?<![FC]Y\s)['’](\d{2})\b(?!['’]?s\b|['’]|\d)",
         _short_year),
)
# Before the inch mark is read on its own ('4"').
FRACTION_INCH_RULE = rule("fraction inch", r"(?<![\w/.])(?:(\d++)[\s-])?(\d{1,2})/(\d{1,2})[\"”″]",
                          _fraction_inch)
# Before percent, temperature and the units.
COUNTED_RULES: tuple[Rule, ...] = (
    # "(3.2)%": an accountant's negative (upstream would drop the "%" after the bracket)
    rule("negative percent", r"(?<![\w)])\((" + UNSIGNED + r")\)\s?%", lambda m: "minus " + number(m.group(1))
         + " percent"),
    rule("cents", "(" + NUM + r")\s?¢", lambda m: number(m.group(1)) + " " + en_unit("cent", m.group(1))),
    rule("counted", "(" + NUM + r")\s?(?:(pp|ppts|pct|pts|bpm|bps|bp|fps|reb|ast|stl|blk)\b|([★☆]))\.?",
         _counted),
    rule("feet then inches", r"(?<![\d.])(\d{1,2})\s?ft\.?\s(\d{1,2})\s?in\b\.?",
         lambda m: keep_final_period(m, f"{cardinal(int(m.group(1)))} {en_unit('foot', m.group(1))} "
                             f"{cardinal(int(m.group(2)))} {en_unit('inch', m.group(2))}")),
    # "1-2 in. of rain": a dotted "in" after a number, mid-sentence or last
    rule("inches abbreviated", "(" + NUM + r")(?:\s?[-–]\s?(" + UNSIGNED + r"))?\s?in\.(?=\s[a-z]|$|[,;:)])",
         _dotted_inches),
    rule("pounds then ounces", r"(?<![\d.])(\d{1,3})\s?lbs?\.?\s(\d{1,2})\s?oz\b\.?",
         lambda m: keep_final_period(m, f"{cardinal(int(m.group(1)))} {en_unit('pound', m.group(1))} "
                                        f"{cardinal(int(m.group(2)))} {en_unit('ounce', m.group(2))}")),
    rule("inch range", r"(?<![\w.'’′])(\d{1,3}(?:\.\d{1,2})?)[\"″]\s?[-–—]\s?(\d{1,3}(?:\.\d{1,2})?)[\"″]",
         lambda m: f"{number(m.group(1))} to {number(m.group(2))} {en_unit('inch', m.group(2))}"),  # 3"–5"
    rule("cups", "(" + NUM + r")\s?c\.(?=\s[a-z])",
         lambda m: number(m.group(1)) + " " + en_unit("cup", m.group(1))),  # "2 c. flour"
    rule("inches", r"(?<![\w.'’′])(\d{1,3}(?:\.\d{1,2})?)([\"″])(\+)?(?=\s[A-Za-z\d]|[,.;:)]|$)",
         _inches),  # '12"+': twelve plus inches
    rule("coordinate", "(" + NUM + r")\s?°\s?([NSEW])\b(?!['’])",
         lambda m: number(m.group(1)) + " " + en_unit("degree", m.group(1)) + " " + _COMPASS[m.group(2)]),
    rule("factorial", r"(?<![\w.])(\d{1,3})!(?=\s?[=×*+/])",
         lambda m: cardinal(int(m.group(1))) + " factorial"),  # "3! = 6"
    rule("video codec", r"\bH\.(26[1-6])\b", lambda m: "H two " + cardinal(int(m.group(1)[1:]))),
)
# A noun after a size or an amount: a word that is no function word ("of", "in",
# "a": "$5 a month" is no adjective), so it is singular ("a 2 TB drive", "a $5 bill").
NOUN_AFTER = (r"(?=\s(?!(?i:of|in|on|at|for|and|or|to|per|is|was|are|were|each|a|an|the|with|from|by|as)\b)"
              r"[A-Za-z]|\s$)")  # or a reading after it ("a 2.5L 4-cyl engine")
NOUN_NEXT = re.compile(NOUN_AFTER)  # for readers: a noun at the match's end
# "a 60-min podcast", "12-oz. cans", "15-yr 6.1%" (a reading after it: the span ends in a space):
# singular, as an adjective (before the unit rule)
UNIT_ADJECTIVE_RULE = rule("unit adjective", r"(?<![\w.,-])(" + UNSIGNED + r")-(" + UNIT_RE + ")" + UNIT_END
                           + r"\.?(?=\s[A-Za-z\d$€£]|\s$)",
                           lambda m: number(m.group(1)) + " " + UNITS[m.group(2)][0])


def _sides(m: re.Match[str]) -> str:
    """ "12 ft × 14 ft" -> "twelve by fourteen feet"; "2 m x 50 cm": each its own unit."""
    sides = [(m.group(i), UNITS[m.group(i + 1)][0]) for i in (1, 3, 5) if m.group(i)]
    same = len({unit for _, unit in sides}) == 1
    said = [number(n) + ("" if same and k < len(sides) - 1 else " " + en_unit(unit, n))
            for k, (n, unit) in enumerate(sides)]
    return " by ".join(said)


_SIDE = r"(" + UNSIGNED + r")\s?(" + UNIT_RE + ")" + UNIT_END
# Before the dimensions and the units: a unit on each side of the "x", or a word
# hyphened to both sides ("a 9x13-inch pan").
SIDES_RULES: tuple[Rule, ...] = (
    rule("sides", r"(?<![\w.])" + _SIDE + r"\s?[x×]\s?" + _SIDE + r"(?:\s?[x×]\s?" + _SIDE + ")?", _sides),
    rule("sides before a word", r"(?<![\w.])(" + UNSIGNED + r")\s?[x×]\s?(" + UNSIGNED + r")-(?=[a-z])",
         lambda m: f"{number(m.group(1))} by {number(m.group(2))} "),
)
# "a 2 TB drive", "the 10 km race": a size before its noun is singular too
ARTICLE_UNIT_RULE = rule("unit after an article", r"\b((?i:a|an|the|this|that)\s)(" + UNSIGNED
                         + r")\s?(" + UNIT_RE + ")" + UNIT_END + NOUN_AFTER,
                         lambda m: m.group(1) + number(m.group(2)) + " " + UNITS[m.group(3)][0])
# After the abbreviations, before the symbols' own reading.
SYMBOL_RULES: tuple[Rule, ...] = (
    rule("shorthand", r"\b(?:YoY|QoQ|YTD|WWII|WWI|[yqm]/[yqm]|O/U|A/B|I/O|P/E|N/A|K/D|b/w(?=\s\d))\b"
         r"|(?<!\S)w/o?(?=\s)", _shorthand),
    rule("chat", r"\b(?:[Bb]rb|[Ii]dk|[Tt]bh|[Tt]mrw|[Tt]hx|[Bb]day|[Bb]tw|[Ii]mo|[Ii]mho|[Aa]faik|[Tt]tyl"
         r"|tix|BRB|IDK|TBH|BTW|IMHO|AFAIK|TTYL|[Pp]pl|[Nn]gl|EOD|[Pp]ls|[Pp]lz|ur(?=\s[a-z])"
         r"|(?<=\s)rn(?=[,.!?;]|$))\b", _chat),  # not IMO, THX: names too
    # chat's "u" and "ur" beside a verb: "can u", "thank u", "u free?", "c u l8r" (a lone "u" is
    # a variable elsewhere)
    rule("chat you", r"\b((?i:can|did|are|see|pay|send|tell|give|miss|love|will|would|could|thank|c)\s)"
         r"(ur?)\b|\b()(ur?)(?=\s(?:free|there|ok|okay|coming|going|know|want|need|can|r|are)\b)",
         lambda m: ("see " if m.group(1) in ("c ", "C ") else m.group(1) or m.group(3))
         + _CHAT[m.group(2) or m.group(4)]),
    *symbols.NOTATION_RULES,
    rule("plus", r"(?<!\S)\+(?=\s)", lambda m: "plus"),  # "a + b", "Ctrl + C"
    rule("grade minus", r"(?<=\s)([A-D])-(?=[\s,;:.!?)]|$)", lambda m: m.group(1) + " minus"),  # "an A-"
    rule("subreddit", r"(?<![\w/])([ru])/(?=\w{2,})", lambda m: m.group(1) + " slash "),  # r/python
    rule("per annum", r"\bp\.a\.", lambda m: keep_final_period(m, "per year")),
    rule("phone key", r"(?<=[\s,;:(])[*#](?=$|[\s,.;:!?)])", _key),  # "press * then #"
    # "3 tbsp per lb of meat"
    rule("per unit word", r"\bper\s(lbs?|oz|kg|km|mi|hrs?|mins?|secs?|sq ft|ft|yd|gal|qt|pt|tsp|tbsp|mo|yr"
         r"|wk)\b(?!\.\w)\.?", lambda m: keep_final_period(m, "per " + _PER_WORD[m.group(1)])),
    # "last yr.", "this wk": the period after a word that places it (not "5 yrs", the unit rule's)
    rule("period word", r"\b((?i:last|this|next|every|each)\s)(yr|mo|wk)\b(?!\.\w)\.?",
         lambda m: keep_final_period(m, m.group(1) + _PERIODS[m.group(2)])),
    rule("tl;dr", r"\b(?i:tl;\s?dr)\b", lambda m: "T L D R"),  # its ";" would be read as a pause
    rule("ellipsis", r"…", lambda m: "..."),  # upstream keeps three dots, drops the one mark
    rule("arrow", r"\s?(?:->|=>|→|⇒|⟶)\s?", lambda m: " to "),
    rule("underscore", r"(?<=[A-Za-z\d])_++(?=[A-Za-z\d])", lambda m: " underscore "),
)
# "p < 0.05", "pip>=23", "< 5 ms": after a variable or a number "is less than",
# after a word or alone "less than" (between two numbers the operator rule's).
_COMPARED = {"<": "less than", ">": "greater than", "<=": "at most", ">=": "at least", "≤": "at most",
             "≥": "at least"}
_VARIABLE_BEFORE = re.compile(r"(?:\b[A-Za-z]|[\d)])\s?$")
_TAG_OPEN = re.compile(r"</?[A-Za-z]\w*$")
_ASKED = re.compile(r"\b(?i:is|was|are|were|be)\s[A-Za-z\d]\s?$")  # "Is x < 5?": the verb is there


def _comparison(m: re.Match[str]) -> str | None:
    op = m.group(1)
    before = m.string[max(0, m.start() - 12):m.start()]  # bounded: linear over the sentence
    if _TAG_OPEN.search(before):
        return None  # "<b>x": a markup tag's end
    if _VARIABLE_BEFORE.search(before) and not _ASKED.search(before):
        return "is " + _COMPARED[op]
    return "more than" if op == ">" else _COMPARED[op]


COMPARISON_RULES: tuple[Rule, ...] = (
    rule("heart", r"(?<=\bI\s)(?:<3(?![\d.,])|[❤♥]\ufe0f?)", lambda m: "love"),  # "I <3 NY", "I ❤️ NY"
    rule("comparison", r"(?<![<>=!-])(<=|>=|[<>≤≥])(?![<>=])(?!<[-−])\s?"
         r"(?=[-−+]?[$€£¥]?\.?\d|[A-Za-z](?![\w>]))", _comparison),
)

# Before "word per" reads "50 tok/s" as letters.
RATE_RULE = rule("rate word", r"\b(req|reqs|ops|tok|tokens|msgs?|queries|writes|reads|frames|samples|it|img"
                 r"|images|calls|events|txns?|tx)/(s|sec|min|h|hr)\b",
                 lambda m: f"{_RATED.get(m.group(1), m.group(1))} per {_PER_TIME[m.group(2)]}")  # "10k req/s"

# "cores/32" (last of the slashes: upstream would glue the words)
SLASH_RULE = rule("slash", r"(?<=\w)/(?=\w)", lambda m: " slash ")


# Marks upstream drops or reads wrong, between words: a pause or a word.
MARK_RULES: tuple[Rule, ...] = (
    # upstream drops a dash: "Americans—roughly" would be one word, "late – very late" no pause
    # "40% — today only": a reading before it; "WASHINGTON (AP) — The"; "fat — ~2,350": an em
    # dash before a reading (an en dash there is a range's joint)
    rule("em dash", r"(?<=[A-Za-z\d])[—―](?=[A-Za-z\d])|(?:(?<=\S)|^)\s(?:[–—―]\s(?=[A-Za-z\d\"'“‘(~≈$€£¥#+])"
         r"|[—―]\s$)", lambda m: ", "),
    rule("logical", r"(?<=[\w)\s])(?:&&|\|\|)(?=[\w(\s])",
         lambda m: "and" if m.group(0) == "&&" else "or"),  # "a && b", "a || b"
    rule("table cell", r"(?<=\S)\s*\|\s*(?=\S|$)", lambda m: ", "),  # "| Pro | $25/mo |": cells, paused
)
