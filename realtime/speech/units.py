"""Shared tables and number patterns: units, currencies, magnitudes, months.

Units are case-sensitive (``m`` metre, ``M`` mega; ``mm`` millimetre). A
unit is read only right after a number ("5 km", "2.5kg"); a word that is
also English ("in", "a", "t") is left out on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# A written number: optional sign (not after a letter or digit: "5-3" is a
# range), digits with or without thousands commas, optional decimals. The
# lookbehind starts matches only at the head of a digit run and the
# possessive quantifiers never backtrack, so a 5,000-digit run is linear.
# A list marker opening a sentence: "1. ", "2) ", "(3) ", "（4）", "5、" (not "1.5").
LIST_MARKER = r"^\s*(?:[(（](\d{1,3})[)）]|(\d{1,3})(?:[)、]|\.(?!\d)))\s*(?=\S)"
# A bullet opening a line ("- item", "• item"): not read (upstream would read "-" as a pause).
BULLET = r"^\s*[-*•·‣▪●]\s+(?=\S)"
# "978-0-13-468599-1" (an ISBN): four or more hyphened groups of digits, said group by group
DIGIT_GROUPS = r"(?<![\w.-])\d{1,5}(?:-[\dX]{1,7}){3,6}(?![\w-])"
# "P2P", "B2C", "O2O": "to" between two letters of business shorthand (not "H2O")
LETTER_PAIR = r"\b([A-GMOP])2([A-GMOP])\b"
SIGN = r"(?:(?<![\w)\].])[-−+])?"
# ".75" is a number too, where no word or digit comes before its dot.
UNSIGNED = r"(?:(?<![\d.])(?<!\d,)(?:\d{1,3}(?:,\d{3})++(?![\d])|\d++)(?:\.\d++)?|(?<![\w.,])\.\d++)"
NUM = SIGN + UNSIGNED



MAX_SPOKEN_DIGITS = 15  # longer integers are read digit by digit, never converted
MAX_GROUPED_DIGITS = 21  # unless written with thousands separators: a quantity


def read_number(text: str, cardinal: Callable[[int], str], digits: Callable[[str], str],
                words: dict[str, str]) -> str:
    """A written number (sign, digits with thousands commas, decimals) read
    with a language's ``cardinal`` and ``digits``; ``words`` names "-", "+",
    "zero" and "point". A leading zero reads digit by digit ("007")."""
    sign = ""
    if text[:1] in "-−+":
        sign, text = words["+" if text[0] == "+" else "-"], text[1:]
    longest = MAX_GROUPED_DIGITS if "," in text else MAX_SPOKEN_DIGITS
    whole, _, frac = text.replace(",", "").partition(".")
    if not whole:
        spoken = words["zero"]
    elif len(whole) > 1 and whole[0] == "0" or len(whole) > longest:
        spoken = digits(whole)
    else:
        spoken = cardinal(int(whole))
    return (sign + spoken + (words["point"] + digits(frac) if frac else "")).strip()


# A power written in superscripts ("10⁻⁶", "2¹⁰", "x⁴"; a lone "²" or "³" is a symbol's
# reading, "squared", 的平方) and the table that turns it into digits.
SUPERSCRIPT_POWER = r"(⁻?[⁰¹²³⁴⁵⁶⁷⁸⁹]{2,3}|⁻[⁰¹²³⁴⁵⁶⁷⁸⁹]|[⁰¹⁴⁵⁶⁷⁸⁹])(?![⁰¹²³⁴⁵⁶⁷⁸⁹])"
SUPERSCRIPT_DIGITS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")

# A dotfile's or a tool folder's name after its dot (".env", ".venv", ".github"): said "dot ...".
DOTFILES = ("env|venv|bashrc|zshrc|profile|gitignore|gitattributes|dockerignore|npmrc|nvmrc|vimrc"
            "|editorconfig|vscode|github|ssh|cache|prettierrc|eslintrc|babelrc|htaccess")

# symbol/name -> (English singular, Chinese)
UNITS: dict[str, tuple[str, str]] = {
    "km/h": ("kilometer per hour", "公里每小时"), "kph": ("kilometer per hour", "公里每小时"),
    "m/s": ("meter per second", "米每秒"),
    "km/s": ("kilometer per second", "公里每秒"), "mph": ("mile per hour", "英里每小时"),
    "mpg": ("mile per gallon", "英里每加仑"),
    "km²": ("square kilometer", "平方千米"), "km2": ("square kilometer", "平方千米"),
    "km³": ("cubic kilometer", "立方千米"), "cm³": ("cubic centimeter", "立方厘米"),
    "mm²": ("square millimeter", "平方毫米"), "ft²": ("square foot", "平方英尺"),
    "m²": ("square meter", "平方米"), "m2": ("square meter", "平方米"), "㎡": ("square meter", "平方米"),
    "cm²": ("square centimeter", "平方厘米"), "m³": ("cubic meter", "立方米"),
    "sq ft": ("square foot", "平方英尺"), "sq mi": ("square mile", "平方英里"),
    "sq. ft": ("square foot", "平方英尺"), "sq.ft": ("square foot", "平方英尺"),
    "ha": ("hectare", "公顷"), "acres": ("acre", "英亩"), "acre": ("acre", "英亩"),
    "km": ("kilometer", "公里"), "cm": ("centimeter", "厘米"), "mm": ("millimeter", "毫米"),
    "nm": ("nanometer", "纳米"), "μm": ("micrometer", "微米"), "m": ("meter", "米"),
    "kg": ("kilogram", "千克"), "mg": ("milligram", "毫克"), "g": ("gram", "克"),
    "lbs": ("pound", "磅"), "lb": ("pound", "磅"), "oz": ("ounce", "盎司"),
    "ft": ("foot", "英尺"), "mi": ("mile", "英里"), "yd": ("yard", "码"), "nmi": ("nautical mile", "海里"),
    "kts": ("knot", "节"),
    "ml": ("milliliter", "毫升"), "mL": ("milliliter", "毫升"), "L": ("liter", "升"),
    "l": ("liter", "升"), "gal": ("gallon", "加仑"), "tsp": ("teaspoon", "茶匙"),
    "tbsp": ("tablespoon", "汤匙"), "Tbsp": ("tablespoon", "汤匙"),
    "mmHg": ("millimeter of mercury", "毫米汞柱"),
    "kWh": ("kilowatt hour", "千瓦时"), "kW": ("kilowatt", "千瓦"), "MW": ("megawatt", "兆瓦"),
    "W": ("watt", "瓦"), "V": ("volt", "伏"), "mAh": ("milliamp hour", "毫安时"),
    "GHz": ("gigahertz", "吉赫兹"), "MHz": ("megahertz", "兆赫兹"), "kHz": ("kilohertz", "千赫兹"),
    "Hz": ("hertz", "赫兹"),
    "TB": ("terabyte", "TB"), "GB": ("gigabyte", "GB"), "MB": ("megabyte", "MB"),
    "KB": ("kilobyte", "KB"), "mb": ("megabyte", "MB"), "kB": ("kilobyte", "KB"),
    "Mbps": ("megabit per second", "兆比特每秒"),
    "mbps": ("megabit per second", "兆比特每秒"), "Gbps": ("gigabit per second", "吉比特每秒"),
    "gbps": ("gigabit per second", "吉比特每秒"), "Kbps": ("kilobit per second", "千比特每秒"),
    "kbps": ("kilobit per second", "千比特每秒"), "GB/s": ("gigabyte per second", "GB每秒"),
    "MB/s": ("megabyte per second", "MB每秒"), "TB/s": ("terabyte per second", "TB每秒"),
    "KG": ("kilogram", "千克"), "Kg": ("kilogram", "千克"), "KM": ("kilometer", "公里"),
    "Km": ("kilometer", "公里"), "CM": ("centimeter", "厘米"), "MM": ("millimeter", "毫米"),
    "LBS": ("pound", "磅"), "Lbs": ("pound", "磅"), "MPH": ("mile per hour", "英里每小时"),
    "lb-ft": ("pound foot", "磅英尺"), "ft-lbs": ("foot pound", "英尺磅"), "ft-lb": ("foot pound", "英尺磅"),
    "hp": ("horsepower", "马力"), "kcal": ("kilocalorie", "千卡"),
    "mcg": ("microgram", "微克"), "µg": ("microgram", "微克"), "dB": ("decibel", "分贝"),
    "ppm": ("part per million", "ppm"), "MP": ("megapixel", "百万像素"), "psi": ("P S I", "磅每平方英寸"),
    "rpm": ("R P M", "转每分"), "RPM": ("R P M", "转每分"), "MPGe": ("M P G e", "MPGe"),
    "ms": ("millisecond", "毫秒"), "sec": ("second", "秒"), "s": ("second", "秒"),
    "min": ("minute", "分钟"), "mins": ("minute", "分钟"), "secs": ("second", "秒"),
    "hrs": ("hour", "小时"), "hr": ("hour", "小时"), "h": ("hour", "小时"),
    "wk": ("week", "周"), "wks": ("week", "周"), "mo": ("month", "个月"), "mos": ("month", "个月"),
    "yr": ("year", "年"), "yrs": ("year", "年"),
    "dL": ("deciliter", "分升"), "dl": ("deciliter", "分升"), "GiB": ("gibibyte", "GiB"),
    "MiB": ("mebibyte", "MiB"), "TiB": ("tebibyte", "TiB"), "KiB": ("kibibyte", "KiB"),
    "IU": ("international unit", "国际单位"), "qt": ("quart", "夸脱"), "qts": ("quart", "夸脱"),
    "yds": ("yard", "码"), "fl oz": ("fluid ounce", "液量盎司"), "fl. oz": ("fluid ounce", "液量盎司"),
    "mg/L": ("milligram per liter", "毫克每升"),
    "g/L": ("gram per liter", "克每升"), "mmol/L": ("millimole per liter", "毫摩尔每升"),
    "mg/dL": ("milligram per deciliter", "毫克每分升"), "px": ("pixel", "像素"),
    "nM": ("nanomolar", "纳摩尔每升"), "mM": ("millimolar", "毫摩尔每升"), "μM": ("micromolar", "微摩尔每升"),
    "µM": ("micromolar", "微摩尔每升"),
    "mEq/L": ("milliequivalent per liter", "毫当量每升"), "mEq": ("milliequivalent", "毫当量"),
    "bbl": ("barrel", "桶"), "bbl/d": ("barrel per day", "桶每天"), "bpd": ("barrel per day", "桶每天"),
    "hPa": ("hectopascal", "百帕"), "kPa": ("kilopascal", "千帕"),
    "MPa": ("megapascal", "兆帕"), "mbar": ("millibar", "毫巴"),
}
# A temperature's scale letter ("°C", "℃", "425 F") -> the unit's name (en_unit pluralizes it).
TEMPERATURE_SCALES = {"C": "degree Celsius", "F": "degree Fahrenheit"}
# Plurals that are not the name + "s" ("X per Y" and "X of Y" pluralize X: en_unit).
_EN_PLURAL_EXTRA = {"square foot": "square feet", "foot": "feet", "inch": "inches",
                    "pound foot": "pound feet", "horsepower": "horsepower", "P S I": "P S I",
                    "R P M": "R P M", "M P G e": "M P G e",
                    "hertz": "hertz", "gigahertz": "gigahertz", "megahertz": "megahertz",
                    "kilohertz": "kilohertz", "penny": "pence", "yen": "yen", "yuan": "yuan", "won": "won",
                    "real": "reais", "krona": "kronor", "krone": "kroner", "paisa": "paise", "lira": "lire",
                    "grosz": "groszy", "baht": "baht", "satang": "satang", "rand": "rand",
                    "nanomolar": "nanomolar", "millimolar": "millimolar", "micromolar": "micromolar",
                    "degree Celsius": "degrees Celsius", "degree Fahrenheit": "degrees Fahrenheit"}


def en_unit(name: str, count: str) -> str:
    """The English unit for a written count ("1" singular, else plural)."""
    if count.lstrip("+") in ("1", "1.0"):
        return name
    head, joint, tail = name.partition(" per ")
    if not joint:
        head, joint, tail = name.partition(" of ")
    return _EN_PLURAL_EXTRA.get(head, head + "s") + joint + tail


def _alternation(names: Iterable[str]) -> str:
    return "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))


UNIT_RE = _alternation(UNITS)
UNIT_END = r"(?![A-Za-z0-9²³]|/(?!\d))"  # "5 m" is meters, "5 min" minutes, "5 m/s" speed
# Top-level domains that make "name.tld" a web address ("3.14", "e.g", "Node.js" are none).
TLDS = ("com", "org", "net", "io", "ai", "dev", "edu", "gov", "co", "uk", "cn", "de", "fr", "jp", "app",
        "info", "me", "us", "tv", "ly", "gg", "hk", "tw")

# code or symbol -> (English major, English minor or "", Chinese)
CURRENCIES: dict[str, tuple[str, str, str]] = {
    "US$": ("US dollar", "cent", "美元"), "$": ("dollar", "cent", "美元"), "USD": ("dollar", "cent", "美元"),
    "A$": ("Australian dollar", "cent", "澳元"), "AUD": ("Australian dollar", "cent", "澳元"),
    "C$": ("Canadian dollar", "cent", "加元"), "CAD": ("Canadian dollar", "cent", "加元"),
    "CA$": ("Canadian dollar", "cent", "加元"), "NT$": ("New Taiwan dollar", "cent", "新台币"),
    "MX$": ("peso", "centavo", "比索"),
    "HK$": ("Hong Kong dollar", "cent", "港元"), "HKD": ("Hong Kong dollar", "cent", "港元"),
    "€": ("euro", "cent", "欧元"), "EUR": ("euro", "cent", "欧元"),
    "£": ("pound", "penny", "英镑"), "GBP": ("pound", "penny", "英镑"),
    "¥": ("yen", "", "元"), "￥": ("yuan", "", "元"), "JPY": ("yen", "", "日元"),
    "CNY": ("yuan", "", "人民币"), "RMB": ("yuan", "", "人民币"),
    "₩": ("won", "", "韩元"), "KRW": ("won", "", "韩元"), "₹": ("rupee", "paisa", "卢比"),
    "INR": ("rupee", "paisa", "卢比"), "Rs.": ("rupee", "paisa", "卢比"), "Rs": ("rupee", "paisa", "卢比"),
    "CHF": ("Swiss franc", "centime", "瑞士法郎"),
    "R$": ("real", "centavo", "雷亚尔"), "BRL": ("real", "centavo", "雷亚尔"),
    "₽": ("ruble", "kopek", "卢布"), "RUB": ("ruble", "kopek", "卢布"), "₺": ("lira", "kurus", "里拉"),
    "MXN": ("peso", "centavo", "比索"), "NZ$": ("New Zealand dollar", "cent", "新西兰元"),
    "S$": ("Singapore dollar", "cent", "新加坡元"), "SGD": ("Singapore dollar", "cent", "新加坡元"),
    "SEK": ("krona", "ore", "瑞典克朗"), "NOK": ("krone", "ore", "挪威克朗"),
    "DKK": ("krone", "ore", "丹麦克朗"),
    # "50 zł" (its "ł" folded before the rules), "PLN 20", "฿100", "ZAR 300"
    "zl": ("zloty", "grosz", "兹罗提"), "PLN": ("zloty", "grosz", "兹罗提"),
    "฿": ("baht", "satang", "泰铢"), "THB": ("baht", "satang", "泰铢"), "ZAR": ("rand", "cent", "南非兰特"),
    "₿": ("bitcoin", "", "比特币"), "BTC": ("bitcoin", "", "比特币"),
}
CURRENCY_SYMBOL_RE = _alternation(k for k in CURRENCIES if not k.isalpha())
CURRENCY_CODE_RE = _alternation(k for k in CURRENCIES if k.isalpha())

MAGNITUDES: dict[str, int] = {"thousand": 10**3, "million": 10**6, "billion": 10**9,
                              "trillion": 10**12, "k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6,
                              "mn": 10**6, "bn": 10**9, "b": 10**9, "B": 10**9, "tn": 10**12, "T": 10**12}
# "$3T" is trillions, "$20 T-shirt" is no scale.
MAGNITUDE_RE = _alternation(m for m in MAGNITUDES if m != "T") + r"|T(?!-)"
MAGNITUDE_WORDS = {10**3: "thousand", 10**6: "million", 10**9: "billion", 10**12: "trillion"}

# Titles before a name ("Sen. Warren", "Lt. Col. Rhodes"), capitalised and with their dot.
TITLES = {"Sen": "Senator", "Rep": "Representative", "Gov": "Governor", "Gen": "General",
          "Capt": "Captain", "Lt": "Lieutenant", "Col": "Colonel", "Sgt": "Sergeant",
          "Rev": "Reverend", "Hon": "Honorable", "Pres": "President", "Adm": "Admiral",
          "Maj": "Major", "Cpl": "Corporal", "Pvt": "Private", "Cmdr": "Commander",
          "Supt": "Superintendent", "Insp": "Inspector", "Det": "Detective", "Fr": "Father"}

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
MONTH_BY_PREFIX = {m[:3].lower(): i + 1 for i, m in enumerate(MONTHS)}
# Any case ("june 14", "OCT. 9"); readers refuse a lowercase "may" or "march"
# without a year ("these 3 may help", "we march 5 miles"): those are verbs.
MONTH_NAMES_RE = (r"Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
                  r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?")  # capitalised
MONTH_RE = "(?i:" + MONTH_NAMES_RE + ")"
_VERBS = frozenset({"may", "march"})


def month_number(name: str) -> int:
    return MONTH_BY_PREFIX[name[:3].lower()]


def verb_not_month(name: str, has_year: bool) -> bool:
    """A lowercase "may" or "march" without a year is the verb."""
    return name in _VERBS and not has_year


EQUATION_REACH = 40  # characters after a dash read for the rest of an equation ("5-3=2", "12-3-4 = 5")
_EQUATION = re.compile(r"[-−]?[\d.,]+(?:\s?[-−–+×*/÷]\s?[-−]?[\d.,]+)*\s?[=＝]")


def is_minus(m: re.Match[str]) -> bool:
    """Whether a dash between two numbers subtracts ("5 - 3", "5-3=2")
    rather than spans a range ("3-5 days"): a hyphen or minus sign spaced
    (a spaced en dash is typeset's range: "pages 5 – 10"), or an equation
    (numbers and operators up to an "=": "aged 18-65 (n = 1,024)" is still a
    range)."""
    after = m.string[m.end():m.end() + EQUATION_REACH]  # bounded: linear over the sentence
    spaced = bool(m.group(1) and m.group(3)) and m.group(2) in "-−"
    return spaced or _EQUATION.match(after) is not None


def valid_date(month: int, day: int) -> bool:
    return 1 <= month <= 12 and 1 <= day <= 31
