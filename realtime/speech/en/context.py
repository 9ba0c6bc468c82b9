"""English readings that give a number its meaning from the word around it.

- Roman numerals after a name: "Louis XIV" -> "Louis the fourteenth" (a
  monarch's or pope's name), "World War II" -> "World War two" (any other
  capitalised word). Only I, V and X (1-39), so "CD", "MIX" and "DC" stay
  letters; a lone "I" is a numeral only after a monarch's name and before
  punctuation, "of", "and" or a bracket ("Elizabeth I of England", "Francis I
  (1494–1547)"), never "Then I".
- A numbered part before a Roman numeral: "Vol. III", "Ch. XII" (references.py
  reads "Vol. 2", "pp. 10-12" and scripture's verses).
- Weather and trade: "985 mb" -> "nine hundred eighty five millibars" (a pressure's
  range: "a 5 mb file" stays letters), "12 kt" -> "twelve knots" ("18kt gold": karat, "a
  15 kt bomb": kiloton); a match's minute: "in the 89'" -> "in the eighty ninth minute".
- Magnitudes written onto a number: "3.4M users", "2.1bn", "500k", "1.2K"
  -> "three point four million", ... A lone digit keeps its letter ("3M",
  "4K video"), so does a race ("a 10k run", "the 10k."), and "B" needs a
  decimal ("2.5B"): "221B Baker Street" and seat "14B" are names; before
  things counted either is a magnitude ("7B parameters", "3M users").
- Durations that cannot be clock times: "25:03" -> "twenty five minutes,
  three seconds", "in 22:41" (no clock is "in" an hour past noon); "24:00"
  is midnight (a ratio keeps one-digit parts: "16:9"); a pace "5'01\"" ->
  "five minutes, one second" (feet and inches never write "01").
- Video resolutions ("1080p" -> "ten eighty p"), "90+" -> "ninety plus" (with
  a degree sign, a percent or a unit of time after it: "40+ °C", "10+ hrs"),
  "ext. 123" -> "extension one two three", ages ("35 y/o" -> "thirty five
  years old", "a 6yo boy" -> "a six year old boy").
- Hours and minutes: "3h20min", "2h 5m" -> "three hours twenty minutes";
  minutes and seconds: "2m 34s".
- Scientific notation: "3×10^8 m/s", "1.5e6" -> "three times ten to the
  power of eight meters per second", "one point five times ten to the
  power of six".
- Blood pressure: "120/80 mmHg", "blood pressure was 140/90", "BP 120/80" -> "one
  hundred twenty over eighty millimeters of mercury", ... (not a fraction).
- Flight numbers in pairs ("flight UA 857": eight fifty seven); a flight level ("FL350" -> "flight
  level three five zero").
- A countdown: "T-minus 10:00" -> "T minus ten minutes".
- A pilot's numbers digit by digit: "runway 27L" -> "runway two seven left", "squawk
  7700", "wind 270 at 15" (its direction).
- Cricket: "287/4 (50 ov)" -> "two hundred eighty seven for four (fifty overs)", a bowler's
  "5/32 in 10 overs" -> "five for thirty two", "103* off 98" -> "one hundred three not out".
- A car's sheet: "27/35 mpg city/hwy" -> "twenty seven, thirty five miles per gallon
  city, highway", "4-cyl" -> "four cylinder", a tire's "225/65R17" -> "two twenty five
  sixty five R seventeen".
- A batting average after a word that hits or averages: "hit .312" -> "hit three twelve",
  "a .250 hitter"; a caliber: ".45 caliber" -> "forty five caliber", ".308 Winchester".
- A listing's rooms: "3BR/2BA" -> "three bedroom, two bath", "2.5 ba" -> "two and a
  half bath"; a PCIe link's width: "PCIe 4.0 x16", "x8 lanes" -> "by sixteen", "by eight".
"""

from __future__ import annotations

import re
from collections.abc import Callable

