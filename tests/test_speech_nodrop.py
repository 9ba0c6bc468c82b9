"""Nothing is dropped silently: every letter and digit of the input is read
(``spoken``) or reported (``unspoken``: whole sentences that read as
nothing, and runs of a spoken sentence the model cannot say); full-width
letters and digits fold to ASCII, accented Latin letters to their base letter;
a mixed-script sentence stays one."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutation_budget import examples

import realtime.engine.compat  # noqa: F401  (before ChatTTS)
from realtime.engine.text.spoken import TextNormalizer
from realtime.normalize_command import spoken_lines
from realtime.server.stream.intake import read_sentences
from realtime.speech.normalize import fold_width
from realtime.speech.sentences import DEFAULT_MAX_CHARS, split_sentences


@pytest.fixture(scope="module")
def normalizer():
    return TextNormalizer()


def _fold(text: str) -> str:
    return unicodedata.normalize("NFKC", text).casefold()


@pytest.mark.parametrize("sentence,spoken", [
    ("他们发布了新ＭＡＣＢＯＯＫ。", "他们发布了新MACBOOK。"),
    ("新ｉＰｈｏｎｅ好。", "新iPhone好。"),
    ("ｓｅｅ ｐａｇｅ ５ now.", "see page five now."),
    ("型号ＸＫ７７３１。", "型号XK七七三一。"),
    ("Ｈｅｌｌｏ， ｗｏｒｌｄ！", "Hello， world。"),  # English: full-width marks stay upstream's
])
def test_full_width_letters_and_digits_fold_to_ascii(normalizer, sentence, spoken):
    assert normalizer.spoken(sentence).text == spoken


@pytest.mark.parametrize("sentence,unvoiced", [
    ("朋友们안녕。", ("안녕",)),
    ("樱の树。", ("の",)),
    ("He said Привет мир twice.", ("Привет мир",)),
    ("Plain words.", ()),
    ("好的，１２３。", ()),
])
def test_runs_the_model_cannot_say_are_reported(normalizer, sentence, unvoiced):
    spoken = normalizer.spoken(sentence)
    assert spoken.text
    assert spoken.unvoiced == unvoiced


def test_the_command_lists_whole_sentences_and_runs_in_order(normalizer):
    spoken, unspoken = spoken_lines(normalizer, "朋友们안녕。Привет. 樱の树。")
    assert spoken == ["朋友们。", "樱树。"]
    assert unspoken == ["안녕", "Привет.", "の"]


@pytest.mark.parametrize("text", [
    "Meet at 10:30 a.m. 我们在会议室见。",
    "The call is at 3 p.m.然后我们吃饭。",
    "会议在 10:30 开始 and ends at 11:00.",
])
def test_a_mixed_script_sentence_stays_one_segment(normalizer, text):
    spoken, unspoken = spoken_lines(normalizer, text)
    assert len(spoken) == 1 and not unspoken


# Tokens no rule rewrites: Latin words of five letters or more (ASCII or
# full-width), Han, other scripts the model has no tokens for, digit runs.
# Not the shorthand the rules expand ("Afaik") nor a Roman numeral after a name ("XVIII").
_LATIN = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=5, max_size=9).filter(
    lambda w: w.lower() not in ("afaik", "imho") and w.strip("IVXLCDM") != "")
_FULL_WIDTH_LATIN = _LATIN.map(lambda w: "".join(chr(ord(c) + 0xFEE0) for c in w))
_ACCENTED_LATIN = st.text("abcdnrstéèêëàâäïîôöùûüçñåøæß", min_size=5, max_size=9).filter(
    lambda w: not w.isascii())
_HAN = st.text("我们你好中文模型声音今天天气", min_size=1, max_size=4)
_FOREIGN = st.sampled_from(["Привет", "мир", "안녕", "ひらがな", "γειά", "שלום", "مرحبا"])
_DIGITS = (st.text("0123456789", min_size=1, max_size=6)
           | st.text("０１２３４５６７８９", min_size=1, max_size=4))
_TOKEN = st.one_of(
    _LATIN.map(lambda w: ("latin", w)),
    _FULL_WIDTH_LATIN.map(lambda w: ("latin", w)),
    _ACCENTED_LATIN.map(lambda w: ("accented", w)),
    _HAN.map(lambda w: ("han", w)),
    _FOREIGN.map(lambda w: ("foreign", w)),
    _DIGITS.map(lambda w: ("digits", w)),
)
_SEPARATOR = st.sampled_from([" ", " ", "，", "。", ", ", ". ", "! ", "\n", "、"])


@st.composite
def _mixed_text(draw):
    tokens = draw(st.lists(_TOKEN, min_size=1, max_size=12))
    parts = []
    for kind, token in tokens:
        parts.append(token)
        # A digit run gets its own clause: "5，words", so no unit rule reads its neighbour.
        parts.append("，" if kind == "digits" else draw(_SEPARATOR))
    return tokens, "".join(parts)


@settings(max_examples=examples(300), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(_mixed_text())
def test_every_letter_and_digit_is_spoken_or_reported(normalizer, case):
    tokens, text = case
    readings, _ = read_sentences(normalizer, split_sentences(text, max_chars=DEFAULT_MAX_CHARS), None)
    spoken = _fold(" ".join(r.spoken.text for r in readings if not r.unspoken))
    unspoken = _fold(" ".join(run for r in readings
                              for run in ((r.text,) if r.unspoken else r.spoken.unvoiced)))
    for kind, token in tokens:
        if kind == "latin":
            assert _fold(token) in spoken or _fold(token) in unspoken, (token, text)
        elif kind == "accented":  # read without its accents: "café" -> "cafe"
            assert _fold(fold_width(token)) in spoken, (token, text)
        elif kind == "foreign":
            assert _fold(token) in unspoken, (token, text)
        elif kind == "han":
            said = normalizer.cleanup(token, "zh")
            assert said in normalizer.spoken(token).text or _fold(token) in unspoken, (token, text)
    assert not any(ch.isdigit() for ch in spoken), text  # every digit was read as a word
    reading_digits = [r for r in readings if any(ch.isdigit() for ch in r.text)]
    assert all(r.spoken.text or r.text in unspoken for r in reading_digits)
