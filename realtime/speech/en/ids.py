"""English readings of digit strings that name something rather than count it.

Whether "4411" is an amount or an identifier is decided by the words around it:

- after a word that introduces an identifier ("card ending in 4411", "order
  number 55012", "PIN: 1234", "tracking 1Z999", "ref 88213") the digits are
  read one by one;
- inside a token that mixes letters and digits ("xk7731", "C3B41D",
  "k-3q41z07-x") runs of one or two digits are numbers ("D31" -> "D thirty one
  four", "2-518-qz" -> "two five hundred eighteen qz"), longer ones digit
  by digit ("xk7731" -> "xk seven seven three one"),
  round ones as numbers ("t2000" -> "t two thousand");
- a run of slash-separated numbers that is no date or fraction ("45/120033/2020")
  is read part by part, with a pause for each slash;
- telephone numbers, digit by digit, a pause between groups:
  - North American numbers: "+1 (555) 123-4567", "555.123.4567",
    "555-123-4567-89" -> "plus one, five five five, one two three, four five
    six seven" (an extension after a fourth dash is one more group).
  - Social security numbers: "111-22-3333" -> "one one one, two two, three three
    three three" (no range "to" between its groups).
  - Toll-free words: "1-800-FLOWERS" -> "one, eight hundred, FLOWERS".
  - International numbers: "+44 20 7946 0958", "+44 (0)20 7946 0958",
    "+442079460958" -> "plus four four, two zero, ..." (a "(0)" is said: it is
    dialled inside the country).
- US retirement plans and tax sections "403(b)", "501(c)(3)" -> "four oh
  three b", "five oh one c three"; "B2G", "P2P"
  -> "B to G", "P to P".
"""

from __future__ import annotations

import re

from realtime.speech.en.words import cardinal, digits, number, plural
from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import DIGIT_GROUPS, LETTER_PAIR, UNIT_RE

# Words after which a run of digits is an identifier. Those that also count
# things ("order 500 units", "case 12") need "number", "no." or "#" after them.
_DIRECT = (r"ending in|ends in|ending with|(?:last|final) (?:four|4|two|2) digits?(?: (?:are|is|of))?"
           r"|ref|reference|tracking|confirmation|serial|routing|zip|postal code|otp|pin|pnr|passcode"
           r"|code|id|sku")
_NEEDS_NUMBER = (r"card|account|acct|order|ticket|invoice|case|booking|policy|claim|transaction|member"
                 r"|membership|customer|reference|tracking|confirmation|serial|model|part|item|sku|receipt")
_INTRO = (r"\b((?i:(?:" + _NEEDS_NUMBER + r")(?:\s(?:number|no\.|no(?=:)|num|id|code)|\s?#)|" + _DIRECT + r")"
          r"(?:\s(?:is|was|are))?(?::|\s?#)?)\s?(\d{4,20}|\d{2,8}(?:-\d{2,8}){1,4}|\d{3}\s\d{3}(?![\d,.]\d)"
          r"|[A-Z]{1,3}-?\d{2,10}(?:-[A-Z\d]{2,10}){0,4}|\d{1,3}[A-Z]{1,3}[A-Z\d]{3,30})\b(?!-)")


_NUMBER_SIGN = re.compile(r"\b(?i:no\.?|num)(?=\s|$|:)|\s?#")
_IDENTIFIER_BEFORE = re.compile(r"\b(?i:" + _NEEDS_NUMBER + r")\s$")


def _number_word(m: re.Match[str]) -> str | None:
    """ "No. 5", "Nos. 3 and 4" -> "number", "numbers"; left alone after a word
    that makes the number an identifier ("item no. 4411": its digits)."""
    if _IDENTIFIER_BEFORE.search(m.string, max(0, m.start() - 16), m.start()):
        return None
    return "numbers " if m.group(1) else "number "


# Before the address and code rules read the number after it ("No. 221B Baker Street").
NUMBER_SIGN_RULE = rule("number word", r"\b[Nn]o(s?)\.\s?(?=\d)", _number_word)


def _id_group(group: str) -> str:
    """ "3345" -> "three three four five", "A12" -> "A one two": letters as letters."""
    return " ".join(digits(run.group(1)) if run.group(1) else " ".join(run.group(2))
                    for run in _RUN.finditer(group))


def _identifier(m: re.Match[str]) -> str:
    """ "order #55012", "item no. 4411": the sign said ("number"), then the digits."""
    said = ", ".join(_id_group(group) for group in m.group(2).split("-"))  # "884-221-09": group by group
    return _NUMBER_SIGN.sub(" number", m.group(1)).replace("  ", " ") + " " + said