from realtime.speech.en.dates import counted
from realtime.speech.en.shorthand import NOUN_NEXT
from realtime.speech.en.words import cardinal, digits, number, ordinal, pairs, plural, scaled
from realtime.speech.rewrite import Rule, keep_final_period, rule
from realtime.speech.units import (
    MAGNITUDE_WORDS,
    MAGNITUDES,
    SUPERSCRIPT_DIGITS,
    SUPERSCRIPT_POWER,
    TEMPERATURE_SCALES,
    UNIT_END,
    UNIT_RE,
    UNITS,
    en_unit,
)

# First names that take a regnal number: "the fourteenth", not "fourteen".
_REGNAL_NAMES = (
    "Louis Henry Elizabeth George Edward Charles William James Richard John Paul Pius Leo Benedict "
    "Gregory Innocent Clement Peter Frederick Philip Ferdinand Alexander Nicholas Ivan Catherine Mary "
    "Victor Emmanuel Wilhelm Napoleon Alfonso Juan Carlos Gustav Christian Olaf Harald Haakon Rama "
    "Ramesses Ptolemy Constantine Justinian Otto Rudolf Sancho Boniface Urban Sixtus Adrian Martin "
    "Felix Stephen Edmund Malcolm David Robert Kamehameha Selim Mehmed Suleiman Murad Ahmed Francis "
    "Joseph Anne Victoria Isabella Margaret Frederik Ludwig Maximilian Karl Franz Willem Baudouin "
    "Albert Leopold Umberto Pedro Manuel Sebastian Casimir Sigismund Vladislaus Boleslaus Wenceslaus "
    "Ottokar Eric Magnus Canute Sweyn Valdemar Haile Mohammed Hassan Abdullah Hussein Farouk Fuad "
    "Amenhotep Thutmose Seti Tiglath Shalmaneser Sargon Antiochus Seleucus Cleopatra Herod Akbar")
_REGNAL = frozenset(_REGNAL_NAMES.split())
# Capitalised words after which "IV" or "II" is no number: "The IV was in", "A IV".
_FUNCTION_WORDS = ("The A An And Or Of In On At To For With By From His Her My Your Our Their "
                   "This That These Those Its No Not Is Was Be Get Got Any Some Via Per As If "
                   "So But Then When While Where What Who Why How")
_NOT_BEFORE = frozenset(_FUNCTION_WORDS.split())
_ROMAN = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100}
# Words that number what follows with any numeral up to 399 ("Part XL", "Chapter XC").
_NUMBERED = ("Part Chapter Book Volume Act Scene Article Title Phase Stage Level Round Section Unit "
             "Lesson Appendix Episode Season Bowl Schedule Canto Psalm Amendment")
_NUMBERED_RE = "|".join(w for word in _NUMBERED.split() for w in (word, word.upper()))
_NUMBERING_WORDS = {"Vol.": "Volume", "Ch.": "Chapter", "Chap.": "Chapter", "Pt.": "Part", "Bk.": "Book",
                    "Art.": "Article"}


def roman_value(numeral: str) -> int:
    """ "XIV" -> 14 (subtractive pairs: a smaller value before a larger)."""
    total = 0
    for i, c in enumerate(numeral):
        value = _ROMAN[c]
        total += -value if i + 1 < len(numeral) and _ROMAN[numeral[i + 1]] > value else value
    return total


def _roman(m: re.Match[str]) -> str | None:
    name, numeral = m.group(1), m.group(2)
    if not numeral or name in _NOT_BEFORE:
        return None
    regnal = name in _REGNAL
    if len(numeral) == 1:
        after = m.string[m.end():m.end() + 5]
        if not regnal or numeral == "I" and not re.match(r"[,.;:!?)]|$|\s(?:of|and|\()", after):
            return None
    n = roman_value(numeral)
    return f"{name} the {ordinal(n)}" if regnal else f"{name} {cardinal(n)}"


_RACE = re.compile(r"\s?(?:runs?|races?|runners?|walks?)\b|[.,;:!?)]|$")
# Before things counted, a letter is a magnitude on one digit or as "B" too: "7B parameters".
COUNTED = re.compile(r"\s(?:parameters|params|tokens|users|people|downloads|views|visits|visitors"
                     r"|subscribers|followers|customers|records|rows|images|samples|requests|queries"
                     r"|messages|transactions|devices|installs|words|lines|stars|dollars|years|residents"
                     r"|inhabitants|cases|deaths|votes|copies|units|items|pages|times|miles|tons|barrels)\b")
