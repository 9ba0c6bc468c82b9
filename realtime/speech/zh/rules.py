"""Chinese readings: the rules, in priority order (readings as WeTextProcessing's).

Phone and service numbers are read digit by digit with 幺 for 1 (报警请拨
110 -> 幺幺零, 12306 -> 幺二三零六); years digit by digit (2024年 ->
二零二四年); dates and times in Chinese order (2002-01-28 ->
二零零二年一月二十八日, 10:30 -> 十点三十分); money with the unit after the
amount ($100 -> 一百美元); percentages first (6.3% -> 百分之六点三).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from realtime.speech.rewrite import TAG_RULE, Rule, rule
from realtime.speech.units import (
    BULLET,
    CURRENCIES,
    CURRENCY_CODE_RE,
    CURRENCY_SYMBOL_RE,
    DIGIT_GROUPS,
    LIST_MARKER,
    MAGNITUDE_RE,
    MAGNITUDES,
    MAX_SPOKEN_DIGITS,
    NUM,
    UNIT_END,
    UNIT_RE,
    UNITS,
    UNSIGNED,
    is_minus,
    valid_date,
)
from realtime.speech.zh import shorthand
from realtime.speech.zh.words import cardinal, digits, number

_LONG_RUN = 9  # WeTextProcessing reads 1001111 as a number; ids are longer or named (卡号)
_SERVICES = ("110|119|120|122|114|12306|12315|12345|12348|12366|12369|10086|10010|"
             "95588|95533|95599|95566|95555|95528|96110")
# After these a number counts something ("110米", "120个"): not a service number.
_COUNTED = (r"[个人米元块岁年月日号天次件只名位条张公千万亿斤克吨分秒点楼层路期届家种页台辆本篇首道份座间所场"
            r"支瓶杯套双对把根项部栋平立升倍度周%％℃°.]")
# After a dotted "1195.8" these make it an amount ("1195.8亿美元"), not a year and month.
_AMOUNT_AFTER = r"\s?[万亿千百元块美欧英日港澳加倍]"
# A lone 2 before these is 两 ("2个", "2点半", "2岁").
_TWO_BEFORE = "个只件本张条位次台辆双对把头匹种根块杯碗份项名座间栋场部门天周倍夜斤片粒颗盒袋点岁"


def _phone(m: re.Match[str]) -> str:
    return digits("".join(g for g in m.groups() if g), phone=True)


def _date(m: re.Match[str]) -> str | None:
    y, mo, d = m.group(1), int(m.group(2)), int(m.group(3))
    if not valid_date(mo, d):
        return None
    return f"{digits(y)}年{cardinal(mo)}月{cardinal(d)}日"


def _year_month(m: re.Match[str]) -> str | None:
    y, mo = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    if not (1 <= int(mo) <= 12 and 1000 <= int(y) <= 2199) or m.string.startswith("点", m.end()):
        return None  # "3050.12点": an index's points, no year
    return f"{digits(y)}年{cardinal(int(mo))}月"


def _month_day(m: re.Match[str]) -> str | None:
    """ "08-08": a date only when zero-padded (3-5 is a range, 3/4 a fraction)."""
    if not (m.group(1).startswith("0") or m.group(2).startswith("0")):
        return None
    mo, d = int(m.group(1)), int(m.group(2))
    return f"{cardinal(mo)}月{cardinal(d)}日" if valid_date(mo, d) else None


def _date_year_last(m: re.Match[str]) -> str | None:
    a, b, y = int(m.group(1)), int(m.group(2)), m.group(3)
    mo, d = (a, b) if valid_date(a, b) else (b, a)
    return f"{digits(y)}年{cardinal(mo)}月{cardinal(d)}日" if valid_date(mo, d) else None


def _clock(m: re.Match[str]) -> str | None:
    return _read_clock(int(m.group(1)), int(m.group(2)), m.group(3), (m.group(4) or "").lower())


def _clock_range(m: re.Match[str]) -> str:
    """ "9:00-17:30": 九点到十七点三十分 (upstream would read the dash as a pause)."""
    first = _read_clock(int(m.group(1)), int(m.group(2)), None, "")
    return f"{first}到{_read_clock(int(m.group(3)), int(m.group(4)), None, '')}"


def _read_clock(h: int, mm: int, seconds: str | None, half: str) -> str | None:
    prefix = "上午" if half == "a" else "下午" if half == "p" else ""
    if half and h > 12:
        return None
    spoken = prefix + ("两" if h == 2 else cardinal(h)) + "点"  # 两点, never 二点
    if mm or seconds:
        spoken += ("零" if mm < 10 else "") + cardinal(mm) + "分" if mm else "零分"
    if seconds:
        spoken += cardinal(int(seconds)) + "秒"
    return spoken


def _scaled(amount: str, magnitude: str | None) -> str:
    """ "2.5" "million" -> 两百五十万; a Chinese 万/亿 written after stays."""
    if not magnitude or len(amount) > MAX_SPOKEN_DIGITS:
        return number(amount) + (magnitude if magnitude in ("万", "亿", "千") else "")
    if magnitude in "万亿千":
        return number(amount) + magnitude
    try:
        value = Decimal(amount.replace(",", "")) * MAGNITUDES[magnitude]
    except InvalidOperation:
        return number(amount)
    if value == value.to_integral_value():
        return cardinal(int(value))
    return number(amount) + {10**3: "千", 10**6: "百万", 10**9: "十亿", 10**12: "万亿"}[MAGNITUDES[magnitude]]


def _money(m: re.Match[str]) -> str:
    sign = "负" if m.group(1) else ""
    unit = CURRENCIES[m.group(2).strip()][2]
    if unit == "元" and m.string[m.end():m.end() + 1] in ("元", "块"):
        unit = ""  # "￥12.5元": the text names the unit itself
    if unit == "人民币" and m.string[max(0, m.start() - 3):m.start()].strip().endswith("人民币"):
        unit = "元"  # "人民币CNY 30": 人民币三十元
    return sign + _scaled(_whole_if_round(m.group(3)), m.group(4)) + unit


def _money_after(m: re.Match[str]) -> str:
    return _scaled(_whole_if_round(m.group(1)), m.group(2)) + CURRENCIES[m.group(3)][2]


def _whole_if_round(amount: str) -> str:
    """ "¥68.00": 六十八元, not 六十八点零零元 (a price's empty cents are not said)."""
    whole, dot, cents = amount.partition(".")
    return whole if dot and whole and not cents.strip("0") else amount


def _range(first: str, second: str | None, unit: str = "") -> str:
    return number(first) + unit + ("到" + number(second) + unit if second else "")


def _percent(m: re.Match[str]) -> str:
    head = "千分之" if m.group(3) == "‰" else "百分之"
    spoken = head + number(m.group(1))
    return spoken + ("到" + head + number(m.group(2)) if m.group(2) else "")


def _temperature(m: re.Match[str]) -> str:
    value = m.group(1)
    if value[:1] in "-−" and m.string[max(0, m.start() - 2):m.start()] == "零下":
        value = value[1:]  # "零下-5℃": the text says 零下 itself
    return _degrees(value) + _scale(m.group(2))


def _temperature_range(m: re.Match[str]) -> str:
    """ "20～25℃", "-5-5℃", "20℃-25℃": 二十到二十五摄氏度, 零下五到五摄氏度."""
    return _degrees(m.group(1)) + "到" + _degrees(m.group(2)) + _scale(m.group(3))


def _degrees(value: str) -> str:
    return "零下" + number(value[1:]) if value[:1] in "-−" else number(value)


def _scale(written: str) -> str:
    scale = written.replace(" ", "").upper()
    return "华氏度" if scale in ("°F", "℉") else "度" if scale == "°" else "摄氏度"


def _unit(m: re.Match[str]) -> str:
    name = UNITS[m.group(3)][1]
    # 2 before a measure is 两 (两公里, 两千瓦)
    amount = "两" if m.group(1) == "2" and not m.group(2) else _range(m.group(1), m.group(2))
    counted, per, over = name.partition("每")
    if per and counted in ("公里", "米", "英里", "千米"):
        return per + over + amount + counted  # 每小时一百二十公里
    return amount + name


def _fraction(m: re.Match[str]) -> str | None:
    num, den = int(m.group(1)), int(m.group(2))
    rest = m.string[m.end():]
    if den == 0 or rest.lstrip().startswith(("=", "等于")):
        return None  # "100/4=25": a division, read by the operator rule
    if num == den:
        return cardinal(num) + "比" + cardinal(den)  # "主队2/2平": a score, no fraction is n/n
    return cardinal(den) + "分之" + cardinal(num)


_UNICODE_FRACTIONS = {"½": "二分之一", "¼": "四分之一", "¾": "四分之三", "⅓": "三分之一", "⅔": "三分之二"}
_OPERATORS = {"<=": "小于等于", ">=": "大于等于", "!=": "不等于", "==": "等于",
              "+": "加", "×": "乘", "*": "乘", "x": "乘", "X": "乘", "÷": "除以", "/": "除以",
              "=": "等于", "<": "小于", ">": "大于", "≤": "小于等于", "≥": "大于等于", "≠": "不等于",
              "±": "正负", "≈": "约等于"}
_ANYWHERE = {"=": "等于", "≠": "不等于", "≈": "约等于", "±": "正负", "≤": "小于等于", "≥": "大于等于",
             "×": "乘", "÷": "除以", "&": "和", "√": "根号", "²": "的平方", "³": "的立方", "∞": "无穷大",
             "∈": "属于", "∉": "不属于", "∑": "求和", "∫": "积分", "∀": "任意", "∃": "存在", "∴": "所以",
             "∵": "因为", "∅": "空集", "∩": "交", "∪": "并", "→": "到", "−": "减"}
# A lone Greek letter ("圆周率π", "Δ为变化量"), as Chinese reads it; upstream drops it.
_GREEK = {"π": "派", "α": "阿尔法", "β": "贝塔", "γ": "伽马", "δ": "德尔塔", "Δ": "德尔塔", "ε": "艾普西龙",
          "θ": "西塔", "λ": "兰姆达", "μ": "缪", "ρ": "柔", "σ": "西格玛", "Σ": "西格玛", "τ": "陶",
          "φ": "斐", "ω": "欧米伽", "Ω": "欧米伽", "χ": "卡", "ψ": "普西", "Ψ": "普西", "η": "伊塔",
          "κ": "卡帕", "ν": "纽", "ξ": "克西", "ζ": "泽塔", "Γ": "伽马", "Λ": "兰姆达", "Π": "派", "Φ": "斐",
          "Θ": "西塔"}


def _pressure(m: re.Match[str]) -> str | None:
    """ "血压120/80", "120/80mmHg": 一百二十，八十毫米汞柱 (the two readings, a pause between)."""
    lead, unit = m.group(1), m.group(4)
    if not (lead or unit):
        return None
    return (lead or "") + number(m.group(2)) + "，" + number(m.group(3)) + ("毫米汞柱" if unit else "")


_LEFT = re.compile(r"(\d++)\s?$")
_RIGHT = re.compile(r"\s?[-−]?(\d++)")


def _operator(m: re.Match[str]) -> str:
    op = m.group(2)
    if op in "-−–":
        if is_minus(m) or "等于" in m.string[m.end():]:
            return "减"
        left = _LEFT.search(m.string, max(0, m.start() - 20), m.start())
        right = _RIGHT.match(m.string, m.end() - len(m.group(3)))
        if left and right and int(left.group(1)) > int(right.group(1)):
            return "比"  # "最终2-0获胜": no range runs down; a score
        return "到"
    if op == "/" and ("=" in m.string[m.end():] or "等于" in m.string[m.end():]):
        return "除以"
    return "到" if op in "~～" else _OPERATORS[op]


def _number(m: re.Match[str]) -> str:
    text = m.group(0)
    bare = text.lstrip("-−+")
    if "," not in bare and "." not in bare and len(bare) >= _LONG_RUN and bare.rstrip("0")[2:]:
        return digits(bare)
    return number(text)


_HOUR_MINUTE = r"([01]?\d|2[0-3])[:：]([0-5]\d)"
RULES: tuple[Rule, ...] = (
    TAG_RULE,
    rule("bullet", BULLET, lambda m: ""),
    rule("list marker", LIST_MARKER, lambda m: cardinal(int(m.group(1) or m.group(2))) + "，"),
    *shorthand.EARLY_RULES,
    rule("mobile", r"(?<![\d.])(?:\+?86[\s-]?)?(1[3-9]\d)[\s-]?(\d{4})[\s-]?(\d{4})(?!\d)", _phone),
    rule("landline", r"(?<![\d.-])(0\d{2,3})-(\d{7,8})(?![\d-])", _phone),
    rule("hotline", r"(?<![\d.-])([48]00)-?(\d{3})-?(\d{4})(?![\d-])", _phone),
    rule("blood pressure", r"(血压(?:是|为|：|:)?\s?)?(?<![\d/.])(\d{2,3})/(\d{2,3})(?![\d/])"
         r"(?:\s?(mmHg|毫米汞柱))?", _pressure),
    rule("landline, area code in brackets", r"[(（](0\d{2,3})[)）]\s?(\d{3,4})-?(\d{4})(?![\d-])",
         _phone),
    # after 约, 共, 第, 近, 超 a number counts ("共约120页"): no service number
    rule("service", r"(?<![\d.,约共第近超])(" + _SERVICES + r")(?![\d,]|[:：-]\d|\s?[A-Za-z]|" + _COUNTED
         + ")",
         _phone),
    rule("date", r"(?<![\d.])(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})(?![\d.]\d|\d)", _date),
    rule("date, year last", r"(?<![\d.])(\d{1,2})[-/.](\d{1,2})[-/.](\d{4})(?![\d.]\d|\d)",
         _date_year_last),
    rule("year month", r"(?<![\d.])(?:(\d{4})[-/.](\d{1,2})|(\d{1,2})[-/.](\d{4}))(?![\d.]\d|\d|%|"
         + _AMOUNT_AFTER + ")", _year_month),
    rule("month day", r"(?<![\d.])(\d{2})[-/.](\d{2})(?![\d.]\d|\d|%|" + _AMOUNT_AFTER + ")", _month_day),
    rule("digit groups", DIGIT_GROUPS,
         lambda m: "，".join(digits(g) if g.isdigit() else g for g in m.group(0).split("-"))),
    rule("ip address", r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])",
         lambda m: "点".join(digits(p) for p in m.group(0).split("."))),
    rule("after 号/电话", r"(尾号|号码|电话|手机|热线|分机|验证码)(是|为|：|:)?\s?(\d{3,})(?!\d)",
         lambda m: m.group(1) + (m.group(2) or "") + digits(m.group(3), phone=True)),
    rule("room", r"(?<![\d.])(\d{3,4})(?=[室房]|号房|会议室|教室|病房)",
         lambda m: digits(m.group(1))),  # 301室, 502会议室
    rule("after 编号", r"(邮编|邮政编码|卡号|账号|学号|工号|编号|订单号|单号|运单号|流水号"
         r"|身份证号|证件号|会员号|密码|代码)"
         r"(是|为|：|:)?\s?(\d{3,})(?!\d)",
         lambda m: m.group(1) + (m.group(2) or "") + digits(m.group(3))),  # codes, not amounts
    rule("code", r"(?<=[A-Za-z])(\d{3,})(?![\d.]|\s?[A-Za-z])",
         lambda m: digits(m.group(1))),  # 型号XK7731, RTX4090: a code's digits, one by one
    rule("generation", r"(?<![\d.])(\d0|[05-9]5)(?=后)", lambda m: digits(m.group(1))),  # 90后, 95后
    rule("year", r"(?<![\d.])(\d{4})(?=\s?年)", lambda m: digits(m.group(1))),
    rule("decade", r"(?<![\d.])(\d{3}0)'?s\b", lambda m: digits(m.group(1)) + "年代"),
    # a label's colon before a time is none of its own ("时间：9:00-11:30")
    rule("clock range", r"(?<!\d)(?<!\d[:：])" + _HOUR_MINUTE + r"\s?[-–—~～至到]\s?" + _HOUR_MINUTE
         + r"(?![\d:：])", _clock_range),
    rule("midnight", r"(?<![\d:：])24[:：]00(?![\d:：])", lambda m: "二十四点"),
    rule("clock", r"(?<!\d)(?<!\d[:：])([01]?\d|2[0-3])[:：]([0-5]\d)(?:[:：]([0-5]\d))?(?![\d:：])"
         r"(?:\s?([AaPp])\.?[Mm]\b\.?)?",
         _clock),
    rule("pace", r"(?<![\d.])(\d{1,2})['’′](\d{2})(?:[\"”″]|'')",
         lambda m: cardinal(int(m.group(1))) + "分" + cardinal(int(m.group(2))) + "秒"),  # 配速4'33"
    *shorthand.SCORE_RULES,
    rule("ratio", r"(?<![\d:])(\d{1,3}):(\d{1,3})(?![\d:])",
         lambda m: cardinal(int(m.group(1))) + "比" + cardinal(int(m.group(2)))),
    *shorthand.RULES,
    rule("money before", r"(?<![\w$€£¥￥])([-−])?(" + CURRENCY_SYMBOL_RE + "|(?:" + CURRENCY_CODE_RE
         + r")\s?)\s?(" + UNSIGNED + r")(?:\s?(" + MAGNITUDE_RE + r"|万|亿|千)(?![A-Za-z]))?", _money),
    rule("money after", "(" + UNSIGNED + r")(?:\s?(" + MAGNITUDE_RE + r"|万|亿)(?![A-Za-z]))?\s?("
         + CURRENCY_CODE_RE + "|" + CURRENCY_SYMBOL_RE + r")(?![A-Za-z\d$€£¥￥])", _money_after),
    rule("percent", "(" + NUM + r")(?:%|％)?\s?(?:[-~～到]|-|–)\s?(" + UNSIGNED + r")\s?(%|％|‰)", _percent),
    rule("percent one", "(" + NUM + r")()\s?(%|％|‰)", _percent),
    # "10月1日-10月7日", "3月-5月", "2019年~2021年": a dash after a date is 到, no minus sign
    rule("date range", r"(?<=[日号月年])\s?[-–—~～]\s?(?=\d|$)", lambda m: "到"),  # the year read before
    rule("temperature range", "(" + NUM + r")\s?(?:°\s?[CcFf](?![A-Za-z])|℃|℉|°)?\s?[-–~～到至]\s?(" + NUM
         + r")\s?(°\s?[CcFf](?![A-Za-z])|℃|℉|°)", _temperature_range),
    rule("temperature", "(" + NUM + r")\s?(°\s?[CcFf](?![A-Za-z])|℃|℉|°)", _temperature),
    rule("unit", "(" + NUM + r")(?:\s?[-~～到]\s?(" + UNSIGNED + r"))?\s?(" + UNIT_RE + ")" + UNIT_END,
         _unit),
    rule("ordinal", r"(?<![\w.])(\d++)(?:st|nd|rd|th)\b", lambda m: "第" + number(m.group(1))),
    rule("unicode fraction", r"[½¼¾⅓⅔]", lambda m: _UNICODE_FRACTIONS[m.group(0)]),
    rule("fraction", r"(?<![\w/.])(\d{1,6})\s?/\s?(\d{1,6})(?![\w/])", _fraction),
    rule("wan", r"(?<![\w.])(\d{1,4}(?:\.\d{1,2})?|\d{2,4})([wWk]|(?<=\d\d)K)(?![A-Za-z])",
         lambda m: number(m.group(1)) + "万" if m.group(2) in "wW" else _scaled(m.group(1), "k")),
    # 300w -> 三百万; 128k -> 十二万八千 (never "一百二十八千")
    rule("power", r"(?<![\d.])(\d{1,6})\^(\d{1,3})(?!\d)",
         lambda m: cardinal(int(m.group(1))) + "的" + cardinal(int(m.group(2))) + "次方"),
    rule("operator", r"(?<=\d)(\s?)(<=|>=|!=|==|[-−–~～+×*xX÷/=<>≤≥≠±≈])(\s?)(?=[-−]?\d)", _operator),
    rule("hyphen", r"(?<=\d)-(?=[A-Za-z])|(?<=[A-Za-z])-(?=\d)", lambda m: " "),  # COVID-19
    # 元/月; "0.05%/天": a slash opening its span after a reading
    rule("per", r"(?:(?<=[^\d\s/])|^)/(?=[\u4e00-\u9fff])", lambda m: "每"),
    rule("letter hyphen", r"(?<=[A-Za-z])-(?=[A-Za-z])", lambda m: " "),  # "Wi-Fi": upstream pauses
    rule("symbol", r"[=≠≈±≤≥×÷&√²³∞∈∉∑∫∀∃∴∵∅∩∪→−]", lambda m: _ANYWHERE[m.group(0)]),
    rule("table cell", r"(?<=\S)\s*[|｜]\s*(?=\S|$)", lambda m: "，"),  # "| 套餐 | 价格 |": cells, paused
    rule("dash", r"——|──", lambda m: "，"),  # "他说——我不去": a pause; upstream drops it
    rule("greek letter", r"(?<![\u0370-\u03ff])[" + "".join(_GREEK) + r"](?![\u0370-\u03ff])",
         lambda m: _GREEK[m.group(0)]),
    rule("joined plus", r"(?<=[A-Za-z\d])\+(?=[A-Za-z])", lambda m: "加"),  # "5G+AI"
    rule("two", r"(?<![\d.第])2(?=[" + _TWO_BEFORE + "万千亿]|年(?!级))", lambda m: "两"),
    rule("version", r"(?<![\d.])\d++(?:\.\d++){2,}(?![\d.])"
         r"|(?:(?<=Python\s)|(?<=iOS\s)|(?<=Java\s)|(?<=CUDA\s)|(?<=\b[vV])|(?<=版本))\d{1,2}\.\d{1,2}(?![\d.])",
         # "Python 3.11": 三点十一, a release's parts
         lambda m: "点".join(number(p) for p in m.group(0).split("."))),
    rule("number", NUM, _number),
    rule("stray digits", r"\d++", lambda m: digits(m.group(0))),  # never left for upstream to drop
)
# A mark alone between two readings (rewrite.run): "2019年~2021年", "20℃-25℃".
JOINTS = {"-": "到", "–": "到", "—": "到", "~": "到", "～": "到", "/": "，", "|": "，", "｜": "，"}
