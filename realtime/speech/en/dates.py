"""English readings of dates and clock times.

Dates: ISO "2024-05-06" and "2024/5/6" (year first), US "5/6/2024"
(month first, unless the first number cannot be a month), "on 3/15"
(month first, after a word that introduces a date; else a fraction), and month names
("May 6, 2024", "6 May 2024", "May 2024"); years are read as years
("twenty twenty-four"). Times: "10:30", "10:05", "14:00", "10:30:15",
"5pm", "5:30 p.m."; afternoon hours of a 24-hour time are read on the
12-hour clock with "p m" ("14:30" -> "two thirty p m"); zero seconds on the clock are
not said ("10:00:00 p.m." -> "ten p m"); a zone in dotted lower case is its capitals
("e.s.t." -> "EST"); the military's clock with a leading zero or a word of time before it
("0800 hours" -> "oh eight hundred hours", "at 1430 hrs" -> "fourteen thirty hours");
opening hours ("Sun 12–6", "Sat closed": the day; "9:30-5": "nine thirty to five").
Quarters and halves of a year or of a fiscal year: "Q3 FY2025" -> "the third quarter of
fiscal year twenty twenty five" ("Apple's Q3": no "the").
"""

from __future__ import annotations

import re

from realtime.speech.en.fractions import COUNT_AFTER
from realtime.speech.en.words import cardinal, number, ordinal, year
from realtime.speech.rewrite import Rule, keep_final_period, rule
from realtime.speech.units import MONTH_NAMES_RE, MONTH_RE, MONTHS, month_number, valid_date, verb_not_month


def _year(y: int | str) -> str:
    """A year as said; a two-digit one as written ("05" -> "zero five", "98" -> "ninety eight")."""
    return number(y) if isinstance(y, str) else year(y)


def _date(y: int | str | None, month: int, day: int | None) -> str:
    out = MONTHS[month - 1]
    if day is not None:
        out += " " + ordinal(day)
    if y is not None:
        out += (", " if day is not None else " ") + _year(y)
    return out


def _day_first(y: int | str | None, month: int, day: int) -> str:
    return f"the {ordinal(day)} of {MONTHS[month - 1]}" + (", " + _year(y) if y is not None else "")


def _iso(m: re.Match[str]) -> str | None:
    first = 1 if m.group(1) else 4
    y, mo, d = (int(m.group(first + i)) for i in range(3))
    return _date(y, mo, d) if valid_date(mo, d) else None


def _numeric(first: str, second: str, y: str) -> str | None:
    """ "5/6/2024", "17-03-2019", "03.04.2021": month first unless the first
    number cannot be a month ("17-03-2019": the seventeenth of March)."""
    a, b = int(first), int(second)
    full: int | str = int(y) if len(y) == 4 else y
    if valid_date(a, b):
        return _date(full, a, b)
    if valid_date(b, a):
        return _day_first(full, b, a)
    return None


def _numeric_date(m: re.Match[str]) -> str | None:
    if m.group(1) is None:  # the dotted form
        return _numeric(m.group(5), m.group(6), m.group(7))
    return _numeric(m.group(1), m.group(3), m.group(4))


def _month_day(m: re.Match[str]) -> str | None:
    mo, d = month_number(m.group(1)), int(m.group(2))
    if not valid_date(mo, d) or verb_not_month(m.group(1), bool(m.group(3))):
        return None
    y = int(m.group(3)) if m.group(3) else None
    return _date(y, mo, d)


def _month_days(m: re.Match[str]) -> str | None:
    """ "Jan. 5–7, 2025": January fifth to seventh, twenty twenty five."""
    mo, d1, d2 = month_number(m.group(1)), int(m.group(2)), int(m.group(3))
    if not (valid_date(mo, d1) and valid_date(mo, d2)):
        return None
    y = int(m.group(4)) if m.group(4) else None
    return _date(None, mo, d1) + " to " + ordinal(d2) + (", " + year(y) if y is not None else "")


def _day_month(m: re.Match[str]) -> str | None:
    d, mo = int(m.group(1)), month_number(m.group(2))
    if not valid_date(mo, d) or verb_not_month(m.group(2), bool(m.group(3))):
        return None
    the = _the(m)
    out = f"{the}{ordinal(d)} of {MONTHS[mo - 1]}"
    return out + (", " + year(int(m.group(3))) if m.group(3) else "")