_ARTICLE = re.compile(r"\b(?:[Tt]he|[Aa]n?)\s$")


def _magnitude(m: re.Match[str]) -> str | None:
    amount, suffix = m.group(1), m.group(2)
    whole = amount.replace(",", "").partition(".")[0]
    decimal = "." in amount
    if not decimal and (suffix == "B" or len(whole) < 2) and not COUNTED.match(m.string, m.end()):
        return None
    before = m.string[max(0, m.start() - 4):m.start()]  # bounded: linear over the sentence
    if suffix == "k" and not decimal and (_RACE.match(m.string, m.end()) or _ARTICLE.search(before)):
        return None  # "a 10k run", "the 10k.": a distance, read "ten K" ("1.2k," is a count)
    return scaled(amount) + " " + MAGNITUDE_WORDS[MAGNITUDES[suffix]]


def _years_old(m: re.Match[str]) -> str:
    """ "35 y/o." -> "thirty five years old"; before its noun "a 6yo boy" -> "six year old"."""
    n = int(m.group(1))
    noun = re.match(r"\s[a-z]", m.string[m.end():m.end() + 2]) is not None
    return cardinal(n) + (" year old" if noun or n == 1 else " years old")


# Units of time an "at least" count may carry ("10+ hrs"); "5+ in" may be a word.
_TIME_UNITS = "sec|secs|min|mins|hr|hrs|wk|wks|mo|mos|yr|yrs"


def _at_least(m: re.Match[str]) -> str:
    scale = m.group(2) or ("C" if m.group(3) else "F" if m.group(4) else None)
    name = TEMPERATURE_SCALES[scale] if scale else UNITS[m.group(6)][0] if m.group(6) else None
    unit = " " + en_unit(name, "2") if name else " percent" if m.group(5) else ""
    return number(m.group(1)) + " plus" + unit


def _minutes_seconds(minutes: int, seconds: int) -> str:
    return counted(minutes, "minute") + (", " + counted(seconds, "second") if seconds else "")


def _long_minutes(m: re.Match[str]) -> str | None:
    """ "25:03": past any clock hour, with two-digit seconds: a duration."""
    minutes, seconds = int(m.group(1)), int(m.group(2))
    if (minutes, seconds) == (24, 0):
        return "midnight"
    return _minutes_seconds(minutes, seconds) if minutes >= 24 and seconds < 60 else None


def _pace(m: re.Match[str]) -> str | None:
    """ "5'01\"": inches are never written with a leading zero, nor past 11."""
    second = m.group(2)
    if not (second.startswith("0") and len(second) == 2 or 12 <= int(second) < 60):
        return None
    return _minutes_seconds(int(m.group(1)), int(second))


def _scientific(m: re.Match[str]) -> str:
    """ "3×10^8 m/s", "3×10⁸ m/s", "1.5e6": the mantissa, "times ten to the power of", the
    exponent, and the unit that follows it (the unit rule would take the exponent)."""
    power = (m.group(2) or m.group(3) or m.group(4)).translate(SUPERSCRIPT_DIGITS)
    spoken = number(m.group(1)) + " times ten to the power of " + number(power)
    unit = m.group(5)
    return spoken + (" " + en_unit(UNITS[unit][0], "2") if unit else "")


def _pressure(m: re.Match[str]) -> str | None:
    """ "120/80 mmHg", "blood pressure of 140/90": "one hundred twenty over eighty"."""
    lead, unit = m.group(1), m.group(4)
    if not (lead or unit):
        return None
    spoken = (lead or "") + number(m.group(2)) + " over " + number(m.group(3))
    return spoken + (" " + en_unit(UNITS[unit][0], "2") if unit else "")


# "10⁻⁶ M", "x⁴", "2¹⁰": a power written in superscripts (a lone "²" or "³" is the symbol rule's)
POWER_RULE = rule("power", r"(?<![\w.])(\d{1,3}|[A-Za-z])" + SUPERSCRIPT_POWER + r"(?!\w)",
                  lambda m: (number(m.group(1)) if m.group(1).isdigit() else m.group(1)) + " to the power of "
                  + number(m.group(2).translate(SUPERSCRIPT_DIGITS)))
