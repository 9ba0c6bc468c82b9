"""TextNormalizer: plain text stays upstream's, pieces cover the sentence,
bad input is cleaned or refused, never crashes."""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_fixtures import tiny_assets

import realtime.engine.compat  # noqa: F401  (before ChatTTS)
from realtime.engine.api import RequestError, SeedVoice
from realtime.engine.text.frontend import Speakers, TextFrontEnd
from realtime.engine.text.spoken import Spoken, TextNormalizer
from realtime.speech.lang import needs_rules

# No digits, symbols, abbreviations, word-joining hyphens or contractions that
# would lose their apostrophe into another word: upstream's own normalizer
# must decide all of it.
PLAIN = [
    "Hello world, this is a test.",
    "Known facts don't change; it's just that they are forgotten!",
    "What time is it? Let's find out (roughly).",
    "She said: \"never again\" and left.",
    "A list: apples, pears, plums and so on...",
    "Hello [uv_break] there [laugh] friend.",
    "你好，世界！",
    "这是一个测试。",
    "我喜欢用Python编程，也喜欢读书。",
    "今天天气怎么样？我们去公园散步吧！",
    "他说：“明天见。”然后就走了。",
    "《红楼梦》是一部伟大的小说；值得一读。",
    "东西南北中，发白",
    "  leading and trailing spaces  ",
    "UPPER case and MiXeD case words",
    "こんにちは、世界",
    "Привет, мир!",
    "Hello 你好 mixed",
    "Hi 你好, ok!",  # a tie of Han characters and English words is English, as upstream decides
]


# Where we part from upstream on purpose: its clean-up drops apostrophes and
# dashes and reads "-" as a comma, so "we'll" became "well", "he'll"
# "hell", "well-known" paused mid-word, "Wait—what" was one word and a spaced
# dash no pause. It keeps
# only ASCII letters: an accented Latin letter loses its accent here (before
# the pre-check), the whole letter there.
@pytest.mark.parametrize("sentence,ours,theirs", [
    ("We'll see.", "We will see.", "Well see."),
    ("He'll go.", "He will go.", "Hell go."),
    ("It is well-known.", "It is well known.", "It is well,known."),
    ("Wait—what now.", "Wait, what now.", "Waitwhat now."),
    ("Late – very late — or not.", "Late, very late, or not.", "Late  very late  or not."),
    ("Wait… what now.", "Wait... what now.", "Wait what now."),
    ("Ünïcödé accents café naïve", "Unicode accents cafe naive", "ncd accents caf nave"),
    ("Crème brûlée at São Paulo.", "Creme brulee at Sao Paulo.", "Crme brle at So Paulo."),
    ("Straße, Æsir, Łódź, Nguyễn.", "Strasse, Aesir, Lodz, Nguyen.", "Strae, sir, d, Nguyn."),
    ("中国Zhōngguó很大。", "中国Zhongguo很大。", "中国Zhnggu很大。"),
])
def test_where_we_part_from_upstream(normalizer, upstream, sentence, ours, theirs):
    assert needs_rules(sentence) or not sentence.isascii()
    assert upstream(sentence) == theirs
    assert normalizer.spoken(sentence).text == ours


@pytest.fixture(scope="module")
def normalizer():
    return TextNormalizer()


@pytest.fixture(scope="module")
def upstream():
    import ChatTTS
    from ChatTTS.norm import Normalizer
    res = os.path.join(os.path.dirname(ChatTTS.__file__), "res", "homophones_map.json")
    return Normalizer(res)


@pytest.mark.parametrize("sentence", PLAIN)
def test_plain_text_is_exactly_upstreams(normalizer, upstream, sentence):
    assert not needs_rules(sentence)
    expected = upstream(sentence.strip()).strip()
    got = normalizer.spoken(sentence).text
    assert got == (expected if any(ch.isalnum() for ch in expected) else "")


def test_plain_prompt_ids_are_upstreams(upstream):
    from ChatTTS.model.speaker import Speaker
    from ChatTTS.model.tokenizer import Tokenizer
    a = tiny_assets()
    front = TextFrontEnd(a.tokenizer, Speakers(a.shape.hidden, a.spk_stat))
    up = Tokenizer.__new__(Tokenizer)
    up._tokenizer = a.tokenizer
    for sentence in PLAIN[:14]:
        decorated = Speaker.decorate_code_prompts([upstream(sentence.strip()).strip()], "[speed_5]",
                                                  None, "spk")
        ids, _, _ = up.encode(decorated, 4)
        prompt = front.build(sentence, SeedVoice(1))
        assert torch.equal(ids[0, :, 0], prompt.ids), sentence


