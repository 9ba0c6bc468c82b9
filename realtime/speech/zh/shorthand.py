"""Chinese readings of what LLM answers write in Latin script or shorthand.

- Email addresses and web addresses: "help@example.com" -> help艾特example点com
  (upstream would drop "@" and read "." as a full stop), "www.example.com/docs"
  -> www点example点com斜杠docs.
- Season and school-year ranges: "2023-2024赛季" -> 二零二三到二零二四赛季 (years, not
  amounts), before 年, 赛季, 学年, 财年, 年度.
- Floors: "A座3F" -> A座三楼, and a room on it: "3F-301" -> 三楼三零一.
- Compound durations: "3h20min" -> 三小时二十分钟 (the unit rule needs the unit to end
  the number's word).
- Scores after a team's name, at the end of a clause: "日本1-2" -> 日本一比二,
  "主队 3/3" -> 主队三比三 (a range or a fraction is followed by what it counts,
  "3-5天", "1/5以上"; a fraction at a clause's end is proper: "头发丝的1/16").
- "B2G", "F2F" -> B to G, F to F (the 2 is "to", as said).
- A power in superscripts: "10²³" -> 十的二十三次方 ("10⁻⁶": 十的负六次方); a sprint's time
  "9秒83" -> 九秒八三; a phone's "12GB+256GB" -> 十二GB加两百五十六GB.
- A rating out of its scale: "评分9.2/10" -> 九点二分，满分十分; a rank: "Top250" -> Top两百五十.
- A quarter: "2024年Q3" -> 二零二四年第三季度; a processor's model: "i7-13700K" -> i七
  一三七零零K.
- A model's size before 参数: "7B参数" -> 七十亿参数, "350M参数" -> 三亿五千万参数.
- A note's accidental ("B♭大调" -> 降B大调), a key chord ("Cmd+Shift+4" -> Cmd加Shift加四).
- A lone "—" between Han characters is a connector of a span (GB/T 15834's 连接号:
  "北京—上海" -> 北京到上海); a dash of two ("——") is a pause.
"""

from __future__ import annotations

import re
from decimal import Decimal

from realtime.speech.rewrite import Rule, rule
from realtime.speech.units import LETTER_PAIR, MAGNITUDES, SUPERSCRIPT_DIGITS, SUPERSCRIPT_POWER, TLDS
from realtime.speech.zh.words import cardinal, digits, number

_TLDS = "(?:" + "|".join(TLDS) + ")"


def _address(text: str) -> str:
    spoken = text.replace(".", "点").replace("/", "斜杠")
    return re.sub(r"\d+", lambda d: digits(d.group(0)), spoken)  # upstream would drop digits


def _url(m: re.Match[str]) -> str:
    return _address(m.group(1) + (m.group(2) or "").rstrip("/"))


def _duration(m: re.Match[str]) -> str:
    hours, minutes = int(m.group(1)), int(m.group(2))
    return ("两" if hours == 2 else cardinal(hours)) + "小时" + cardinal(minutes) + "分钟"


_QUARTERS = "一二三四"


def _model_size(m: re.Match[str]) -> str:
    return cardinal(int(Decimal(m.group(1)) * MAGNITUDES[m.group(2)]))


_ACCIDENTALS = {"♭": "降", "b": "降", "♯": "升", "#": "升", "♮": "还原"}