SCIENTIFIC_RULE = rule("scientific", r"(?<![\w.])(\d++(?:\.\d++)?)"
                       r"(?:\s?[×xX*·]\s?10(?:\^([-−]?\d{1,3})|(⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]{1,3}))|[eE]([-+−]?\d{1,3}))"
                       r"(?![\d.]\d)"
                       r"(?:\s?(" + UNIT_RE + ")" + UNIT_END + ")?", _scientific)
# "~50%", "~$20": "about", before the reading after it is claimed by its own rule.
APPROX_RULE = rule("about", r"(?<![^\s(\[])(?<!\d\s)(?:~|(?<!\b[A-Za-z]\s)(?<!\)\s)≈)\s?(?=[-−]?[$€£¥]?\d)",
                   lambda m: "about")  # "(~2 L)", "(≈2 min)"; "x ≈ 3" is the symbol's "is about"
# "ran the 5K in 22:41", "a time of 14:05": no clock is "in" an hour past noon (before the clock);
# "T-minus 10:00" counts down minutes and seconds
RACE_TIME_RULE = rule("race time", r"(?<=\b(?:in|of)\s)(1[3-9]|[2-5]\d):([0-5]\d)(?![\d:]|\s?[ap]\.?m\b)"
                      r"|(?<=\b[Tt][-\s]minus\s)(\d{1,2}):([0-5]\d)(?![\d:])",
                      lambda m: _minutes_seconds(int(m.group(1) or m.group(3)),
                                                 int(m.group(2) or m.group(4))))
PACE_RULE = rule("pace", r"(?<![\d.])(\d{1,2})['’′](\d{2})(?:[\"”″]|'')", _pace)


def _counts(first: str, second: str) -> Callable[[re.Match[str]], str]:
    """A reader of two counts: "3h20min" -> "three hours twenty minutes"."""
    return lambda m: counted(int(m.group(1)), first) + " " + counted(int(m.group(2)), second)


_RESOLUTIONS = frozenset({"360", "480", "720", "1080", "1440", "2160", "4320"})


def _resolution(m: re.Match[str]) -> str | None:
    """ "1080p" -> "ten eighty p", "720p" -> "seven twenty p" (read in pairs, as said),
    "1080p60" -> "ten eighty p sixty" (frames a second after)."""
    lines = m.group(1)
    if lines not in _RESOLUTIONS:
        return None
    head, tail = lines[:-2], lines[-2:]
    rate = " " + cardinal(int(m.group(3))) if m.group(3) else ""
    return f"{cardinal(int(head))} {cardinal(int(tail))} {m.group(2)}{rate}"




def _rooms(m: re.Match[str]) -> str:
    """ "a 3BR/2BA condo" -> "a three bedroom, two bath condo"; "has 3 bd, 2.5 ba." -> "three
    bedrooms, two and a half baths" (no noun after: counted, not describing)."""
    beds, baths = m.group(1) or m.group(3), m.group(2) or m.group(4)
    plural = "" if NOUN_NEXT.match(m.string, m.end()) else "s"  # what a count describes
    spoken = [cardinal(int(beds)) + " bedroom" + (plural if beds != "1" else "")] if beds else []
    if baths:
        whole, _, half = baths.partition(".")
        many = plural if baths != "1" else ""
        spoken.append(cardinal(int(whole)) + (" and a half" if half else "") + " bath" + many)
    return ", ".join(spoken)


_RUNWAY_SIDES = {"L": " left", "R": " right", "C": " center", None: ""}
_KT_AFTER = re.compile(r"\s(?:bombs?|warheads?|yield|nuclear|devices?|blasts?|explosions?|weapons?"
                       r"|(of\sTNT))\b")


