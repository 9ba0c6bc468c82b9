"""Which language reads a sentence, and whether it needs the rules at all.

The decision is upstream ChatTTS's own (``Normalizer._detect_language``):
Chinese when the sentence holds more Han characters than English words.
Keeping that rule keeps plain text on exactly upstream's path. A sentence
with neither (digits, symbols, another script) follows the caller's hint:
its neighbours' language.
"""

from __future__ import annotations

import re

from realtime.speech.units import CURRENCIES, DOTFILES, TITLES, TLDS, UNITS

Lang = str  # "en" | "zh"
LANGS = ("en", "zh")

_HAN = re.compile(r"[\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"\b[A-Za-z]+\b")
_DIGIT = re.compile(r"[0-9０-９]")
# Latin letters that write a unit, a currency or the half of the day beside a
# number: no English word, so a sentence of them follows the hint.
_SYMBOL_WORDS = frozenset({*(u for u in UNITS if u.isalpha()), *(c for c in CURRENCIES if c.isalpha()),
                           "am", "pm", "AM", "PM", "a", "p", "m", "km", "h"})
_CJK_MARK = re.compile(r"[\u3000-\u303f\uff01-\uff0f\uff1a-\uff20]")  # "。", "，", "！", "："

# What any rule could rewrite: digits (ASCII and full-width), the symbols
# the rules read, the abbreviations and contractions they expand, hyphens
# inside words, a Roman numeral after a word, a weekday's abbreviation, a
# command-line option. A
# sentence without any of these goes to upstream untouched (most sentences
# of an LLM answer).
_TRIGGER = re.compile(
    r"[0-9０-９$€£¥￥₩₹₽₺₿%％‰°º℃℉+＋×÷=＝<>≤≥≠±~～@&#−＃½¼¾⅓⅔²³⁰¹⁴⁵⁶⁷⁸⁹⁻√^§¶Ａ-Ｚａ-ｚπαβγδΔεθλμρστφωΣΩχψΨηκνξζΓΛΠΦΘ❤♥|｜♭♯♮\u2010\u2011]"
    r"|[A-Za-z]\s?/\s?[A-Za-z]|\)\s/\s|[A-Za-z]{2}\.[a-z]{2,6}\b|\bfile://"
    r"|[A-Za-z]\s(?:[IVXLC]{2,6}\b|[VX]\b|I(?=[,.;:!?)]|$|\s(?:of|and)\b))|\b(?:Mon|Tues?|Thu|Thurs?|Fri)\b"
    r"|\b(?:Wed|Sat|Sun|M)\.?\s?[-–—/]|\b(?:on|for|by|this|next|last|until)\s(?:Sat|Sun|Wed)\b"
    r"|\b(?:Dr|Mrs?|Ms|St|Prof|Jr|Sr|Mt|Ave|Sq|vs|etc|approx|No|e\.g|i\.e|a\.k\.a|cf)\."
    r"|[A-Za-z][-–][A-Za-z]|[A-Za-z\d][—―][A-Za-z\d]|\S\s[–—―]\s\S|——|[\u4e00-\u9fff]—[\u4e00-\u9fff]|[A-Za-z]['’](?:ll|re|d|ve|m)\b"
    r"|^\s*[-*•·‣▪●]\s|https?://|www\.|\w\.(?i:" + "|".join(TLDS) + r")\b"
    r"|,\s[A-Z]{2}(?:[\s,.;]|$)|,\s(?:[A-Z][a-z]{1,4}|[NSWR]\.\s?[A-Z][a-z]?)\.(?:[\s,;:)]|$)"  # "Dallas, TX"
    r"|\b(?:" + "|".join(TITLES) + r"|[Ee]st)\.\s|\b(?:YoY|QoQ|YTD|WWII?)\b"
    r"|/(?i:PR\s?Newswire|Business\s?Wire|Globe\s?Newswire)/|(?<![\w./~-])\.(?:" + DOTFILES + r")\b"
    r"|(?<!\S)w/|->|=>|[→⇒⟶¢…]"
    r"|[A-Za-z\d]_[A-Za-z\d](?![\w]*\])|\b(?i:apt|ste|bldg|rm)\b|\bp\.a\.|\s\*(?=\s|$)|\b[A-Za-z]\*[A-Za-z]\b"
    r"|\b(?i:[btq]\.i\.d|p\.r\.n|q\.d)\.|\b(?i:dept|govt|incl|excl|avg|misc|pop|assoc)\.(?:\s|$|[,;:)])|[a-z]\sv\.\s[A-Z]"
    r"|\b(?i:brb|idk|tbh|tmrw|thx|bday|btw|imo|imho|afaik|ttyl|tix|ppl|ngl|eod|pls|plz|rn|ur?)\b|\s[A-D]-(?:[\s,;:.!?)]|$)"
    r"|\s(?:Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept?|Oct|Nov|Dec)\.(?:$|\s[a-z]|[,;:)])"
    r"|\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?\s?[-–—]\s?[A-Z]"
    r"|\b(?i:last|this|next|every|each)\s(?:yr|mo|wk)\b|\b(?i:tl;\s?dr)\b"
    r"|\b(?:Vol|Ch|Chap|Pt|Bk|Art)\.\s[IVXLC]|[\s`(]--?[A-Za-z]|(?<![\w.])[OΘ]\(|\b[A-Za-z]\([A-Za-z]\)|[₀-₉∈∉∞∫∑∀∃≡∝∂∓∅∩∪⊂⊆⊃⊇∧∨¬∴∵∠∆∇≅≪≫∏⋅]",
)


def decide(sentence: str, hint: Lang | None = None) -> Lang:
    """The language that reads ``sentence``: upstream's rule when it has
    letters of either script (a unit or currency code beside a number is no
    English word), else ``hint``; without a hint, Chinese
    punctuation ("1+1=2。") says Chinese, anything else English."""
    han = len(_HAN.findall(sentence))
    words = _ENGLISH_WORD.findall(sentence)
    if words and _DIGIT.search(sentence):
        kept = [w for w in words if w not in _SYMBOL_WORDS]
        if han or not kept:  # "3 kg", "CNY 4.75", "2:05:07 pm": no word of either language,
            words = kept  # nor in "血钾4.1 mEq/L" (upstream counts "mEq" and "L": a tie, English)
    if han or words:
        return "zh" if han > len(words) else "en"
    if hint in LANGS:
        return hint
    return "zh" if _CJK_MARK.search(sentence) else "en"


def needs_rules(sentence: str) -> bool:
    """Whether any normalization rule could apply (the fast pre-check)."""
    return _TRIGGER.search(sentence) is not None