# A word that already determines what follows: "our Q3", "its 4th of July" take no "the".
_DETERMINER = re.compile(r"\b(?i:the|our|its|their|his|her|my|your|this|that|last|next|each|every|whose)\s$"
                         r"|\w['’]s?\s$")  # "Apple's Q3", "the companies' Q3"


def _the(m: re.Match[str]) -> str:
    """ "the " before a date's or quarter's reading, unless a determiner is there."""
    return "" if _DETERMINER.search(m.string, max(0, m.start() - 8), m.start()) else "the "


def _year_of(written: str) -> str:
    return _year(int(written) if len(written) == 4 else written)


def _quarter(m: re.Match[str]) -> str:
    """ "2Q22", "Q3 2024": the second quarter of twenty two, the third quarter of twenty twenty four."""
    q = m.group(1) or m.group(3)
    y = m.group(2) or m.group(4) or m.group(5)
    the = _the(m)
    spoken = f"{the}{ordinal(int(q))} quarter"
    if m.group(6):
        return spoken + " of " + _fiscal(m.group(6), m.group(7))  # "Q3 FY25"
    return spoken + (" of " + _year(int(y) if len(y) == 4 else y) if y else "")


_FISCAL = r"(FY|CY)\s?['’]?(\d{4}|\d{2})\b"


def _fiscal(kind: str, written: str | None) -> str:
    """ "FY", "2024" -> "fiscal year twenty twenty four"."""
    return ("fiscal year" if kind == "FY" else "calendar year") + (" " + _year_of(written) if written else "")


def _fiscal_year(m: re.Match[str]) -> str:
    return _fiscal(m.group(1), m.group(2)) if m.group(1) else _fiscal(m.group(3), None)


def _month_year(m: re.Match[str]) -> str | None:
    if m.group(1) in ("march", "may") and not _DATING_BEFORE.search(m.string, max(0, m.start() - 10),
                                                                     m.start()):
        return None  # "they march 2000 soldiers": the verb; "in march 2020" dates
    return MONTHS[month_number(m.group(1)) - 1] + " " + year(int(m.group(2)))


_DATING_BEFORE = re.compile(r"\b(?i:in|of|since|by|until|till|from|during|early|late|mid|last|next|this"
                            r"|before|after|through)[\s-]$")


def counted(value: int, unit: str) -> str:
    """counted(5, "minute") -> "five minutes", counted(1, "second") -> "one second"."""
    return f"{cardinal(value)} {unit}{'' if value == 1 else 's'}"


def _minutes(mm: int) -> str:
    return "oh " + cardinal(mm) if mm < 10 else cardinal(mm)


def _clock(m: re.Match[str]) -> str | None:
    spoken = _read_clock(int(m.group(1)), int(m.group(2)), m.group(3), (m.group(4) or "").lower())
    return keep_final_period(m, spoken) if spoken else None


def _clock_range(m: re.Match[str]) -> str | None:
    """ "10:00–11:30 AM": both ends on the clock, "to" between, the half of
    the day said once, after the second (as it is written)."""
    half = (m.group(5) or "").lower()
    first = _read_clock(int(m.group(1)), int(m.group(2)), None, "")
    second = _read_clock(int(m.group(3)), int(m.group(4)), None, half)
    return keep_final_period(m, first + " to " + second) if first and second else None


def _read_clock(h: int, mm: int, seconds: str | None, half: str) -> str | None:
    """The clock's words, or None where "am"/"pm" cannot go with the hour ("0:30 pm").
    With seconds and no "am"/"pm" it is a duration ("1:02:03", "15:20:45":
    fourteen hours, ten minutes, thirty seconds); an afternoon hour says "p m"
    itself ("13:30", "13:30 pm")."""
    ss = int(seconds) if seconds else None
    if ss is not None and not half:
        parts = [counted(v, u) for v, u in ((h, "hour"), (mm, "minute"), (ss, "second")) if v]
        return ", ".join(parts) or "zero seconds"
    if ss == 0:
        ss = None  # "10:00:00 p.m.": on the clock, no seconds are said
    if 13 <= h <= 23:
        h, half = h - 12, "p"
    elif half and not 1 <= h <= 12:
        return None
    if h == 0:
        h, half = 12, "a"
    if mm == 0:
        spoken = cardinal(h) + (" o'clock" if not half or ss is not None else "")
    else:
        spoken = cardinal(h) + " " + _minutes(mm)
    if ss is not None:
        spoken += " and " + cardinal(ss) + (" second" if ss == 1 else " seconds")
    if half:
        spoken += " a m" if half == "a" else " p m"
    return spoken