def _kt(m: re.Match[str]) -> str:
    """ "12 kt" of a wind or a ship: knots; "a 15 kt bomb": kilotons ("18kt gold" is the karat
    rule's)."""
    after = _KT_AFTER.match(m.string, m.end())
    if after is None:
        return cardinal(int(m.group(1))) + " " + en_unit("knot", m.group(1))
    # before its noun a size is singular ("a 15 kiloton bomb"), "15 kilotons of TNT"
    return cardinal(int(m.group(1))) + (" kilotons" if after.group(1) else " kiloton")


# After "in the 89'" a word that goes on with the sentence, not a noun the feet measure.
_MINUTE_AFTER = re.compile(r"\s?(?:$|[,.;:!?)]|\s(?:to|and|with|from|after|before|but|as|when|for)\b)")


def _match_minute(m: re.Match[str]) -> str | None:
    """A football match's minute: "scored in 90'", "in the 89'" -> "in the eighty ninth
    minute" ("in the 12' boat": feet)."""
    if m.group(2) and not _MINUTE_AFTER.match(m.string, m.end()):
        return None
    added = m.group(4) or m.group(5)  # stoppage time: "90+3'", "45'+2"
    spoken = f"{m.group(1)}the {ordinal(int(m.group(3)))} minute"
    return spoken + (f" plus {cardinal(int(added))}" if added else "")


# Before the feet mark: "in 90'" or "at the 45'" of a match.
MATCH_MINUTE_RULE = rule("match minute", r"\b((?i:in|at|after|before|by|until|from)\s)(the\s)?(\d{1,3})"
                         r"(?:\+(\d{1,2}))?['’′](?:\+(\d{1,2})['’′]?)?(?=\s[a-z]|[,;:)!?]|\.?$)",
                         _match_minute)


# "PCIe 4.0 x16", "an x8 slot": a link's width is "by sixteen"
_PCIE_BEFORE = re.compile(r"PCI(?:e|\sExpress)(?:\s(?:\d\.\d|[Gg]en\s?\d))?\s$")


def _lanes(m: re.Match[str]) -> str | None:
    if m.string[max(0, m.start() - 4):m.start()].lower() in ("an ", " an "):
        return None  # "an x8 slot" is said "an ex eight"
    if not (m.group(2) is not None or _PCIE_BEFORE.search(m.string, max(0, m.start() - 24), m.start())):
        return None
    return "by " + cardinal(int(m.group(1)))


_AVERAGE_BEFORE = re.compile(r"\b(?i:hit|hits|hitting|batting|batted|average\sof|avg)\s$")
_AVERAGE_AFTER = re.compile(r"\s(?:average|avg|hitter|clip|batting|OBP|on-base)\b")


def _average(m: re.Match[str]) -> str | None:
    """A batting average in its thousandths: ".312" -> "three twelve", ".087" -> "oh eighty seven"."""
    if not (_AVERAGE_BEFORE.search(m.string, max(0, m.start() - 12), m.start())
            or _AVERAGE_AFTER.match(m.string, m.end())):
        return None
    n = int(m.group(1))
    return pairs(n) if n >= 100 else "oh " + cardinal(n)


def _flight_number(written: str) -> str:
    """In pairs, as a gate agent says it: "837" -> "eight thirty seven", "2490" -> "twenty four
    ninety"; a leading zero digit by digit ("0837")."""
    return digits(written) if written[0] == "0" else pairs(int(written))


def _economy(m: re.Match[str]) -> str:
    """ "27/35 mpg" -> "twenty seven, thirty five miles per gallon" (city, then highway)."""
    return f"{cardinal(int(m.group(1)))}, {cardinal(int(m.group(2)))} {en_unit(UNITS[m.group(3)][0], '2')}"


