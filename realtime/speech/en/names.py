"""English readings of names written with numbers: the year before a name
("the 2020 Tokyo Olympics") or a thing of its year ("the 2020 census", "a 2019
study", "its 2023 annual report"; "the 2000 people" stays a count), four digits after capitals in pairs ("RTX
4090", "ISO 9001"), airliners and their variants ("the 737 MAX",
"777-300ER", "an A320-200", "the 787's"), processors ("i7-13700K", "Ryzen 9 7950X",
"Core Ultra 7 155H"), letter models
("F-150", "F-35s"), tax forms and plans ("Form 1040", "1099-NEC", "a 529 plan"), a
freeway ("the 405 freeway"), memory kinds ("DDR5-6000"), teams ("49ers"), software
releases ("v20.11.0", "Python 3.12", "1.0.0-beta.2"); a name counted many
takes the plural on its number ("the 747s", "two RTX 4090s").

``en.RULES`` places each group: ``HYPHENED_NAME_RULES`` before a hyphen
between a name and a number is read as a pause, a range or "to";
``NAME_RULES`` before the code rule reads "49 ers" or "v twenty".
"""

from __future__ import annotations

import re

from realtime.speech.en.words import cardinal, number, pairs, plural, year
from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import UNIT_END, UNIT_RE

_TEAMS = {"49ers": "forty niners", "76ers": "seventy sixers"}


# "the 2020 Tokyo Olympics", "a 2019 Honda Civic" (a model year: 1900-2029), before
# a bare number is read as a quantity
YEAR_BEFORE_NAME_RULE = rule("year before a name", r"(?<=\b[Tt]he\s)(1[5-9]\d\d|20\d\d)"
                             r"(?=\s[A-Z](?:[a-z]|\.[A-Z]\.|[A-Z]++\s(?:[A-Z][a-z]|season|draft|playoffs"
                             r"|finals|election)))"  # "the 2020 U.S. election", "the 2026 FIFA World Cup"
                             r"|(?<=\b[Aa]\s)(19\d\d|20[0-2]\d)(?=\s[A-Z][a-z])",
                             lambda m: year(int(m.group(1) or m.group(2))))

# "the 2020 census", "a 1999 study", "its 2023 report", "Apple's 2024 lineup": a year before
# a thing of its year; "the 2000 people", "a 1500 word essay" stay counts
_OF_A_YEAR = (r"season|census|elections?|campaign|budget|crisis|recession|pandemic|earthquake|hurricane"
              r"|tsunami|floods?|wildfires?|riots?|uprising|revolution|coup|war|crash|collapse|merger|report"
              r"|survey|study|paper|edition|model|film|movie|album|single|debut|tour|draft|championship"
              r"|finals?|playoffs|games|olympics|world\s[Cc]up|summit|conference|convention|debate|primary"
              r"|primaries|midterms|act|law|treaty|agreement|accord|ruling|verdict|trial|scandal|attacks?"
              r"|bombing|shooting|outbreak|strike|protests?|vintage|class|cohort|graduates|fiscal\syear"
              r"|school\syear|tax\syear|awards?|ceremony|prize|marathon|tournament|series|harvest|novel"
              r"|memoir|remake|sequel|reboot|redesign|reform|amendment|guidelines|revision|poll|polls"
              r"|estimate|forecast|earnings|filing|speech|visit|expedition|mission|launch|festival|expo"
              r"|exhibition|concert|lineup|release|recall|rebrand|relaunch|holiday\sseason|winter|summer"
              r"|spring|autumn|fall|[Ww]orld\s[Ss]eries|[Ss]uper\s[Bb]owl")
YEAR_BEFORE_A_THING_RULE = rule("year before a thing", r"(?:(?<=\b[Tt]he\s)|(?<=\b[Aa]\s)|(?<=\b[Ii]ts\s)"
                                r"|(?<=\b[Hh]is\s)|(?<=\b[Hh]er\s)|(?<=\b[Oo]ur\s)|(?<=\b[Tt]heir\s)"
                                r"|(?<=\b[Tt]his\s)|(?<=\b[Tt]hat\s)|(?<=\w['’]s\s))(1[5-9]\d\d|20\d\d)"
                                r"(?=\s(?:(?:annual|general|presidential|national|federal|regular|world|global"
                                r"|state|local|summer|winter|original|final|first)\s)?(?:" + _OF_A_YEAR
                                + r")\b)",
                                lambda m: year(int(m.group(1))))


def _many(words: str, s: str) -> str:
    """A name's number, counted many where a plural "s" follows it ("two F-35s")."""
    return plural(words) if s else words


def _model_number(m: re.Match[str]) -> str:
    """ "RTX 4090" -> "RTX forty ninety", "ISO 9001" -> "ISO ninety oh one", "RTX 4090s"."""
    return f"{m.group(1)} " + _many(pairs(int(m.group(2))), m.group(3))


