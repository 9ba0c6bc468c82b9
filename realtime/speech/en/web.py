"""English readings of what is typed rather than said: addresses and symbols.

An address is read so that a listener could type it back: every part is
said, scheme and "www" included ("https://www.example.com/a-b" ->
"HTTPS colon slash slash WWW dot example dot com slash a dash b"), digits
one by one except round numbers ("rtx-6000" -> "RTX dash six thousand"),
and the marks a listener cannot guess: dot, dash, underscore, slash,
colon, ampersand. Upstream's clean-up would drop "/", "@" and "_" and turn
"-" into a pause.

A host needs a known top-level domain, a scheme or "www", or else labels of
two or more lowercase letters at its end ("notes.xyz", "Node.js"), so that
"3.14", "e.g." and "end.The" are no addresses.

A query and a fragment are said too ("?lang=en#top"), so is a local
server ("localhost:3000"), a file path ("~/.bashrc", "C:\\Users\\a.txt":
tilde, slash, backslash, dot), a variable ("$HOME": dollar HOME) and a
command-line option ("-la": dash l a; "--dry-run").
Hexadecimal literals are said digit by digit after "hex" ("0xFF" -> "hex F F").

Symbols that name themselves in typed text: "C++" -> "C plus plus",
"#tag" -> "hash tag", "@name" -> "at name", "cost$" -> "cost dollar",
"and/or" -> "and or", "rent/buy" -> "rent slash buy".
"""

from __future__ import annotations

import re

from realtime.speech.en import symbols
from realtime.speech.en.words import cardinal, digits, number
from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import DOTFILES, TLDS

_TLDS = frozenset(TLDS)
_MARKS = {".": "dot", "-": "dash", "_": "underscore", "/": "slash", ":": "colon", "&": "ampersand",
          "~": "tilde", "+": "plus", "=": "equals", "?": "question mark", "%": "percent", "#": "hash",
          "\\": "backslash", "$": "dollar"}
_UNIT_SHORTHAND = frozenset({"sq.ft", "sq.mi", "sq.yd", "cu.ft"})  # "900 sq.ft": no host
_SAID_AS = {"jpg": "jpeg", "www": "WWW"}  # said otherwise than spelled
_PART = re.compile(r"(\d+)|([A-Za-z]+)|(.)")


def _digits(run: str) -> str:
    """Digit by digit, except a round number ("6000" -> "six thousand")."""
    if len(run) >= 2 and run[0] != "0" and run.rstrip("0") == run[0] and len(run) <= 7:
        return cardinal(int(run))
    return digits(run)


def said(text: str) -> str:
    """An address's text as said: "a-1.b3_c" -> "a dash one dot b three underscore c"."""
    words = []
    for m in _PART.finditer(text):
        number, word, mark = m.groups()
        if number:
            words.append(_digits(number))
        elif word:
            words.append(_SAID_AS.get(word.lower(), word))
        elif mark in _MARKS:
            words.append(_MARKS[mark])
    return " ".join(words)


def _is_host(host: str, scheme: bool) -> bool:
    labels = host.partition(":")[0].split(".")
    if labels == ["localhost"]:
        return True
    if scheme or labels[0].lower() == "www" or labels[-1].lower() in _TLDS:
        return True
    tail = labels[-1]
    if host.lower() in _UNIT_SHORTHAND:
        return False
    return tail.isalpha() and tail.islower() and 2 <= len(tail) <= 6 and all(len(lb) >= 2 for lb in labels)


def _url(m: re.Match[str]) -> str | None:
    scheme, host, path = m.group(1), m.group(2), m.group(3)
    if not _is_host(host, bool(scheme)):
        return None
    spoken = (scheme.upper() + " colon slash slash " if scheme else "") + said(host)
    return spoken + (" " + _typed(path) if path else "")


def _typed(path: str) -> str:
    """A path as said, ending with the sentence's full stop (not the path's)."""
    return said(path.rstrip(".")) + ("." if path.endswith(".") else "")


_WORD_BEFORE = re.compile(r"(\d\s?)?[A-Za-z]+$")


def _word_slash(m: re.Match[str]) -> str | None:
    """ "rent/buy" -> "rent slash buy"; after a number's word it is "per"
    ("5 liters/day" -> "five liters per day")."""
    before = _WORD_BEFORE.search(m.string, max(0, m.start() - 30), m.start())
    if before is None:
        return None
    return " per " if before.group(1) else " slash "


def _letter_slash(m: re.Match[str]) -> str | None:
    if m.group(2):  # "weight (kg) / height (m)": after a bracket, divided only in a formula
        before = m.string[max(0, m.start() - 40):m.start()]  # bounded: linear over the sentence
        return " divided by " if "=" in before else " slash "
    before = m.string[max(0, m.start() - 12):m.start()]
    return " divided by " if re.search(r"[*×+=^]|\btimes\b", before) else " slash "


_SYMBOL_NAMES = {"@": "at", "#": "hash", "$": "dollar", "+": "plus"}