def _halves_range(m: re.Match[str]) -> str | None:
    """ "3pm-6pm", "6:30 am - 9:45 pm": each end with its own half of the day."""
    first = _read_clock(int(m.group(1)), int(m.group(2) or 0), None, m.group(3).lower())
    second = _read_clock(int(m.group(4)), int(m.group(5) or 0), None, m.group(6).lower())
    return keep_final_period(m, first + " to " + second) if first and second else None


def _hour_half(m: re.Match[str]) -> str:
    half = " a m" if m.group(2).lower() == "a" else " p m"
    return keep_final_period(m, cardinal(int(m.group(1))) + half)


_WEEKDAYS = {"mon": "Monday", "tue": "Tuesday", "wed": "Wednesday", "thu": "Thursday", "fri": "Friday",
             "sat": "Saturday", "sun": "Sunday"}
_ANY_DAY = r"(?:Mon|Tues?|Wed|Thu(?:rs?)?|Fri|Sat|Sun)"
_DAY = "(" + _ANY_DAY + r")\.?"


def _weekday(m: re.Match[str]) -> str:
    """ "Mon–Fri", "Tue": the day's name ("Sun", "Sat", "Wed" alone are words)."""
    first = _WEEKDAYS[m.group(1)[:3].lower()]
    return keep_final_period(m, first + (" to " + _WEEKDAYS[m.group(2)[:3].lower()] if m.group(2) else ""))


def _month_range(m: re.Match[str]) -> str:
    first, last = (MONTHS[month_number(m.group(i)) - 1] for i in (1, 2))
    return keep_final_period(m, f"{first} to {last}" + (" " + year(int(m.group(3))) if m.group(3) else ""))


def _weekday_list(m: re.Match[str]) -> str:
    """ "Mon/Wed/Fri" -> "Monday, Wednesday and Friday" (upstream drops a slash)."""
    written = m.group(0)
    if written in _CLASS_DAYS:
        days = _CLASS_DAYS[written]
    else:
        days = [_WEEKDAYS.get(d[:3].lower()) or _WEEKDAYS[_SHORT_DAYS[d.lower()]]
                for d in _ONE_DAY.findall(written)]
    return keep_final_period(m, ", ".join(days[:-1]) + " and " + days[-1])


# A class schedule's days: "MWF", "TTh", "Tu/Th".
_CLASS_DAYS = {"MWF": ["Monday", "Wednesday", "Friday"], "TTh": ["Tuesday", "Thursday"],
               "TuTh": ["Tuesday", "Thursday"], "MW": ["Monday", "Wednesday"]}
_SHORT_DAYS = {"tu": "tue", "th": "thu"}


_ONE_DAY = re.compile(r"[A-Za-z]+")


def _short_date_range(m: re.Match[str]) -> str | None:
    """ "12/1–12/31": two dates when a day is past 12 (no fraction's denominator
    is, but 16), not "1/2–3/4 cup"."""
    (m1, d1), (m2, d2) = (int(m.group(1)), int(m.group(2))), (int(m.group(3)), int(m.group(4)))
    if not (valid_date(m1, d1) and valid_date(m2, d2)) or max(d1, d2) <= 12 or 16 in (d1, d2):
        return None
    return _date(None, m1, d1) + " to " + _date(None, m2, d2)


def _short_date(m: re.Match[str]) -> str | None:
    """ "on 3/15", "due 12/1", "Thu. 12/12", "Mon, 3/4": month first, as with a year; a fraction
    otherwise."""
    month, day = int(m.group(2)), int(m.group(3))
    after = m.string[m.end():m.end() + 14]
    if not valid_date(month, day) or after.startswith(" of") or COUNT_AFTER.match(after):
        return None  # "on 3/4 of", "on 8/16 cores": a share
    word = m.group(1)
    if word[:3].lower() in _WEEKDAYS and word[:1].isupper():
        word = _WEEKDAYS[word[:3].lower()] + ","  # "Thu. 12/12": Thursday, December twelfth
    return word + " " + _date(None, month, day)