RULES: tuple[Rule, ...] = (
    rule("fuel economy", r"(?<![\w/.])(\d{1,3})\s?/\s?(\d{1,3})\s?(mpg|MPGe)\b", _economy),
    rule("city highway", r"\b(city)\s?/\s?(?:hwy|highway)\b", lambda m: m.group(1) + ", highway"),
    rule("cylinders", r"(?<![\w.])(\d{1,2})[-\s]?cyl\b\.?",
         lambda m: keep_final_period(m, cardinal(int(m.group(1))) + " cylinder")),
    # a tire's size: "225/65R17" -> "two twenty five sixty five R seventeen"
    rule("tire size", r"\b(\d{3})/(\d{2})\s?(Z?R)(\d{2})\b",
         lambda m: f"{pairs(int(m.group(1)))} {cardinal(int(m.group(2)))} {' '.join(m.group(3))} "
                   f"{cardinal(int(m.group(4)))}"),
    # "hit .312", "a .275 average", "batting .300": an average said as people say it
    rule("batting average", r"(?<![\w.])\.(\d{3})\b(?![.,]?\d)", _average),
    # ".45 caliber", "a .308 Winchester": a caliber's hundredths or thousandths of an inch
    rule("caliber", r"(?<![\w.])\.(\d{2,3})(?=\s(?:caliber|calibre|cal\b|Winchester|Magnum|ACP|LR|Special"
         r"|rifle|pistol|revolver|handgun|round|bullet|ammo))", lambda m: pairs(int(m.group(1)))),
    # "985 mb": a weather chart's air pressure in millibars ("a 5 mb file" stays a size)
    rule("pressure", r"(?<![\w.,])((?:8[7-9]\d|9\d\d|10[0-8]\d)(?:\.\d)?)\s?mb\b",
         lambda m: number(m.group(1)) + " millibars"),
    rule("karat", r"(?<![\w.])(\d{1,2})\s?(?:k|K|kt|KT)\b(?=\s(?:(?:solid|white|yellow|rose|pink)\s)?gold\b)",
         lambda m: cardinal(int(m.group(1))) + " karat"),  # "14K white gold" before "14K" is thousands
    # cricket: "287/4 (50 ov)" runs for wickets, "5/32 in 10 overs" wickets for runs, "103* off 98"
    rule("innings", r"(?<![\w/.])(\d{1,3})/(10|\d)(?=\s?\(\d{1,2}(?:\.\d)?\s?(?:ov|overs?)\b)"
         r"|(?<![\w/.])(10|\d)/(\d{1,3})(?=\s(?:in|off|from)\s\d{1,2}(?:\.\d)?\s?(?:ov|overs?)\b)",
         lambda m: " for ".join(cardinal(int(g)) for g in m.groups() if g)),
    rule("overs", r"(?<![\w.])(\d{1,2}(?:\.\d)?)\s?ov\b\.?", lambda m: number(m.group(1)) + " overs"),
    rule("not out", r"(?<![\w.])(\d{1,3})\*(?=\s(?:off|from)\s\d)|(?<![\w.])([1-5])\*(?=\s(?:hotels?|resorts?"
         r"|reviews?|ratings?|restaurants?|stays?)\b)",  # a "5* hotel" is a five star one
         lambda m: cardinal(int(m.group(1) or m.group(2))) + (" not out" if m.group(1) else " star")),
    # a phone's memory and storage: "12GB+256GB" -> "twelve gigabytes plus two hundred fifty six gigabytes"
    rule("sizes added", r"(?<![\w.])(\d{1,4})\s?([GMT]B)\s?\+\s?(\d{1,4})\s?([GMT]B)\b",
         lambda m: " plus ".join(number(m.group(i)) + " " + en_unit(UNITS[m.group(i + 1)][0], m.group(i))
                                 for i in (1, 3))),
    rule("curve spread", r"(?<![\w.])(\d{1,2})s(\d{1,2})s\b",
         lambda m: f"{plural(cardinal(int(m.group(1))))} {plural(cardinal(int(m.group(2))))}"),  # "2s10s"
    rule("knots", r"(?<![\w.])(\d{1,3})\s?kt\b", _kt),
    rule("rooms", r"\b(\d)\s?(?:BR|BD|bd|br|bdrm|bed)\s?(?:/|,\s?|\s)\s?(\d(?:\.5)?)\s?(?:BA|ba|bath)\b"
         r"|\b(\d)\s?(?:BR|BD|bdrm)\b|\b(\d(?:\.5)?)\s?BA\b", _rooms),  # "a 3BR condo", "2 BA"
    rule("lanes", r"(?<![\w.])[x×](1|2|4|8|16|32)\b(?:(?=\s(?:slots?|lanes?|links?|connectors?)\b)()|)",
         _lanes),
    rule("flight level", r"\bFL\s?(\d{3})\b", lambda m: "flight level " + digits(m.group(1))),  # "FL350"
    # a pilot's numbers, digit by digit: "runway 27L" (left), "squawk 7700", "wind 270 at 15"
    rule("runway", r"\b((?i:runway|rwy)\s?)(\d{1,2})([LRC])?\b",
         lambda m: m.group(1) + digits(m.group(2)) + _RUNWAY_SIDES[m.group(3)]),
    rule("squawk", r"\b((?i:squawk(?:ing)?)\s)([0-7]{4})\b|\b((?i:wind)\s)(\d{3})(?=\s(?:at|@)\s\d)",
         lambda m: (m.group(1) or m.group(3)) + digits(m.group(2) or m.group(4))),
    rule("resolution", r"(?<![\w.])(\d{3,4})([pi])(\d{2,3})?\b", _resolution),
    rule("years old", r"(?<![\w.])(\d{1,3})\s?(?:y/o|y\.o\.|yo)(?![\w/])", _years_old),  # "35 y/o"
    rule("at least", r"(?<![\w.,])((?:\d{1,3}(?:,\d{3})++|\d++)(?:\.\d++)?)\+(?![\w+])"
         r"(?:\s?(?:[°º]\s?([CF])\b|(℃)|(℉)|(%))|\s(" + _TIME_UNITS + r")\b)?",
         _at_least),  # "90+", "2,300+", "40+ °C", "10+ hrs"
    rule("extension", r"\b(?i:ext)\.?\s?(\d{1,6})\b", lambda m: "extension " + digits(m.group(1))),
    rule("hours and minutes", r"(?<![\d.])(\d{1,3})\s?(?:h|hrs?)\s?(\d{1,2})\s?(?:m|mins?)(?![A-Za-z])",
         _counts("hour", "minute")),  # "3h20min", "2h 5m": "5m" is no distance here
    rule("minutes and seconds", r"(?<![\d.])(\d{1,3})\s?(?:m|mins?)\s?(\d{1,2})\s?(?:s|secs?)\b",
         _counts("minute", "second")),  # "2m 34s"
    rule("blood pressure", r"((?:(?i:blood pressure)|BP)(?:\s(?:is|was|of|at))?:?\s)?"
         r"(?<![\d/.])(\d{2,3})/(\d{2,3})(?![\d/])(?:\s?(mmHg))?", _pressure),
    rule("flight", r"\b([Ff]light)\s([A-Z]{2}|[A-Z]\d|\d[A-Z])\s?(\d{1,4})\b",
         lambda m: f"{m.group(1)} {m.group(2)} {_flight_number(m.group(3))}"),
    rule("long minutes", r"(?<![\d:])(\d{2,3}):(\d{2})(?![\d:])", _long_minutes),
    rule("magnitude", r"(?<![\w.,])(\d{1,3}(?:,\d{3})++(?:\.\d++)?|\d++(?:\.\d++)?)(k|K|M|mn|bn|B|tn)\b"
         r"(?:-(?=[a-z]))?", _magnitude),  # "a 128K-token window": no pause before "token"
    # "$3/1M tokens", "$0.50/1K": per a magnitude, after the amount's reading
    rule("per magnitude", r"(?:(?<=\d)|^)/\s?(?:1\s?)?([KMB])\b(?![.,]\d)",
         lambda m: "per " + MAGNITUDE_WORDS[MAGNITUDES[m.group(1)]]),
    rule("numbered part", r"\b(" + _NUMBERED_RE + r"|(?:Vol|Ch|Chap|Pt|Bk|Art)\.)\s"
         r"((?=[IVXLC])C{0,3}(?:XC|XL|L?X{0,3})(?:IX|IV|V?I{0,3}))\b",
         lambda m: f"{_NUMBERING_WORDS.get(m.group(1), m.group(1))} {cardinal(roman_value(m.group(2)))}"),
    rule("roman numeral", r"\b([A-Z][a-z]++)\s((?>X{0,3}(?:IX|IV|V?I{0,3})))\b", _roman),
)