def _symbols(m: re.Match[str]) -> str:
    return " ".join(_SYMBOL_NAMES[c] for c in m.group(0))


# A word that numbers what follows its "#": "order #A1B2C3" is a number, "#tbt" a tag.
NUMBERED_BEFORE = re.compile(r"\b(?i:order|ticket|case|item|invoice|ref|reference|confirmation|account"
                             r"|issue|bug|room|seat|gate|booking|reservation|tracking|claim|policy|member"
                             r"|serial|model|part|pr|no)\s$")


def _tag(m: re.Match[str]) -> str:
    """ "#5" after a numbering word: "number"; "C#", "F#": "sharp"; "#tbt": "hash" (as NeMo's
    test data reads a tag)."""
    before = m.string[max(0, m.start() - 14):m.start()]  # bounded: linear over the sentence
    if m.group(0) == "#":
        if NUMBERED_BEFORE.search(before):
            return "number"
        if before.endswith(("C", "F")) and not before[-2:-1].isalnum():
            return "sharp"  # the languages C# and F#
    return _symbols(m)


_LOCAL = r"[\w.+&-]{1,64}"
_HOST = r"[\w-]{1,63}(?:\.[\w-]{1,63}){1,8}"
_PORT = r"(?::\d{1,5}(?!\d))?"
# "?lang=en&page=2", "#install": said too (a listener types them back); a
# sentence's own "?" is none (a key and "=" must follow).
_QUERY = r"(?:\?[\w.~%+-]{1,60}=[\w.~%+=&-]{0,200})?(?:#[\w.~-]{1,100})?"


def _hex_chars(run: str, upper: bool = False) -> str:
    """Hex digits one by one: "fe80" -> "f e eight zero" ("F E ..." with ``upper``)."""
    return " ".join(digits(c) if c.isdigit() else c.upper() if upper else c.lower() for c in run)


def _hex(m: re.Match[str]) -> str:
    """ "0x80070005" -> "hex eight zero zero seven zero zero zero five", "0xFF" -> "hex F F"."""
    return "hex " + _hex_chars(m.group(1), upper=True)


def _ipv6(m: re.Match[str]) -> str:
    """ "::1" -> "colon colon one", "fe80::1" -> "f e eight zero colon colon one"."""
    said: list[str] = []
    for i, group in enumerate(m.group(0).split(":")):
        said += ["colon"] * (i > 0) + [_hex_chars(group)] * bool(group)
    return " ".join(said)


def _option(m: re.Match[str]) -> str:
    """ "--dry-run" -> "dash dash dry dash run", "-la" -> "dash l a"."""
    if m.group(1):
        return "dash dash " + said(m.group(1))
    return "dash " + " ".join(m.group(2))


