"""English readings of references into a text: a page, figure, section or clause
("pp. 10-12" -> "pages ten to twelve", "Fig. 3", "Vol. 2", "Ch. 4", "Eq. (5)", "§ 7",
"cl. 4"; a section's four digits in pairs: "§ 1983" -> "section nineteen eighty three"),
and a verse of scripture ("John 3:16" -> "John three sixteen", "Psalm 23:1-6" -> "Psalm
twenty three, verses one to six", "1 Cor. 13:4" -> "First Corinthians thirteen four"),
which the clock and ratio rules would otherwise read ("twenty three to one to six"); a
court's rules and reporters ("Fed. R. Civ. P. 12(b)(6)" -> "Federal Rule of Civil Procedure
twelve b six", "347 U.S. 483" -> "three forty seven U S four eighty three": volume and page
in pairs, as lawyers cite them).
"""

from __future__ import annotations

import re

from realtime.speech.en.words import cardinal, pairs
from realtime.speech.rewrite import Rule, rule

_REFERENCES = {"pp": "pages", "p": "page", "fig": "figure", "figs": "figures", "ch": "chapter",
               "prop": "proposition", "art": "article", "para": "paragraph",
               "chap": "chapter", "vol": "volume", "vols": "volumes", "eq": "equation",
               "eqs": "equations", "sec": "section", "secs": "sections", "§": "section", "§§": "sections",
               "¶": "paragraph", "¶¶": "paragraphs", "ep": "episode", "eps": "episodes", "lvl": "level",
               "cl": "clause", "n": "note", "nn": "notes"}


def _reference(m: re.Match[str]) -> str:
    word = m.group(1) or m.group(2) or m.group(3)
    spoken = _REFERENCES[word.lower()]
    return spoken.capitalize() if word[0].isupper() else spoken


_BOOKS = ("Genesis Exodus Leviticus Numbers Deuteronomy Joshua Judges Ruth Samuel Kings Chronicles "
          "Ezra Nehemiah Esther Job Psalm Psalms Proverbs Ecclesiastes Isaiah Jeremiah Lamentations "
          "Ezekiel Daniel Hosea Joel Amos Obadiah Jonah Micah Nahum Habakkuk Zephaniah Haggai Zechariah "
          "Malachi Matthew Mark Luke John Acts Romans Corinthians Galatians Ephesians Philippians "
          "Colossians Thessalonians Timothy Titus Philemon Hebrews James Peter Jude Revelation")
# The abbreviations a study note writes ("Matt. 5:9", "1 Cor 13:4", "Ps 23:1").
_SHORT_BOOKS = {"Gen": "Genesis", "Ex": "Exodus", "Exod": "Exodus", "Lev": "Leviticus", "Num": "Numbers",
                "Deut": "Deuteronomy", "Josh": "Joshua", "Judg": "Judges", "Sam": "Samuel", "Kgs": "Kings",
                "Chron": "Chronicles", "Neh": "Nehemiah", "Esth": "Esther", "Ps": "Psalm", "Psa": "Psalm",
                "Prov": "Proverbs", "Eccl": "Ecclesiastes", "Isa": "Isaiah", "Jer": "Jeremiah",
                "Lam": "Lamentations", "Ezek": "Ezekiel", "Dan": "Daniel", "Hos": "Hosea", "Obad": "Obadiah",
                "Mic": "Micah", "Hab": "Habakkuk", "Zeph": "Zephaniah", "Zech": "Zechariah", "Mal": "Malachi",
                "Matt": "Matthew", "Mt": "Matthew", "Mk": "Mark", "Lk": "Luke", "Jn": "John", "Rom": "Romans",
                "Cor": "Corinthians", "Gal": "Galatians", "Eph": "Ephesians", "Phil": "Philippians",
                "Col": "Colossians", "Thess": "Thessalonians", "Tim": "Timothy", "Heb": "Hebrews",
                "Jas": "James", "Pet": "Peter", "Rev": "Revelation"}
_BOOK_RE = "|".join(sorted([*_BOOKS.split(), *_SHORT_BOOKS], key=len, reverse=True))
_PART = {"1": "First", "2": "Second", "3": "Third"}


def _verse(m: re.Match[str]) -> str:
    """ "John 3:16" -> "John three sixteen"; a range of verses: "Psalm 23:1-6" -> "Psalm
    twenty three, verses one to six"."""
    part, book, chapter, verse, last = m.groups()
    spoken = (_PART[part] + " " if part else "") + _SHORT_BOOKS.get(book, book) + " " + cardinal(int(chapter))
    if last:
        return f"{spoken}, verses {cardinal(int(verse))} to {cardinal(int(last))}"
    return f"{spoken} {cardinal(int(verse))}"


_COURT_RULES = {"Civ. P.": "Civil Procedure", "Crim. P.": "Criminal Procedure", "Evid.": "Evidence",
                "App. P.": "Appellate Procedure", "Bankr. P.": "Bankruptcy Procedure"}


_REPORTERS = {"S.Ct.": "Supreme Court", "F.2d": "F second", "F.3d": "F third", "F.4th": "F fourth",
              "F.Supp.": "F Supp"}


def _reporter(m: re.Match[str]) -> str:
    volume, page, name = int(m.group(1)), int(m.group(3)), m.group(2)
    return f"{pairs(volume)} {_REPORTERS.get(name.replace(' ', ''), name)} {pairs(page)}"


# "p. 5", "Fig. 3", "Sec. 4(b)", "§ 1983": the word before the number, before the number's
# own rule claims it ("4(b)" is a subdivision's) and leaves the word no digit to see.
RULES: tuple[Rule, ...] = (
    rule("section number", r"(?<![\w§])(§§?)\s?([1-9]\d{3})(?![\d,.]\d|\s?[-–—]\s?\d)",
         lambda m: _REFERENCES[m.group(1)] + " " + pairs(int(m.group(2)))),  # "§ 1983": nineteen eighty three
    rule("reference", r"(?<!\d)(?<!\d\s)(?:\b(pp|p|[Ff]igs?|[Cc]hap|[Cc]h|[Vv]ols?|[Ee]qs?|[Ss]ecs?"
         r"|[Pp]rop|Art|[Pp]ara|[Ee]ps?|cl|nn?)\.|\b([Ll]vl)\.?|(§§?|¶¶?))"
         r"\s?(?=\d|\(\d)",  # "Eq. (3)" too
         _reference),
    rule("court rules", r"\bFed\.\sR\.\s(Civ\.\sP\.|Crim\.\sP\.|Evid\.|App\.\sP\.|Bankr\.\sP\.)(?=\s\d)",
         lambda m: "Federal Rule of " + _COURT_RULES[m.group(1)]),
    rule("reporter", r"(?<![\w.,])(\d{1,3})\s(U\.\s?S\.|S\.\s?Ct\.|F\.\s?(?:2d|3d|4th)|F\.\s?Supp\.)"
         r"\s(\d{1,4})\b", _reporter),  # "347 U.S. 483", "123 S. Ct. 2325"
    # before the clock ("3:16") and the ratio ("23:1")
    rule("verse", r"(?<![\w.])(?:([1-3])\s?)?\b(" + _BOOK_RE + r")\.?\s(\d{1,3}):(\d{1,3})"
         r"(?:\s?[-–]\s?(\d{1,3}))?(?![\d:]|\s?[ap]\.?m\b)", _verse),
)
