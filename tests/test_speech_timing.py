"""realtime.speech.timing: words, weights, layouts and the causal WordTrack."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realtime.speech import timing as t


def units(plan: t.WordPlan) -> list[float]:
    return [b - a for a, b in zip(plan.starts, plan.ends)]


def pauses(plan: t.WordPlan) -> list[float]:
    return [b - a for a, b in zip(plan.ends, plan.starts[1:])] + [0.0]


def timed(plan: t.WordPlan, lo: int, times: tuple[list[float], list[float]]) -> list[tuple]:
    """(word, start, end) of words ``lo``... at ``times``, as the server sends them."""
    return list(zip(plan.words[lo:], *times))


@pytest.mark.parametrize("text", ["It costs twenty dollars, today. OK",
                                  "It costs  twenty dollars ,today .OK",  # one piece, several tokens
                                  "It costs twenty dollars,; today.!. OK"])  # the longest pause
def test_words_are_the_spoken_text_with_punctuation_as_pauses(text):
    plan = t.plan_words(text)
    assert list(plan.words) == ["It", "costs", "twenty", "dollars", "today", "OK"]
    assert pauses(plan) == [0, 0, 0, t.CLAUSE_PAUSE, t.SENTENCE_PAUSE, 0]
    assert units(plan)[:4] == [1, 1, 2, 2]  # CMUdict syllables
    assert plan.starts[0] == 0 and plan.total == plan.ends[-1] == sum(units(plan)) + 2.5 == 12.5


def test_the_last_word_has_no_pause_and_cjk_is_one_unit_a_character():
    plan = t.plan_words("AI芯片很好！")
    assert list(zip(plan.words, units(plan)))[1:] == [("芯", 1), ("片", 1), ("很", 1), ("好", 1)]
    assert plan.words[0] == "AI" and plan.total == plan.ends[-1]


def test_pieces_give_each_word_its_original():
    pieces = [("It costs ", "It costs "), ("$20", "twenty dollars,"), (" now.", " now.")]
    plan = t.plan_words("It costs twenty dollars, now.", pieces)
    assert list(zip(plan.words, plan.originals)) == [
        ("It", None), ("costs", None), ("twenty", "$20"), ("dollars", "$20"), ("now", None)]
    assert pauses(plan)[3] == t.CLAUSE_PAUSE  # a pause across pieces
    # a sentence read as written, its spaces trimmed: no word has an original
    plan = t.plan_words("Read as written.", [(" Read as written. ", "Read as written.")])
    assert plan.originals == [None, None, None]


def test_the_vowel_rule_is_measured_against_the_dictionary():
    table = t.syllable_table()
    words = [w for w in table if w.isalpha()]
    exact = sum(t.rule_syllables(w) == table[w] for w in words) / len(words)
    near = sum(abs(t.rule_syllables(w) - table[w]) <= 1 for w in words) / len(words)
    assert exact > 0.80 and near > 0.99  # the figures the module docstring states
    assert (t.rule_syllables("make"), t.rule_syllables("table"), t.rule_syllables("Zorblax")) == (1, 2, 2)


def test_unknown_words_and_digits_still_weigh_something():
    assert t.units_of("Zorblaxian") >= 3
    assert t.units_of("2024") == 4


def _check_layout(plan, out, start, end):
    assert [w for w, _, _ in out] == list(plan.words)
    assert out[0][1] == start and out[-1][2] == end
    for _, a, b in out:
        assert start <= a <= b <= end
    for (_, _, a), (_, b, _) in zip(out, out[1:]):
        assert a <= b


def test_spread_covers_the_span_in_proportion():
    plan = t.plan_words("Hello there, friend")  # 2 + 1 (+1 pause) + 1 units
    out = timed(plan, 0, plan.spread(0, 100.0, 1100.0))
    _check_layout(plan, out, 100.0, 1100.0)
    assert [(a, b) for _, a, b in out] == [(100, 500), (500, 700), (900, 1100)]
    assert timed(plan, 1, plan.spread(1, 0.0, 300.0)) == [("there", 0, 100), ("friend", 200, 300)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "extraordinary", ",", ".", "42"]), min_size=1, max_size=30)
       .map(" ".join), st.floats(0, 1e7), st.floats(0, 1e4))
def test_spread_stays_inside_its_span_despite_rounding(text, start, length):
    plan = t.plan_words(text)
    if plan.words:
        _check_layout(plan, timed(plan, 0, plan.spread(0, start, start + length)),
                      start, start + length)


TEXTS = st.lists(st.sampled_from(["hi", "there", "wonderful", "a", "，", ",", ".", "!", "好", "42",
                                  "extraordinary", "—"]), min_size=1, max_size=15).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(TEXTS, st.floats(0, 5000), st.floats(0, 8000),
       st.lists(st.floats(0, 1), max_size=12), st.floats(50, 400))
def test_the_track_commits_each_word_before_the_audio_passes_it(text, start, length, cuts,
                                                                unit_ms):
    """Whatever the real length and however the audio arrives: committed words
    never change, the whole layout covers the segment, and at every moment
    each word that starts before the audio sent was committed, except the one
    in progress, which is the word begun, at the start it keeps."""
    plan = t.plan_words(text)
    if not plan.words:
        return
    end = start + length
    track = t.WordTrack(plan, start, unit_ms)
    known: list[tuple] = []
    checks: list[tuple[float, int, float | None]] = []  # (audio sent, words known, begun at)
    for sent in sorted(start + c * length for c in cuts):
        known += timed(plan, len(known), track.advance(sent))
        assert track.next == len(known)
        checks.append((sent, len(known), track.at if track.begun else None))
    final = known + timed(plan, len(known), track.finish(end))
    _check_layout(plan, final, start, end)
    assert final[:len(known)] == known  # never revised
    for sent, count, begun_at in checks:
        started = sum(1 for _, a, _ in final if a < sent)
        assert count >= started - 1, (sent, count, started)
        assert count + (begun_at is not None) >= started, (sent, count, started)
        if begun_at is not None:
            assert final[count][1] == begun_at  # its start, as announced


def test_a_slow_speaker_gets_words_at_the_rate_and_the_last_stretches():
    plan = t.plan_words("one two three")
    track = t.WordTrack(plan, 0.0, 100.0)
    assert timed(plan, 0, track.advance(150.0)) == [("one", 0.0, 100.0)]
    assert track.begun and track.at == 100.0
    assert timed(plan, 1, track.advance(5000.0)) == [("two", 100.0, 200.0)]  # never the last early
    assert track.advance(5500.0) == ([], [])
    assert timed(plan, 2, track.finish(6000.0)) == [("three", 200.0, 6000.0)]
    assert track.finish(6000.0) == ([], [])


def test_a_fast_speaker_keeps_later_words_after_the_audio_already_sent():
    plan = t.plan_words("one two three four")
    track = t.WordTrack(plan, 0.0, 100.0)
    assert track.advance(90.0) == ([], []) and track.begun
    rest = timed(plan, 0, track.finish(120.0))  # ended sooner than the rate said
    assert rest[0] == ("one", 0.0, 90.0)
    assert all(a >= 90.0 for _, a, _ in rest[1:]) and rest[-1][2] == 120.0


@pytest.mark.parametrize("text", ["", "...", "!!"])
def test_nothing_to_say_gives_no_words(text):
    plan = t.plan_words(text)
    assert not plan.words and plan.total == 0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcXY .,!?'-0123\t\n;:\"()’", max_size=40))
def test_ascii_text_is_cut_into_the_tokens_the_expression_finds(text):
    if text.isascii():
        assert t._ascii_tokens(text) == t._TOKEN.findall(text)


def test_the_weight_table_stays_bounded(monkeypatch):
    monkeypatch.setattr(t, "_WEIGHTS_MAX", 4)
    t._WEIGHTS.clear()
    t._PIECES.clear()
    plan = t.plan_words("one two three four five six, ten.")
    assert units(plan) == [1.0] * 7 and pauses(plan)[5] == t.CLAUSE_PAUSE
    assert len(t._WEIGHTS) <= 4 and len(t._PIECES) <= 4
    t._PIECES.clear()


def _columns(plan: t.WordPlan) -> tuple:
    return tuple(plan.words), list(plan.originals), plan.starts, plan.ends


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab Xy .,!?'-3;:()’", max_size=30), st.text(alphabet="ab ,.;", max_size=12))
def test_a_plan_is_the_same_whatever_the_memos_have_seen(text, before):
    # The memos' fast path (every piece one word seen before: one lookup) and
    # the slow one (tokens, weights) must agree: cold, warm, and after other text.
    t._PIECES.clear()
    t._WORDS.clear()
    t._WEIGHTS.clear()
    cold = _columns(t.plan_words(text))
    assert _columns(t.plan_words(text)) == cold
    t.plan_words(before)
    assert _columns(t.plan_words(text)) == cold
    assert "" not in cold[0]  # a pause mark alone (" , ") is never a word


def test_a_lone_mark_seen_before_stays_a_pause():
    t.plan_words("wait , what")
    plan = t.plan_words("wait , what")
    assert list(plan.words) == ["wait", "what"] and pauses(plan) == [t.CLAUSE_PAUSE, 0.0]


@pytest.mark.parametrize("text", [
    "Hello, world; this is a test: of pauses... and marks!? Yes.",
    "a, b, c, d, e, f.", "The 2024 report, 3 items: one, two and three.", "one",
    "AI芯片的发展非常迅速，我们需要关注。", ", leading mark then words",
])
def test_ends_taken_from_the_next_start_are_the_directly_computed_ends(text):
    # The layouts compute starts only and take each end from the next start
    # but after a pause: the same floats as laying out every end directly.
    plan = t.plan_words(text)
    direct = [a + u for a, u in zip(plan.starts, plan.units)]
    assert plan.ends == direct and plan.total == direct[-1]
    for lo in range(len(plan)):
        starts, ends = plan.spread(lo, 1000.0 / 3, 4321.7)
        origin, scale = plan.starts[lo], (4321.7 - 1000.0 / 3) / (plan.total - plan.starts[lo])
        want = [1000.0 / 3 + (b - origin) * scale for b in direct[lo:]]
        want[-1] = 4321.7
        assert ends == [min(w, 4321.7) for w in want]
    track = t.WordTrack(plan, 12.5, 231.3)
    assert track.ends_ms == [12.5 + b * 231.3 for b in direct]
    assert [track.end_ms(i) for i in range(len(plan))] == track.ends_ms