_HALF = r"(?:\s?([AaPp])(?:\.?[Mm]\b\.?|(?<=\d[ap])\b))"  # "7:05p", written onto the clock, too
_HOUR_MINUTE = r"([01]?\d|2[0-3]):([0-5]\d)"
# Words that introduce a date ("by 1/3" and "from 1/2" are fractions as often).
_DATE_WORDS = (r"[Oo]n|[Aa]s of|[Uu]ntil|till|[Ss]ince|through|[Dd]ue|starting|ending|ends|expires|begins"
               r"|starts|opens|closes|[Dd]eadline")
DATE_RULES: tuple[Rule, ...] = (
    rule("iso date", r"(?<![\d/.-])(\d{4})[-/](\d{1,2})[-/](\d{1,2})(?![\d/-])"
         r"|(?<![\d/.-])(\d{4})\.(\d{2})\.(\d{2})(?![\d/-]|\.\d)", _iso),  # "2012.01.05" too
    rule("numeric date", r"(?<![\d/.-])(\d{1,2})([/-])(\d{1,2})\2(\d{4}|\d{2})(?![\d/-]|\.\d)"
         r"|(?<![\d/.-])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d.]\d)", _numeric_date),
    # "1H23", "H2 2024", "H1 '25": a half year, only with its year ("H1" alone is a heading)
    rule("half year", r"\b([12])H\s?(\d{2}|\d{4})\b|\bH([12])(?:[\s-](\d{4})|\s?['’](\d{2}))\b"
         r"|\bH([12])\s" + _FISCAL,
         lambda m: f"{_the(m)}{('first', 'second')[int(m.group(1) or m.group(3) or m.group(6)) - 1]} half of "
                   + (_fiscal(m.group(7), m.group(8)) if m.group(6) else _year_of(m.group(2) or m.group(4)
                                                                                  or m.group(5)))),
    rule("quarters", r"\bQ([1-4])\s?[-–—]\s?Q([1-4])\b(?:\s(\d{4}))?",
         lambda m: f"{_the(m)}{ordinal(int(m.group(1)))} to the {ordinal(int(m.group(2)))} quarter"
                   + (" of " + _year(int(m.group(3))) if m.group(3) else "")),  # "Q1–Q3 2024"
    rule("quarter", r"\b([1-4])Q(\d{2}|\d{4})?\b|\bQ([1-4])(?:[\s-](\d{4})|\s?['’](\d{2})|\s" + _FISCAL
         + r")?\b", _quarter),
    # a fiscal or calendar year: "FY2024", "FY24", "FY '25" (its digits are no code)
    rule("fiscal year", r"\b" + _FISCAL + r"(?![-–/]\d)|\b(FY|CY)(?=\s?\d{4}[-–/]\d|\s?['’]\d\d\b)",
         _fiscal_year),
    rule("short date range", r"(?<![\d/.])(\d{1,2})/(\d{1,2})\s?[-–—]\s?(\d{1,2})/(\d{1,2})(?![\d/]|\.\d)",
         _short_date_range),
    rule("short date", r"\b(" + _DATE_WORDS + r"|" + _ANY_DAY
         + r"(?:day|nesday|sday|urday)?\.?,?)\s"
         r"(\d{1,2})/(\d{1,2})(?![\d/]|\.\d)", _short_date),
    # "Sat., Nov. 9": before a date a dotted "Wed", "Sat" or "Sun" is the day, not the word
    rule("weekday before a date", r"\b(Wed|Sat|Sun)\.(?=,?\s(?:" + MONTH_RE + r")\b)()", _weekday),
    # "Jan.–Mar.", "Apr-Jun 2024": a range of months (upstream drops the dash); capitalised
    rule("month range", r"\b(" + MONTH_NAMES_RE + r")\.?\s?[-–—]\s?(" + MONTH_NAMES_RE + r")\b(?:\.(?!\d))?"
         r"(?:,?\s(\d{4})\b)?(?!\s?\d)", _month_range),
    rule("month-day", r"\b(" + MONTH_RE + r")-(\d{1,2})(?:-(\d{4}))?\b", _month_day),
    rule("month days", r"\b(" + MONTH_RE + r")\.?\s(\d{1,2})(?:st|nd|rd|th)?\s?[-–—]\s?(\d{1,2})"
         r"(?:st|nd|rd|th)?(?:,?\s(\d{4}))?(?![\d:])", _month_days),
    rule("month day", r"\b(" + MONTH_RE + r")\.?\s(\d{1,2})(?:st|nd|rd|th)?(?:,?\s(\d{4}))?(?![\d:])",
         _month_day),
    rule("day month", r"(?<![\d.])(\d{1,2})(?:st|nd|rd|th)?\s(?:of\s)?(" + MONTH_RE
         + r")\b(?:\.?,?\s(\d{4})(?!\d))?", _day_month),  # "14th Feb. 1852"
    rule("weekday letters", r"\bM\s?[-–—]\s?F\b(?!-)", lambda m: "Monday to Friday"),  # "open M–F 9–5"
    rule("weekday list", r"\b(?:" + _ANY_DAY + r"|Tu|Th)\.?(?:\s?/\s?(?:" + _ANY_DAY
         + r"|Tu|Th)\.?)++(?![A-Za-z])|\b(?:MWF|TuTh|TTh)\b|\bMW(?=\s\d)",
         _weekday_list),  # "Mon/Wed/Fri", "Tu/Th", "MWF 10:10"
    rule("weekdays", r"\b" + _DAY + r"\s?[-–—]\s?" + _DAY + r"(?![A-Za-z])", _weekday),
    rule("weekday", r"\b(Mon|Tues?|Thu(?:rs?)?|Fri)\.?(?![A-Za-z])()", _weekday),
    # "2 tix for Sat.": after a word that dates, "Sat", "Sun", "Wed" are the days
    rule("weekday word", r"(?:(?<=\bon\s)|(?<=\bfor\s)|(?<=\bby\s)|(?<=\bthis\s)|(?<=\bnext\s)|(?<=\blast\s)"
         r"|(?<=\buntil\s))(Sat|Sun|Wed)(?:\.(?!\w)|(?=$|[,;!?)]|\s(?:at|morning|afternoon|evening|night|and"
         r"|or|to|until|before|after)\b))()", _weekday),  # not "on Sun deck", "by Wed Lake"
    # opening hours: "Sat 10–4", "Sun 12-6pm", "Sun closed"
    rule("weekday hours", r"\b(Sat|Sun|Wed)\.?(?=:?\s(?:\d{1,2}(?::\d\d)?\s?(?:[AaPp]\.?[Mm]\.?)?"
         r"\s?[-–—]\s?\d"
         r"|closed\b|(?i:noon)\b))()", _weekday),
    rule("month year", r"\b(" + MONTH_RE + r")\.?,?\s(\d{4})(?!\d)", _month_year),
    # "the War of 1812 ended", "the summer of 1969,": a year after a name's or a season's
    # "of" ("a total of 1500 people" is a count: a noun follows)
    rule("named year", r"\b((?:[A-Z][a-z]+|summer|spring|fall|autumn|winter|class|crash|election|treaty|war"
         r"|act|revolution|flood|fire|storm|riots?|panic|earthquake|census)\sof\s)(1[1-9]\d\d|20[0-2]\d)"
         r"(?=\s?[,.;:!?)]|$|\s(?:and|was|were|is|saw|ended|began|brought|had|in|to|at|on|by|with)\b)",
         lambda m: m.group(1) + year(int(m.group(2)))),
    # "fell in Nov.", "since Sept.": a month's abbreviation alone, after a word that dates
    rule("month alone", r"\b((?i:in|since|by|until|till|of|last|next|early|late|mid|through|from|to)\s)"
         r"(Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.(?=$|\s[a-z]|[,;:)])",
         lambda m: keep_final_period(m, m.group(1) + MONTHS[month_number(m.group(2)) - 1])),
)
_HOUR_HALF = r"(1[0-2]|0?[1-9])(?:[:.]([0-5]\d))?\s?([AaPp])\.?[Mm]\b\.?"