def _part(run: str) -> str:
    """One run of digits inside a code: a number when short or round, else its digits."""
    if len(run) <= 3 or run.rstrip("0") == run[0] != "0" and len(run) <= 7:
        return number(run)  # "08" -> "zero eight", "2000" -> "two thousand"
    return digits(run)


_RUN = re.compile(r"(\d+)|([A-Za-z]+)")


def _code(m: re.Match[str]) -> str:
    code = m.group(0)
    if code[-1] == "s" and code[-2].isdigit() and code[0].isalpha():
        return plural(_code_words(code[:-1]))  # "H100s", "MP3s": many of the named thing
    return _code_words(code)


def _code_words(code: str) -> str:
    return " ".join(_part(run.group(1)) if run.group(1) else run.group(2) for run in _RUN.finditer(code))


def _slashed(m: re.Match[str]) -> str:
    parts = m.group(0).split("/")
    return ", ".join(cardinal(int(p)) if len(p) <= 4 and p[0] != "0" else digits(p) for p in parts)


def _plan(m: re.Match[str]) -> str:
    """ "403(b)" -> "four oh three b", "457(b)" -> "four fifty seven b",
    "501(c)(3)" -> "five oh one c three"."""
    return _plan_said(m.group(2), m.group(3), m.group(4), bool(m.group(1)))


def _plan_said(plan: str, letter: str, clause: str | None, section: bool) -> str:
    head, tail = plan[0], int(plan[1:])
    rest = "oh " + cardinal(tail) if tail < 10 else cardinal(tail)
    said = " " + cardinal(int(clause)) if clause else ""
    return f"{'section ' if section else ''}{cardinal(int(head))} {rest} {letter}{said}"


_ROMAN_SMALL = {"i": 1, "ii": 2, "iii": 3, "iv": 4, "v": 5, "vi": 6, "vii": 7, "viii": 8, "ix": 9, "x": 10}


_SECTION_BEFORE = re.compile(r"(?:\b(?i:section|sections|sec\.|schedule|article|art\.|clause|rule|para\."
                             r"|paragraph)|§)\s?$")


def _subdivision(m: re.Match[str]) -> str | None:
    if "." in m.group(1) and not _SECTION_BEFORE.search(m.string, max(0, m.start() - 12), m.start()):
        return None  # "3.14(x)": a decimal, not a numbered section
    clause = m.group(3)
    if clause and not clause.isdigit() and clause not in _ROMAN_SMALL:
        return None
    said = "" if not clause else " " + cardinal(int(clause) if clause.isdigit() else _ROMAN_SMALL[clause])
    section = " point ".join(cardinal(int(part)) for part in m.group(1).split("."))
    return f"{section} {m.group(2)}{said}"


# "256GB/512GB/1TB": sizes to choose from, each an amount and its unit (no code)
_SIZE = re.compile(r"\d{1,4}(?:\.\d{1,2})?\s?(?:" + UNIT_RE + ")")


def _hyphenated(m: re.Match[str]) -> str | None:
    if all(_SIZE.fullmatch(part) for part in re.split("[-/]", m.group(0))):
        return None
    if re.fullmatch(r"\d+-\d+-[a-z]{3,}", m.group(0)):
        return None  # "10-15-minute": a range before a word
    if re.search(r"(?:^|[-/])\d+(?:st|nd|rd|th)(?:[-/]|$)", m.group(0)):
        return None  # "mid-19th-century", "1st/2nd/3rd": an ordinal among words
    return _code(m)