_VARIANT = r"(?:-([1-9]00|[1-9]0?))"  # "-400", "-8": an airliner's variant


def _airliner(m: re.Match[str]) -> str:
    """ "747-400" -> "seven forty seven four hundred", "A380s" -> "A three eighties"."""
    maker, model, variant, many = m.groups()
    name = (maker + " " if maker else "") + pairs(int(model))
    if variant:
        name += " " + cardinal(int(variant))
    return _many(name, many)


def _processor(m: re.Match[str]) -> str:
    """ "i7-13700K" -> "i seven thirteen seven hundred K", "i9-9900K" -> "i nine ninety
    nine hundred K", "i3-1215U" -> "i three twelve fifteen U": the generation, then the rest."""
    model = m.group(2)
    head, tail = model[:2], model[2:]
    if len(tail) == 3:
        rest = pairs(int(tail))
    elif tail == "00":
        rest = "hundred"
    else:
        rest = ("oh " if tail[0] == "0" else "") + cardinal(int(tail))
    return " ".join(filter(None, ("i " + cardinal(int(m.group(1)[1])), cardinal(int(head)), rest,
                                  " ".join(m.group(3)))))


def _chip(m: re.Match[str]) -> str:
    """ "Ryzen 9 7950X" -> "Ryzen nine seventy nine fifty X", "Ryzen 7 5800X3D" -> "... fifty
    eight hundred X three D", "Core Ultra 7 155H" -> "... one fifty five H"."""
    n = int(m.group(3))
    model = cardinal(n // 100) + " hundred" if n >= 1000 and n % 100 == 0 else pairs(n)
    tier = cardinal(int(m.group(2))) + " " if m.group(2) else ""
    return f"{m.group(1)}{tier}{model}" + "".join(" " + (cardinal(int(c)) if c.isdigit() else c)
                                                   for c in m.group(4))


def _pre_release(m: re.Match[str]) -> str:
    """ "1.0.0-beta.2" -> "... beta two", "2.1-rc1" -> "... R C one"."""
    stage = "R C" if m.group(1).lower() == "rc" else m.group(1)
    return f" {stage} {cardinal(int(m.group(2)))}"


def _form(m: re.Match[str]) -> str:
    """ "Form 1040" -> "Form ten forty", "1099-NEC" -> "ten ninety nine NEC", "a 529 plan"."""
    number, suffix = m.group(2) or m.group(5) or m.group(8), m.group(3) or m.group(6)
    return (m.group(1) or "") + pairs(int(number)) + (" " + suffix if suffix else "")


# Before a hyphen between a name and a number is read as a pause, a range or "to".
HYPHENED_NAME_RULES: tuple[Rule, ...] = (
    # names said in pairs: "Fahrenheit 451", "Blink-182" (its hyphen is no range: read first)
    rule("title in pairs", r"\b(Fahrenheit\s|Blink-)(451|182)\b",
         lambda m: m.group(1).replace("-", " ") + pairs(int(m.group(2)))),
    # tax forms and plans by number, said in pairs: "Form 941", "1099-NEC", "a 529 plan"
    rule("form", r"\b(Form\s)(\d{3,4})(?:-([A-Z]{1,4}))?\b"
         r"|\b()(1040|1099|1098|1095)(?:-([A-Z]{1,4})\b|(?=\s(?:forms?|filers?|income|contractors?)\b)"
         r"|(?<=[Aa]\s1\d{3})|(?<=[Yy]our\s1\d{3})|(?<=[Tt]he\s1\d{3}))"
         r"|\b()(529|457)()(?=\s(?:plans?|accounts?)\b)",
         _form),
    rule("x86-64", r"\b(?i:x86)[-_]64\b", lambda m: "x eighty six sixty four"),  # the architecture, no range
    # the IEEE's standards: "802.11ax" -> "eight oh two dot eleven a x", "802.3bz"
    rule("IEEE standard", r"(?:(?<=IEEE\s)802\.(\d{1,2})([a-z]{0,2}|X)|\b802\.(\d{1,2})([a-z]{1,2}|X))\b",
         lambda m: "eight oh two dot " + cardinal(int(m.group(1) or m.group(3)))
         + "".join(" " + c for c in m.group(2) or m.group(4) or "")),
    rule("letter model", r"\b([A-Z])-([1-9]\d{1,2})(s?)\b(?![-.]\d)",
         lambda m: f"{m.group(1)} " + _many(pairs(int(m.group(2))), m.group(3))),  # "F-150", "F-35s"
    rule("memory kind", r"\b((?:LP|G)?DDR)(\d)(X?)-(\d{4})\b",
         lambda m: f"{m.group(1)} {cardinal(int(m.group(2)))}{' X' if m.group(3) else ''} "
                   f"{cardinal(int(m.group(4)))}"),  # "DDR5-6000": no range
    # "Boeing 787", "the 737 MAX", "747s", "777-300ER", "an A320-200": said in pairs, a variant whole
    rule("Boeing", r"(?:(?<=Boeing\s)|(?<=Boeing's\s))()(7[0-8]7)" + _VARIANT + r"?(s?)(?=[A-Z]{0,2}\b)",
         _airliner),
    rule("airliner", r"\b()(7[0-8]7)(?:" + _VARIANT + r"(?=[A-Z]{0,2}s?\b)|(?=s\b|\s(?:MAX|Max|Dreamliner"
         r"|jets?|aircraft|airliners?|planes?|freighters?)\b|['’]s\b))(s?)", _airliner),  # "the 787's range"
    rule("Airbus", r"\b(A)(3[0-8]\d)" + _VARIANT + r"?(s?)\b", _airliner),
    rule("model numbers", r"\b([A-Z]{2,5})\s([1-9]\d{3})(s)\b", _model_number),  # "RTX 4090s": no seconds
    rule("pre-release", r"(?<=\d)-(alpha|beta|rc|RC|preview)\.?(\d{1,3})\b", _pre_release),
    rule("processor", r"\b([iI][3579])-(\d{4,5})([A-Z]{0,3})\b", _processor),  # "i7-13700K"
    rule("chip", r"\b((?:Ryzen|Threadripper|EPYC|Athlon|Core\sUltra)\s(?:(?:Pro|PRO)\s)?)(?:(\d)\s)?"
         r"(\d{3,4})((?:[A-Z]{1,2}\d?[A-Z]?)?)\b", _chip),
)


# Before the code rule reads "49 ers", "v twenty".
# "Python 3.12", "iOS 17.4", "Python 3.12+" (and later): before "3.12+" is a count's "at least".
NAMED_VERSION_RULE = rule(
    "named version", r"\b((?:Python|Node(?:\.js)?|iOS|iPadOS|macOS|Android|Ubuntu|Debian|Fedora|Java|PHP"
    r"|Ruby|Rust|Kotlin|Swift|Perl|Django|Rails|React|Angular|TypeScript|Chrome|Firefox|Safari|Windows"
    r"|Linux|kernel|CUDA|PyTorch|TensorFlow|Unity|Blender|GPT|Llama|Gemini|Claude|Qwen|[Vv]ersion"
    r"|[Rr]elease|[Pp]atch)\s)(\d{1,2})\.(\d{1,2})(?!\d|\.\d)(\+(?![\w+]))?",
    lambda m: f"{m.group(1)}{cardinal(int(m.group(2)))} point {cardinal(int(m.group(3)))}"
    + (" plus" if m.group(4) else ""))
NAME_RULES: tuple[Rule, ...] = (
    # an SAT score in pairs: "1520 on the SAT", "a 1520 SAT score"
    rule("SAT score", r"\b(1[0-6]\d0|[4-9]\d0)(?=\s(?:on\sthe\s)?SATs?\b)", lambda m: pairs(int(m.group(1)))),
    # "the 405 freeway", "the 101 highway": a road's number as drivers say it
    rule("freeway", r"(?<=\b[Tt]he\s)(\d{1,3})(?=\s(?:[Ff]reeway|[Ff]wy|[Ee]xpressway|[Tt]ollway"
         r"|[Hh]ighway)\b)",
         lambda m: pairs(int(m.group(1)))),
    rule("model number", r"\b([A-Z]{2,5})\s([1-9]\d{3})()(?![\d,.]\d|\s?(?:%|" + UNIT_RE + ")" + UNIT_END
         + ")", _model_number),
    # a course by its code: "CS 101" -> "CS one oh one", "ECON 210" -> "ECON two ten"
    rule("course", r"\b([A-Z]{2,4})\s([1-9]\d{2})()(?=,?\s(?:section|sec\.|lecture|lab|class|course|exam"
         r"|final|midterm|meets|is|was|and|or)\b|[,;.]?$)", _model_number),
    rule("episode", r"\bS(\d{1,2})\s?E(\d{1,3})\b",
         lambda m: f"Season {cardinal(int(m.group(1)))}, episode {cardinal(int(m.group(2)))}"),  # "S4E7"
    rule("team", r"\b(?:49|76)ers\b", lambda m: _TEAMS[m.group(0)]),  # before "code" reads "49 ers"
    rule("M.2", r"\bM\.2\b", lambda m: "M dot two"),  # the drive's form factor
    rule("any minor version", r"\b(\d{1,3})\.x\b",
         lambda m: cardinal(int(m.group(1))) + " dot x"),  # "Node 20.x"
    # "Python 3.12", "iOS 17.4": a release's parts are numbers, not a decimal's digits
    NAMED_VERSION_RULE,
    rule("software version", r"\bv(\d++(?:\.\d++)*)(\.x)?\b",  # v20.11.0, "v1.x"
         lambda m: "version " + " point ".join(number(p) for p in m.group(1).split("."))
         + (" dot x" if m.group(2) else "")),
)
