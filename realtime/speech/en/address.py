"""English readings of street addresses.

"1315 W Grand Ave" -> "thirteen fifteen West Grand Avenue": a house number
before a street is read in pairs as people say it (123 -> "one twenty
three", 708 -> "seven zero eight", 2788 -> "twenty seven eighty eight"; a
letter after it said as one: "221B Baker Street"), a
compass letter before the street's name is its direction, and the street's
kind is said in full (St, Ave, Blvd, Rd, Dr, Ln, Ct, Expy, Hwy, Pkwy, ...).
A unit or a road before its number is said in full ("Apt. 4B" -> "Apartment
four B", "Hwy. 101" -> "Highway one zero one"), a highway's direction after
it ("I-80 W" -> "I eighty West"). A state's code after a
city's comma is the state ("Santa Clara, CA 95051" -> "Santa Clara,
California nine five zero five one"; a code that is also a word, "OK", "OR", "IN",
only before a ZIP code or after a place's word: "born in Tulsa, OK"; the wires'
abbreviations likewise: "Gary, Ind.", "SAN JOSE, Calif.", and a lawmaker's "(D-Calif.)" ->
"Democrat of California"), and a ZIP code after a state is read
digit by digit ("IL 62704").
"""

from __future__ import annotations

import re

from realtime.speech.en.words import cardinal, digits, ordinal
from realtime.speech.rewrite import Rule, rule, stop_kept

_STATES = {
    "AL": "Alabama", "AK": "Alaska", "AZ": "Arizona", "AR": "Arkansas", "CA": "California",
    "CO": "Colorado", "CT": "Connecticut", "DE": "Delaware", "FL": "Florida", "GA": "Georgia",
    "HI": "Hawaii", "ID": "Idaho", "IL": "Illinois", "IN": "Indiana", "IA": "Iowa", "KS": "Kansas",
    "KY": "Kentucky", "LA": "Louisiana", "ME": "Maine", "MD": "Maryland", "MA": "Massachusetts",
    "MI": "Michigan", "MN": "Minnesota", "MS": "Mississippi", "MO": "Missouri", "MT": "Montana",
    "NE": "Nebraska", "NV": "Nevada", "NH": "New Hampshire", "NJ": "New Jersey", "NM": "New Mexico",
    "NY": "New York", "NC": "North Carolina", "ND": "North Dakota", "OH": "Ohio", "OK": "Oklahoma",
    "OR": "Oregon", "PA": "Pennsylvania", "RI": "Rhode Island", "SC": "South Carolina",
    "SD": "South Dakota", "TN": "Tennessee", "TX": "Texas", "UT": "Utah", "VT": "Vermont",
    "VA": "Virginia", "WA": "Washington", "WV": "West Virginia", "WI": "Wisconsin", "WY": "Wyoming",
    "DC": "D C", "PR": "Puerto Rico", "GU": "Guam", "VI": "Virgin Islands",
}
_STATE_RE = "|".join(_STATES)
# The news wires' abbreviations of states ("Calif.", "N.Y."), each with its code.
_AP_STATES = {
    "Ala": "AL", "Ariz": "AZ", "Ark": "AR", "Calif": "CA", "Colo": "CO", "Conn": "CT", "Del": "DE",
    "Fla": "FL", "Ga": "GA", "Ill": "IL", "Ind": "IN", "Kan": "KS", "Kans": "KS", "Ky": "KY", "La": "LA",
    "Md": "MD", "Mass": "MA", "Mich": "MI", "Minn": "MN", "Miss": "MS", "Mo": "MO", "Mont": "MT",
    "Neb": "NE", "Nebr": "NE", "Nev": "NV", "N.H": "NH", "N.J": "NJ", "N.M": "NM", "N.Y": "NY",
    "N.C": "NC", "N.D": "ND", "Okla": "OK", "Ore": "OR", "Pa": "PA", "R.I": "RI", "S.C": "SC",
    "S.D": "SD", "Tenn": "TN", "Tex": "TX", "Vt": "VT", "Va": "VA", "Wash": "WA", "W.Va": "WV",
    "Wis": "WI", "Wyo": "WY",
}
_AP_STATE_RE = "|".join(sorted((k.replace(".", r"\.") for k in _AP_STATES), key=len, reverse=True))
_FULL_STATE_RE = "|".join(sorted(set(_STATES.values()) - {"D C"}, key=len, reverse=True))
_PARTIES = {"D": "Democrat", "R": "Republican", "I": "Independent"}
_KINDS = {"st": "Street", "ave": "Avenue", "av": "Avenue", "blvd": "Boulevard", "rd": "Road",
          "dr": "Drive", "ln": "Lane", "ct": "Court", "expy": "Expressway", "hwy": "Highway",
          "pkwy": "Parkway", "pl": "Place", "ter": "Terrace", "cir": "Circle", "sq": "Square",
          "trl": "Trail", "way": "Way", "street": "Street", "avenue": "Avenue", "boulevard": "Boulevard",
          "road": "Road", "drive": "Drive", "lane": "Lane", "court": "Court", "highway": "Highway",
          "parkway": "Parkway", "place": "Place", "terrace": "Terrace", "circle": "Circle",
          "square": "Square", "trail": "Trail", "plaza": "Plaza"}