EARLY_RULES: tuple[Rule, ...] = (
    symbols.MUSIC_RULE,  # "G# minor" before "#" is a tag's
    symbols.DERIVATIVE_RULE,
    symbols.BIG_O_RULE,  # before "*", "+" and "/" inside it are read on their own
    rule("hex", r"\b0[xX]([0-9A-Fa-f]{1,16})\b", _hex),  # before "0x8" is read as a size
    # a UUID group by group, character by character
    rule("uuid", r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b",
         lambda m: ", ".join(_hex_chars(g) for g in m.group(0).split("-"))),
    # an IPv6 address: a "::" or three colons between hex groups (a clock has two)
    rule("ipv6", r"(?<![\w:])(?=[0-9A-Fa-f:]{0,39}::|(?:[0-9A-Fa-f]{1,4}:){3})(?:[0-9A-Fa-f]{0,4}:){2,7}"
         r"[0-9A-Fa-f]{0,4}(?![\w:])", _ipv6),
    rule("name's plus", r"(?<=[A-Za-z]\d)\+(?![\w+])|(?<=[A-Za-z]\d\d)\+(?![\w+])",
         lambda m: " plus"),  # "HDR10+": upstream drops a "+"
    rule("email", r"(?<![\w.+&-])(" + _LOCAL + ")@(" + _HOST + r")((?:/[\w.~-]{0,100}){0,20})(?<!\.)",
         lambda m: " ".join(filter(None, (said(m.group(1)), "at", said(m.group(2)), said(m.group(3)))))),
    rule("local address", r"(?<![\w.@/-])(?:(https?)://)?(localhost(?::\d{1,5}(?!\d))?)((?:/[\w.~-]{0,100}){0,20}"
         + _QUERY + r")(?=[\s,;!?)]|\.?$|\.\s)", _url),  # "localhost:3000/api"
    rule("file address", r"\bfile://((?:/[\w.~-]{0,100}){1,20})",
         lambda m: "file colon slash slash " + _typed(m.group(1))),
    # "/etc/nginx/nginx.conf", "~/.bashrc", "C:\Users\Sam\report.docx": typed back, every mark said;
    # one part after a word ("cd /tmp"), not after an amount ("$20 /month": per month)
    rule("path", r"(?<![\w/.:~\\])(?:~?/[\w.{}-]{1,100}(?:/[\w.{}-]{1,100}){1,20}|~/[\w.-]{1,100}"
         r"|\.{1,2}/[\w.-]{1,100}(?:/[\w.-]{1,100}){0,20}"  # "./script.sh", "../lib"
         r"|[A-Z]:\\(?:[\w.-]{1,100}\\){0,20}[\w.-]{1,100}|(?<=[A-Za-z]\s)/[A-Za-z][\w.-]{0,99}\w(?![\w/]))",
         lambda m: _typed(m.group(0))),
    # command-line options: "-v", "-la", "--dry-run" (upstream reads a "-" as a pause)
    rule("option", r"(?<=[\s`(])(?:--([a-z][a-z\d]*+(?:-[a-z\d]++)*+)"
         r"|-(?!(?:ing|ish|ism|ist|ed|er|ly)\b)([A-Za-z]{1,3}))(?![\w-])", _option),
    rule("home", r"(?<=\bcd\s)~(?=[\s.,;:!?]|$)", lambda m: "tilde"),  # "cd ~": the home folder
    rule("mode", r"(?<=\bchmod\s)([ugoa]{0,3})([+-])([rwxX]{1,3})\b",  # "chmod +x", "chmod u-w"
         lambda m: " ".join([*m.group(1), "plus" if m.group(2) == "+" else "minus", *m.group(3)])),
    rule("variable", r"(?<![\w$])\$(?=[A-Z_][A-Z\d_]+\b)", lambda m: "dollar "),  # "$HOME"
    rule("url", r"(?<![\w.@/-])(?:(https?|ftp)://)?(" + _HOST + _PORT + r")((?:/[\w.~-]{0,100}){0,20}"
         + _QUERY + r")(?=[\s,;!?)，。！？；）`\"”]|\.?$|\.\s)", _url),  # "`config.yaml`" too
    # git's revisions: "HEAD~3" -> "HEAD tilde three", "HEAD^" -> "HEAD caret"
    rule("revision", r"\b(HEAD|main|master)(?:~(\d{1,3})|(\^))(?![\w~^])",
         lambda m: m.group(1) + (" tilde " + cardinal(int(m.group(2))) if m.group(2) else " caret")),
    # a dotfile: ".env", ".bashrc", ".gitignore"
    rule("dotfile", r"(?<![\w./~-])\.(" + DOTFILES + r")\b", lambda m: "dot " + m.group(1)),
)
RULES: tuple[Rule, ...] = (
    rule("protocol version", r"\b(HTTP|SMB|SNMP)/([1-3](?:\.[01])?)\b",
         lambda m: f"{m.group(1)} {number(m.group(2))}"),  # "HTTP/2": HTTP two
    rule("and/or", r"\b(?i:and)/(?i:or)\b|\b(?i:over)/(?i:under)\b", lambda m: m.group(0).replace("/", " ")),
    rule("word slash", r"(?<=[A-Za-z]{2})\s?/\s?(?=[A-Za-z]{2})", _word_slash),
    # "a * b / c": between one-letter operands, "divided by" after another operator
    # ("x = a / b"), else "slash" ("A / B testing")
    rule("letter slash", r"(?<=\b[A-Za-z])()\s/\s(?=[A-Za-z]\b|\d)|(?<=\))(\s)/\s(?=[A-Za-z(]|\d)",
         _letter_slash),  # "x = y / 0" too
    rule("plus signs", r"(?<=[A-Za-z])\+{1,2}(?![\w+])", _symbols),  # C++, g++
    rule("joined plus", r"(?<=[A-Za-z\d])\+(?=[A-Za-z])", lambda m: " plus "),  # Ctrl+Alt+Del, Alt+F4
    rule("key plus digit", r"\b(Ctrl|Cmd|Alt|Shift|Option|Opt|Win|Super|Meta|Fn|Control|Command)\+(?=\d)",
         lambda m: m.group(1) + " plus "),  # "Cmd+Shift+4": no sign of a number
    rule("joined times", r"(?<=\b[A-Za-z])\*(?=\d|[A-Za-z]\b)|(?<=\d)\*(?=[A-Za-z]\b)",
         lambda m: " times "),  # "i*2", "2*n", "a*b" (upstream drops "*")
    # "#ThrowbackThursday": a tag's words, which the model would read as one
    rule("camel tag", r"(?:(?<=\s)|^)#((?:[A-Z][a-z]++){2,6})\b",
         lambda m: "hash " + " ".join(re.findall(r"[A-Z][a-z]+", m.group(1)))),
    rule("tag and handle", r"(?:(?<=\s)|^)[#@](?=[A-Za-z])|(?<=[A-Za-z])[#@$]{1,3}(?=[A-Za-z]|[\s,.;:!?)]|$)"
         r"|(?<=\d)@|@(?=\d)", _tag),
)