@pytest.mark.parametrize("sentence,lang", [
    ("It costs $20 today.", "en"), ("价格是$20。", "zh"), ("Call 555-123-4567 now", "en"),
    ("[laugh] 3 cats [uv_break] and 2 dogs", "en"), ("2024年3月5日", "zh"), ("plain", "en"),
])
def test_pieces_cover_the_sentence_and_join_to_the_text(normalizer, sentence, lang):
    s = normalizer.spoken(sentence)
    assert isinstance(s, Spoken) and s.lang == lang
    assert "".join(o for o, _ in s.pieces).strip() == sentence.strip()
    assert "".join(t for _, t in s.pieces) == s.text


def test_pieces_say_what_became_what(normalizer):
    s = normalizer.spoken("It costs $20 today.")
    assert ("$20", "twenty dollars") in s.pieces
    assert ("It costs ", "It costs ") in s.pieces


def test_tags_pass_untouched_even_with_digits(normalizer):
    assert normalizer.spoken("One [laugh_0] 2 [uv_break]").text == "One [laugh_0] two [uv_break]"


def test_a_sentence_without_letters_follows_the_hint(normalizer):
    assert normalizer.spoken("123.", "zh").text == "一百二十三。"
    assert normalizer.spoken("123.", "en").text == "one hundred twenty three."
    assert normalizer.spoken("123.").text == "one hundred twenty three."
    # letters decide for themselves
    assert normalizer.spoken("有3只", "en").text == "有三只"
    assert normalizer.spoken("I have 3", "zh").text == "I have three"


def test_unspeakable_is_empty(normalizer):
    for text in ("", "   ", "...", "[uv_break]", "!!! ???", "Привет", "こんにちは", "😀😀", "\x00\x01"):
        s = normalizer.spoken(text)
        assert s.text == "", text
        assert all(said == "" for _, said in s.pieces)


def test_unmatched_bracket_keeps_the_rest(normalizer):
    assert normalizer.spoken("Hello [world of text.").text == "Hello ,world of text."
    assert normalizer.spoken("a ] b [c] d").text == "a , b d"  # "[c]": a note's mark


@pytest.mark.parametrize("sentence,said,unvoiced", [
    # Reference marks are skipped and listed; a link's text is read.
    ("It rose [1], then fell [2, 3].", "It rose, then fell.", ("[1]", "[2, 3]")),
    ("It rose.[4] It fell [a] [citation needed].", "It rose. It fell.", ("[4]", "[a]", "[citation needed]")),
    ("See [1](https://example.com) now.", "See one now.", ()),
    # No citation counts from zero: an interval is read.
    ("So x ∈ [0, 1] and y ∈ [0, 10].", "So x in , zero, one, and y in , zero, ten,.", ()),
    # Subscript digits are digits (upstream's clean-up would drop them); so are numbers
    # written as one sign, and a vulgar fraction's parts.
    ("Water is H₂O and CO₂.", "Water is H two O and CO two.", ()),
    ("Step ① mix, step ⑩ bake; Chapter Ⅲ; Henry Ⅷ; Item № 5.",
     "Step one mix, step ten bake, Chapter three, Henry the eighth, Item number five.", ()),
    ("Add ⅛ cup and 2⅜ tsp; use 3⁄4 cup; a 2½-hour drive.",
     "Add an eighth of a cup and two and three eighths teaspoons, use three quarters of a cup, a two and a"
     " half hour drive.", ()),
    ("It costs 5 ₿ or 0.5 BTC.", "It costs five bitcoins or zero point five bitcoins.", ()),
    # A footnote's superscript after a word is no number to read: listed.
    ("The claim¹ is false.", "The claim is false.", ("¹",)),
    # Any other bracketed word is read, as a pause; the model's own tags are kept, digits and all.
    ("It was [sic] wrong.", "It was ,sic, wrong.", ()),
    ("Ha [laugh_1] ha [break_3] [uv_break] end.", "Ha [laugh_1] ha [break_3] [uv_break] end.", ()),
    ("Then [Stts] [spk_emb] go.", "Then   go.", ()),
    ("Footnote[^1] here. [^note-2]: See it.", "Footnote here., See it.", ("[^1]", "[^note-2]")),
    # HTML inside Markdown: the tags go (a line break's leaves a space); "<b and c>" is no tag.
    ("Term<sup>2</sup> and H<sub>2</sub>O.", "Term two and H two O.", ()),
    ("Press <kbd>Ctrl</kbd>+<kbd>C</kbd>.", "Press Ctrl plus C.", ()),
    ('A <a href="https://x.org" target=\'_b\'>link</a><br/>next.', "A link next.", ()),
    ("If x <b and c> y.", "If x is less than b and c is greater than y.", ()),
    ("The HTML tag <p> defines a paragraph.", "The HTML tag ,p, defines a paragraph.", ()),  # written about
    ("<p>Hello</p> and a <b>bold</b> move.", "Hello  and a bold move.", ()),  # closed in the text
    ("```python", "", ()),  # a code block's fence (its sentence is listed whole by the caller)
    ("Use ```x``` here.", "Use x here.", ()),
])
def test_reference_marks_and_markup_are_skipped(normalizer, sentence, said, unvoiced):
    spoken = normalizer.spoken(sentence)
    assert (spoken.text, spoken.unvoiced) == (said, unvoiced)