_KIND_RE = "|".join(sorted(_KINDS, key=len, reverse=True))
_DIRECTIONS = {"N": "North", "S": "South", "E": "East", "W": "West", "NE": "Northeast",
               "NW": "Northwest", "SE": "Southeast", "SW": "Southwest"}


def house_number(run: str) -> str:
    """Pairs, as said: "123" -> "one twenty three", "2788" -> "twenty seven eighty eight"."""
    n = int(run)
    if len(run) > 4 or run[0] == "0":
        return digits(run)
    if n < 100 or len(run) == 4 and n % 1000 == 0:
        return cardinal(n)
    head, tail = divmod(n, 100)
    if tail == 0:
        return cardinal(head) + " hundred"
    return cardinal(head) + " " + (cardinal(tail) if tail >= 10 else "zero " + cardinal(tail))


def _street_name(words: str) -> str:
    return re.sub(r"\b(\d{1,3})(?:st|nd|rd|th)\b", lambda m: ordinal(int(m.group(1))), words)


def _street(m: re.Match[str]) -> str:
    number, letter, direction, name, kind = m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)
    spoken = house_number(number) + " " + (letter + " " if letter else "")  # "221B Baker Street"
    if direction:
        spoken += _DIRECTIONS[direction] + " "
    spoken += _street_name(name) + _KINDS[kind.lower()]
    if m.group(6):
        spoken += " " + _DIRECTIONS[m.group(6)]  # "Pennsylvania Ave. NW"
    return spoken + stop_kept(m)  # "Elm St. It was": the sentence ended there


# Codes that are also words ("Sure, OK."): a state before a ZIP code, or after a city
# that a word of place leads to ("born in Tulsa, OK").
_WORDLIKE = frozenset(["OK", "IN", "OR", "ME", "HI", "OH", "ID"])


# A city's name before the comma: "Dallas, TX", not "M = 34.2, SD = 8.1".
_CITY_BEFORE = re.compile(r"[A-Z][a-z]+\.?,\s$")
_PLACE_BEFORE = re.compile(r"\b(?:in|from|to|at|near|of|outside|around|visit|visited|visiting)"
                           r"\s(?:[A-Z][a-z]+\.?\s){0,2}[A-Z][a-z]+,\s$")


def _state(m: re.Match[str]) -> str | None:
    zipcode = ", ".join(digits(g) for g in m.groups()[2:] if g)
    before = max(0, m.start() - 40), m.start()
    place = _PLACE_BEFORE if m.group(1) in _WORDLIKE else _CITY_BEFORE
    if not zipcode and not place.search(m.string, *before):
        return None
    spoken = _STATES[m.group(1)]
    return spoken + (m.group(2) or " " if zipcode else "") + zipcode