def _offset(m: re.Match[str]) -> str:
    """ "GMT+1", "UTC−05:00", "UTC+5:30": the zone, plus or minus, the hours (and minutes)."""
    minutes = int(m.group(4) or 0)
    return (f"{m.group(1)} {'plus' if m.group(2) == '+' else 'minus'} {cardinal(int(m.group(3)))}"
            + (" " + cardinal(minutes) if minutes else ""))


_AT_BEFORE = re.compile(r"\b(?i:at|by|until|till|from|before|after|since|to)\s$")


def _military(m: re.Match[str]) -> str | None:
    """ "0800 hours" -> "oh eight hundred hours", "at 1430 hrs" -> "fourteen thirty"; a count
    ("1500 hours of service") has no leading zero and no word of time before it."""
    hh, mm = m.group(1) or m.group(4), int(m.group(2) or m.group(5))
    if not (hh[0] == "0" or _AT_BEFORE.search(m.string, max(0, m.start() - 7), m.start())):
        return None
    h = int(hh)
    hour = "zero" if h == 0 else ("oh " if hh[0] == "0" else "") + cardinal(h)
    return hour + (" hundred" if mm == 0 else " " + _minutes(mm)) + (" hours" if m.group(3) else "")


TIME_RULES: tuple[Rule, ...] = (
    rule("military time", r"(?<![\d:.,$])([01]\d|2[0-3])([0-5]\d)\s?(hours|hrs)\b"
         r"|(?<![\d:.,$])(0\d)([0-5]\d)(?=[\s,.;:!?]|$)(?<=(?:at|by)\s\d{4})", _military),
    # "10 p.m. e.s.t.": a zone in dotted lower case, said as its capitals are
    rule("dotted zone", r"(?<![\w.])([ecmp])\.([sd])\.t\.",
         lambda m: keep_final_period(m, f"{m.group(1).upper()}{m.group(2).upper()}T")),
    rule("zone offset", r"\b(GMT|UTC)\s?([+−-])\s?(1[0-4]|0?\d)(?::?([0-5]\d))?(?![\d:])", _offset),
    # "noon–2pm", "12–1:30pm": the dash between an hour and a clock time is "to"
    rule("hour to clock", r"\b(?:(noon|midnight)|(?<![\d:.])(1[0-2]|0?[1-9]))\s?[-–—]\s?"
         r"(?=(?:1[0-2]|0?[1-9])(?::[0-5]\d)?\s?[AaPp]\.?[Mm]\b)",
         lambda m: (m.group(1) or cardinal(int(m.group(2)))) + " to "),
    rule("halves range", r"(?<![\d:.])" + _HOUR_HALF + r"\s?[-–—]\s?" + _HOUR_HALF, _halves_range),
    rule("dotted clock", r"(?<![\d:.])(1[0-2]|0?[1-9])\.([0-5]\d)()\s?([AaPp])\.?[Mm]\b\.?", _clock),
    # "7.30 tonight", "10.45 this morning": before a time of day a dotted number is a clock
    rule("dotted clock of the day", r"(?<![\d:.,$€£])(1[0-2]|0?[1-9])\.([0-5]\d)()()"
         r"(?=\s(?:tonight|tomorrow|this\s(?:morning|afternoon|evening)|in\sthe\s(?:morning|afternoon|evening)"
         r"|o['’]clock)\b)", _clock),
    # "9:30-5", "Sun 11:30-3": a clock time, then the hour it runs to (no "minus")
    rule("clock to hour", r"(?<![\d:.])" + _HOUR_MINUTE + r"\s?[-–—]\s?(1[0-2]|0?[1-9])"
         r"(?![\d:]|[.,]\d|\s?[AaPp]\.?[Mm]\b)",
         lambda m: f"{_read_clock(int(m.group(1)), int(m.group(2)), None, '')} to "
                   f"{cardinal(int(m.group(3)))}"),
    rule("clock range", r"(?<![\d:.])" + _HOUR_MINUTE + r"\s?[-–—]\s?" + _HOUR_MINUTE + r"(?![\d:])"
         + _HALF + "?", _clock_range),
    rule("clock", r"(?<![\d:.])([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?(?![\d:])" + _HALF + "?",
         _clock),
    rule("hours am/pm", r"(?<![\d:.])(1[0-2]|0?[1-9])\s?[-–—]\s?(1[0-2]|0?[1-9])\s?([AaPp])\.?[Mm]\b\.?",
         lambda m: keep_final_period(m, cardinal(int(m.group(1))) + " to " + cardinal(int(m.group(2)))
                          + (" a m" if m.group(3).lower() == "a" else " p m"))),  # 3-5 pm
    rule("hour am/pm", r"(?<![\d:.])(1[0-2]|0?[1-9])\s?([AaPp])\.?[Mm]\b\.?", _hour_half),
)