def test_markdown_links_and_quote_markers_are_not_read(normalizer):
    assert normalizer.spoken("See [the docs](https://example.com/docs) now.").text == "See the docs now."
    assert normalizer.spoken("> A quote here.").text == "A quote here."
    assert normalizer.spoken(">> > Nested quote.").text == "Nested quote."
    said = normalizer.spoken("5 > 3 [uv_break] and [a b](c d).")  # no address: brackets, not a link
    assert said.text == "five is greater than three [uv_break] and ,a b,,c d,."
    said = normalizer.spoken("Read [part 2](http://x.io/2) today.")
    assert said.text == "Read part two today."


def test_control_characters_and_lone_surrogates_are_cleaned(normalizer):
    assert normalizer.spoken("Hello\x00 wor\u200bld\ud800!").text == "Hello world."
    assert normalizer.spoken("line one\nline two").text == "line one line two"
    assert normalizer.spoken("[Stts]hi[Ptts][spk_emb]").text == "hi"


def test_full_width_digits_read(normalizer):
    assert normalizer.spoken("我有１２３个").text == "我有一百二十三个"


def test_too_long_is_refused_as_a_request_error(normalizer):
    with pytest.raises(RequestError, match="at most"):
        normalizer.spoken("a" * 20_001)


def test_normalizing_the_spoken_text_again_changes_nothing(normalizer):
    for sentence in ("It costs $1,299.99 on 2024-05-06 at 10:30.", "价格是1,299.99元，6.3%。",
                     "Dr. Smith, 5 km, 25°C, 1/2, 3rd, 1990s."):
        once = normalizer.spoken(sentence)
        assert normalizer.spoken(once.text, once.lang).text == once.text


def _homophone_keys(n: int) -> str:
    import json

    import ChatTTS
    res = os.path.join(os.path.dirname(ChatTTS.__file__), "res", "homophones_map.json")
    with open(res, encoding="utf-8") as f:
        return "".join(list(json.load(f))[:n])


_ALPHABET = ("abcXYZ 019.,!?;:'\"-()<>$%&@#~^_/\\|{}" "，。！？；：（）【】《》「」、－"
             "你好世界中文的一二" "\u00e9\u3042\u0416\U0001f600" + _homophone_keys(12))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.lists(st.one_of(st.text(alphabet=_ALPHABET, max_size=12),
                               st.sampled_from(["[uv_break]", "[laugh]", "[lbreak]", "[", "]"])),
                     max_size=8).map("".join),
       lang=st.sampled_from(["en", "zh"]))
def test_fast_cleanup_is_exactly_upstreams_normalizer(normalizer, upstream, text, lang):
    from realtime.engine.text.spoken import clean
    text = clean(text)
    assert normalizer.cleanup(text, lang) == upstream(text, lang=lang)