RULES: tuple[Rule, ...] = (
    # "ID: 7X9-42B": a code of letters and digits after "ID" ("7X9" is no product)
    rule("id code", r"\b(ID|Id)(?::|\s?#)?\s?(?=[A-Za-z\d-]*\d)(?=[\d-]*[A-Za-z])"
         r"([A-Za-z\d]++(?:-[A-Za-z\d]++)*+)(?![\w@/-])",
         lambda m: m.group(1) + " " + _code_words(m.group(2))),
    # "the 3-2-1 rule", "5-4-3-2-1": single digits in a chain, said one by one (no range)
    rule("digit chain", r"(?<![\w.-])\d(?:-\d){2,}+(?![\w-])", lambda m: digits(m.group(0))),
    rule("digit groups", DIGIT_GROUPS,
         lambda m: ", ".join(digits(g) if g.isdigit() else g for g in m.group(0).split("-"))),
    rule("hyphenated code", r"(?<![\w.@/-])(?=[\w/-]*\d)(?=[\w/-]*[A-Za-z])"
         r"[A-Za-z\d]++(?:[-/][A-Za-z\d]++){2,}+"
         r"(?![\w@/-])", _hyphenated),
    rule("identifier after word", _INTRO, _identifier),
    # "Model no. XR-2000B"
    rule("number before a code", r"\b[Nn]o\.\s?(?=[A-Z]{1,4}-?\d)", lambda m: "number"),
    rule("plan or section", r"(§\s?)?\b([1-9]\d\d)\(([a-z])\)(?:\((\d{1,2})\))?", _plan),
    # a rule's subdivisions: "12(b)(6)" -> "twelve b six", "3(a)(ii)" -> "three a two",
    # a numbered section's: "4.2(a)(iii)" -> "four point two a three"
    rule("subdivision", r"(?<![\w.])(\d{1,2}(?:\.\d{1,2}){0,2})\(([a-z])\)"
         r"(?:\((\d{1,2}|[ivx]{1,4})\))?(?![\w(])",
         _subdivision),
    rule("plan", r"\b(401|403|457)([kb])\b",
         lambda m: _plan_said(m.group(1), m.group(2), None, False)),  # "a 401k"
    rule("letter to letter", LETTER_PAIR, lambda m: f"{m.group(1)} to {m.group(2)}"),
    rule("always", r"(?<![\w/.])24/7/365(?![\w/])", lambda m: "twenty four seven three sixty five"),
    rule("slashed numbers", r"(?<![\w/.])\d{1,8}(?:/\d{1,8}){2,}(?![\w/])", _slashed),
)
# After every rule that gives a token's digits a meaning ("5km", "3rd", "1080p").
CODE_RULE = rule("code", r"(?<![\w.@])(?=[A-Za-z-]*\d)(?=[\d-]*[A-Za-z])"
                       r"[A-Za-z\d]++(?:-[A-Za-z\d]++)*+(?![\w@])",
                 _code)


# --- telephone numbers --------------------------------------------------------------

def _groups(m: re.Match[str], count: int | None = None) -> str:
    """Groups 2.. (the first ``count`` of them), digit by digit; a country code (group 1) first."""
    plus = m.group(1)
    spoken = ", ".join(digits(g) for g in m.groups()[1:][:count] if g)
    return ("plus " + digits(plus) + ", " if plus else "") + spoken


def _international(m: re.Match[str]) -> str | None:
    groups = [m.group(1), *(g for g in re.split(r"[\s.()-]+", m.group(2)) if g)]
    if sum(map(len, groups)) < 8:
        return None
    return "plus " + ", ".join(digits(g) for g in groups)


def _phone(m: re.Match[str]) -> str:
    """A North American number, its extension after it ("x12", "ext. 7") said as one."""
    spoken = _groups(m, 6)
    return spoken + " extension " + digits(m.group(8)) if m.group(8) else spoken


def _dialled(m: re.Match[str]) -> str | None:
    groups = [m.group(1), *m.group(2).split()]
    if sum(map(len, groups)) < 9:
        return None
    return ", ".join(digits(g) for g in groups)


def _unbroken(m: re.Match[str]) -> str:
    """ "+442079460958": the country code cannot be told apart; the digits, after "plus"."""
    return "plus " + digits(m.group(1))


_TOLL_FREE = {"800": "eight hundred", "888": "eight eight eight", "877": "eight seven seven",
              "866": "eight six six", "855": "eight five five", "844": "eight four four",
              "833": "eight three three"}

# Before the list markers: "(555) 123-4567" is none.
PHONE_RULES: tuple[Rule, ...] = (
    rule("phone", r"(?<![\w+-])(?:\+(\d{1,3})[\s.-]?|(1)[-.])?(?:\((\d{3})\)[\s-]?|(\d{3})[\s.-])"
         r"(\d{3})[\s.-](\d{4})(?:-(\d{1,4}))?(?![\d-])(?:\s?(?:x|ext\.?)\s?(\d{1,5})\b)?", _phone),
    rule("social security", r"(?<![\w+.-])()(\d{3})-(\d{2})-(\d{4})(?![\d-])", _groups),
    rule("toll free", r"(?<![\w+-])1-(8[0-8][0-8])-(?=[A-Z0-9]{1,7}(?:-[A-Z0-9]{1,7}){0,3}\b)",
         lambda m: "one, " + _TOLL_FREE.get(m.group(1), digits(m.group(1))) + ", " if m.group(1) in _TOLL_FREE
         else None),
    rule("international phone", r"(?<![\w+])\+(\d{1,3})((?:[\s.-](?:\(0\)\s?)?\d{1,4}){2,5})(?!\d|[.-]\d)",
         _international),
    rule("international unbroken", r"(?<![\w+])\+(\d{8,15})(?!\d)", _unbroken),
    # "0049 30 1234567", "07700 900123": dialled with a leading zero, group by group
    rule("dialled", r"(?<![\w+.,])(00\d{1,3}|0\d{2,4})((?:\s\d{2,8}){1,3})(?![\d.,]\d|\d)", _dialled),
)
