"""Script facts about text: CJK or not, whether it says anything, and the
scheduler's planning figure for how many codes it will take to speak."""

from __future__ import annotations

from realtime.speech.speed import DEFAULT_LEVEL, duration_factor


def is_cjk(ch: str) -> bool:
    """True for CJK ideographs, kana, hangul, CJK punctuation and full-width forms."""
    o = ord(ch)
    return (
        0x3000 <= o <= 0x30FF  # CJK symbols and punctuation, hiragana, katakana
        or 0x3400 <= o <= 0x4DBF
        or 0x4E00 <= o <= 0x9FFF
        or 0xAC00 <= o <= 0xD7AF
        or 0xF900 <= o <= 0xFAFF
        or 0xFF00 <= o <= 0xFFEF
        or 0x20000 <= o <= 0x3FFFF
    )


def has_words(text: str) -> bool:
    """Whether ``text`` says anything: a letter or a digit in any script
    (punctuation and spaces alone are silent)."""
    return any(ch.isalnum() for ch in text)


# Expected codes per character at speed level 5: ~4 Chinese characters or ~14
# Latin characters per second of speech at 46.875 codes per second.
CODES_PER_CJK_CHAR = 11.0
CODES_PER_OTHER_CHAR = 3.4


def estimate_tokens(text: str, speed: int = DEFAULT_LEVEL) -> int:
    """Expected number of codes for ``text`` spoken at ChatTTS speed level
    ``speed`` (the scheduler's planning figure; the per-character rates are
    for level 5, other levels scale by ``speed.duration_factor``)."""
    cjk = sum(1 for ch in text if ch.isalnum() and is_cjk(ch))
    codes = cjk * CODES_PER_CJK_CHAR + (len(text) - cjk) * CODES_PER_OTHER_CHAR
    return max(8, int(codes * duration_factor(speed)))