EARLY_RULES: tuple[Rule, ...] = (
    # a note's accidental before its letter: "B♭" 降B, "F#小调" 升F小调 (upstream drops the marks)
    rule("accidental", r"\b([A-G])(?:([♭♯♮])|([b#])(?=[大小]调|调|和弦))",
         lambda m: _ACCIDENTALS[m.group(2) or m.group(3)] + m.group(1)),
    rule("sizes added", r"(?<![\w.])(\d{1,4})\s?([GMT]B)\s?\+\s?(?=\d{1,4}\s?[GMT]B\b)",
         lambda m: cardinal(int(m.group(1))) + m.group(2) + "加"),  # 12GB+256GB: 十二GB加两百五十六GB
    rule("sprint time", r"(?<![\d.])(\d{1,2})秒(\d{2})(?!\d)",
         lambda m: cardinal(int(m.group(1))) + "秒" + digits(m.group(2))),  # 9秒83: 九秒八三
    # a rating out of its scale: 评分9.2/10 -> 九点二分，满分十分 (not 除以)
    rule("rating", r"((?:评分|得分|打分|评级|分数)(?:是|为|：|:)?\s?)(\d{1,3}(?:\.\d)?)/(5|10|100)(?![\d.])",
         lambda m: m.group(1) + number(m.group(2)) + "分，满分" + cardinal(int(m.group(3))) + "分"),
    rule("top", r"\b(Top|TOP|top)\s?(\d{1,4})\b", lambda m: m.group(1) + cardinal(int(m.group(2)))),  # Top250
    rule("chi square", r"χ²|χ\^2", lambda m: "卡方"),  # 卡方检验χ²=8.41
    rule("quarter", r"\bQ([1-4])(?![\w.])",
         lambda m: "第" + _QUARTERS[int(m.group(1)) - 1] + "季度"),  # 2024年Q3
    # a processor's model: "i7-13700K" -> i七 一三七零零K (not a range, not 一万三千七百)
    rule("chip", r"\b([iI])([3579])-(\d{4,5})([A-Z]{0,2})\b",
         lambda m: f"{m.group(1)}{digits(m.group(2))} {digits(m.group(3))}{m.group(4)}"),
    rule("model size", r"(?<![\w.])(\d{1,4}(?:\.\d{1,2})?)([BM])(?=\s?(?:个)?参数)", _model_size),
    rule("span dash", r"(?<=[\u4e00-\u9fff])—(?=[\u4e00-\u9fff])", lambda m: "到"),
    rule("key plus digit", r"\b(?:(?:Ctrl|Cmd|Alt|Shift|Option|Win|Fn)\+)++(?=\d)",
         lambda m: m.group(0).replace("+", "加")),  # "Cmd+Shift+4": no sign of a number
    rule("email", r"(?<![\w.+-])([\w.+-]{1,64})@([\w-]{1,63}(?:\.[\w-]{1,63}){1,8})\b",
         lambda m: _address(m.group(1)) + "艾特" + _address(m.group(2))),
    rule("url", r"\b(?:https?://)?((?:www\.)?[\w-]{1,63}(?:\.[\w-]{1,63}){0,7}\." + _TLDS + r")\b"
         r"((?:/[\w.~-]{1,100}){0,20}/?)", _url),
    rule("year range", r"(?<![\d.])((?:19|20)\d\d)\s?[-–—~～至到]\s?((?:19|20)\d\d)"
         r"(?=\s?(?:年|赛季|学年|财年|年度))",
         lambda m: digits(m.group(1)) + "到" + digits(m.group(2))),
)
def _score(m: re.Match[str]) -> str | None:
    home, away = int(m.group(2)), int(m.group(4))
    if m.group(3) == "/" and home < away:
        return None  # a proper fraction: 五分之一
    return (m.group(1) or "") + cardinal(home) + "比" + cardinal(away)


SCORE_RULES: tuple[Rule, ...] = (
    rule("score", r"(?<=[\u4e00-\u9fff])(?<![的第之约近])(\s?)(\d{1,3})([-:/])(\d{1,3})"
         r"(?=[，。！？；,.!?;\s]|$)",
         lambda m: _score(m) if m.group(1) or m.group(3) != ":" else None),
    rule("letter to letter", LETTER_PAIR, lambda m: f"{m.group(1)} to {m.group(2)}"),
)
def _power(m: re.Match[str]) -> str:
    exponent = int(m.group(2).translate(SUPERSCRIPT_DIGITS))
    sign = "负" if exponent < 0 else ""
    return cardinal(int(m.group(1))) + "的" + sign + cardinal(abs(exponent)) + "次方"


RULES: tuple[Rule, ...] = (
    # "10²³", "10⁻⁶": a power in superscripts (a lone "²" after a number is 的平方, the symbol's)
    rule("power", r"(?<![\d.])(\d{1,3})" + SUPERSCRIPT_POWER, _power),
    rule("duration", r"(?<![\d.])(\d{1,3})\s?(?:h|hr|小时)\s?(\d{1,2})\s?(?:min|m|分钟?)(?![A-Za-z])",
         _duration),
    rule("floor", r"(?<![\w.])(\d{1,3})[Ff](?![A-Za-z\d])(?:-(\d{3,4})(?!\d))?",
         lambda m: cardinal(int(m.group(1))) + "楼" + (digits(m.group(2)) if m.group(2) else "")),  # 3F-301
)