# A dateline's city in capitals ("SAN JOSE, Calif."); abbreviations that are also words or
# names ("Hello, Miss. Smith", "Yes, Pa.") need it or a place's word before the city.
_DATELINE_BEFORE = re.compile(r"\b[A-Z]{2,}\.?,\s$")
_WORDLIKE_AP = frozenset(["Miss", "Pa", "Mo", "Del", "Wash", "Ill", "Ind", "La", "Ga", "Va", "Md", "Conn",
                          "Mass", "Ore", "Tex", "Ala", "Kan", "Vt"])


def _ap_state(m: re.Match[str]) -> str | None:
    """ "Gary, Ind." -> "Gary, Indiana", "SAN JOSE, Calif." -> "... California"."""
    before = max(0, m.start() - 40), m.start()
    place = _PLACE_BEFORE if m.group(1) in _WORDLIKE_AP else _CITY_BEFORE
    if not (_DATELINE_BEFORE.search(m.string, *before) or place.search(m.string, *before)):
        return None
    return _STATES[_AP_STATES[m.group(1)]] + stop_kept(m)


def _party_state(m: re.Match[str]) -> str:
    """ "(D-Calif.)", "(R-Ohio)", "(I-VT)": a lawmaker's party of a state."""
    party, state = _PARTIES[m.group(1)], m.group(2) or m.group(3) or m.group(4)
    name = _STATES[_AP_STATES[state]] if state in _AP_STATES else _STATES.get(state, state)
    return f"{party} of {name}"


# A unit of a building before its number or letter ("Apt. 4B", "Ste 200", "Rm. 12").
_UNITS = {"apt": "Apartment", "ste": "Suite", "bldg": "Building", "rm": "Room", "fl": "Floor"}


def _road(m: re.Match[str]) -> str:
    """ "Hwy. 101", "Rte 66": a road's number in pairs, as a house's ("one zero one")."""
    return {"hwy": "Highway", "rte": "Route"}[m.group(1).lower()] + " " + house_number(m.group(2))


# Before a dateline's wire ("/PRNewswire/") is read.
WIRE_STATE_RULE = rule("wire state", r"(?<=,\s)(" + _AP_STATE_RE + r")\.(?=$|[\s,;:)])", _ap_state)
RULES: tuple[Rule, ...] = (
    rule("party and state", r"(?:(?<=\()|(?<=,\s))([DRI])-(?:(" + _AP_STATE_RE + r")\.|(" + _STATE_RE
         + r")\b|(" + _FULL_STATE_RE + r")\b)(?=\)|,\s)", _party_state),  # "(D-Calif.)", ", R-Ohio, said"
    rule("building unit", r"\b((?i:apt|ste|bldg|rm)|Fl)\b\.?\s?#?\s?(?=\d|[A-Z]\b)",
         lambda m: _UNITS[m.group(1).lower()] + " "),
    rule("road number", r"\b(Hwy|HWY|Rte|RTE)\.?\s(\d{1,4})\b", _road),
    # "I-80 W": a highway's direction, not watts
    rule("highway direction", r"\b(I|US|SR)-(\d{1,3})\s([NSEW])\b(?!['’.]\w)",
         lambda m: f"{m.group(1)} {cardinal(int(m.group(2)))} {_DIRECTIONS[m.group(3)]}"),
    rule("street", r"(?<![\w.,$])(\d{1,5})([A-Z])?\s(?:(N|S|E|W|NE|NW|SE|SW)\.?\s)?"
         r"((?:(?:[A-Z][a-z]++|\d{1,3}(?:st|nd|rd|th))\s){1,3})(" + r"(?i:" + _KIND_RE + r"))\b\.?"
         r"(?:\s(NE|NW|SE|SW|N|S|E|W)\b\.?)?",
         _street),
    rule("state", r"(?<=,\s)(" + _STATE_RE + r")\b(?:(,?\s)(\d{5})(?:-(\d{4}))?(?!\d))?(?=[,.;]|\s|$)",
         _state),
    rule("zip code", r"\b(" + _STATE_RE + r")\s(\d{5})(?:-(\d{4}))?(?!\d)",
         lambda m: m.group(1) + " " + ", ".join(digits(g) for g in m.groups()[1:] if g)),
)
