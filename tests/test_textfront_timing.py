"""realtime.textfront.timing: words, weights, layouts and the causal WordTrack."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realtime.textfront import timing as t


def test_words_are_the_spoken_text_with_punctuation_as_pauses():
    words = t.spoken_words("It costs twenty dollars, today. OK")
    assert [w.word for w in words] == ["It", "costs", "twenty", "dollars", "today", "OK"]
    assert [w.pause for w in words] == [0, 0, 0, t.CLAUSE_PAUSE, t.SENTENCE_PAUSE, 0]
    assert [w.units for w in words[:4]] == [1, 1, 2, 2]  # CMUdict syllables


def test_the_last_word_has_no_pause_and_cjk_is_one_unit_a_character():
    words = t.spoken_words("AI芯片很好！")
    assert [(w.word, w.units) for w in words][1:] == [("芯", 1), ("片", 1), ("很", 1), ("好", 1)]
    assert words[0].word == "AI" and words[-1].pause == 0


def test_pieces_give_each_word_its_original():
    pieces = [("It costs ", "It costs "), ("$20", "twenty dollars"), (" now.", " now.")]
    words = t.spoken_words("It costs twenty dollars now.", pieces)
    assert [(w.word, w.original) for w in words] == [
        ("It", None), ("costs", None), ("twenty", "$20"), ("dollars", "$20"), ("now", None)]
    # a sentence read as written, its spaces trimmed: no word has an original
    words = t.spoken_words("Read as written.", [(" Read as written. ", "Read as written.")])
    assert [w.original for w in words] == [None, None, None]


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


def _check_layout(words, out, start, end):
    assert [w.word for w in out] == [w.word for w in words]
    assert out[0].start_ms == start and out[-1].end_ms == end
    for a in out:
        assert start <= a.start_ms <= a.end_ms <= end
    for a, b in zip(out, out[1:]):
        assert a.end_ms <= b.start_ms


def test_lay_out_covers_the_span_in_proportion():
    words = t.spoken_words("Hello there, friend")  # 2 + 1 (+1 pause) + 1 units
    out = t.lay_out(words, 100.0, 1100.0)
    _check_layout(words, out, 100.0, 1100.0)
    assert [(w.start_ms, w.end_ms) for w in out] == [(100, 500), (500, 700), (900, 1100)]


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
    words = t.spoken_words(text)
    if not words:
        return
    end = start + length
    track = t.WordTrack(words, start, unit_ms)
    known: list[t.TimedWord] = []
    checks: list[tuple[float, int, float | None]] = []  # (audio sent, words known, begun at)
    for sent in sorted(start + c * length for c in cuts):
        known += track.advance(sent)
        begun = track.begun()
        assert begun is None or begun == words[len(known)]
        checks.append((sent, len(known), None if begun is None else track.at))
    final = known + track.finish(end)
    _check_layout(words, final, start, end)
    assert final[:len(known)] == known  # never revised
    for sent, count, begun_at in checks:
        started = sum(1 for w in final if w.start_ms < sent)
        assert count >= started - 1, (sent, count, started)
        assert count + (begun_at is not None) >= started, (sent, count, started)
        if begun_at is not None:
            assert final[count].start_ms == begun_at  # its start, as announced


def test_a_slow_speaker_gets_words_at_the_rate_and_the_last_stretches():
    words = t.spoken_words("one two three")
    track = t.WordTrack(words, 0.0, 100.0)
    assert [w.word for w in track.advance(150.0)] == ["one"]
    assert [w.word for w in track.advance(5000.0)] == ["two"]  # never the last one early
    assert track.finish(6000.0) == [t.TimedWord("three", 200.0, 6000.0)]


def test_a_fast_speaker_keeps_later_words_after_the_audio_already_sent():
    words = t.spoken_words("one two three four")
    track = t.WordTrack(words, 0.0, 100.0)
    assert track.advance(90.0) == []
    rest = track.finish(120.0)  # ended sooner than the rate said
    assert rest[0] == t.TimedWord("one", 0.0, 90.0)
    assert all(w.start_ms >= 90.0 for w in rest[1:]) and rest[-1].end_ms == 120.0


@pytest.mark.parametrize("text", ["", "...", "!!"])
def test_nothing_to_say_gives_no_words(text):
    assert t.spoken_words(text) == [] and t.lay_out([], 0, 1) == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abcXY .,!?'-0123\t\n;:\"()’", max_size=40))
def test_ascii_text_is_cut_into_the_tokens_the_expression_finds(text):
    if text.isascii():
        assert t._ascii_tokens(text) == t._TOKEN.findall(text)


def test_the_weight_table_stays_bounded(monkeypatch):
    monkeypatch.setattr(t, "_WEIGHTS_MAX", 4)
    t._WEIGHTS.clear()
    words = t.spoken_words("one two three four five six, ten.")
    assert [w.units for w in words] == [1.0] * 7 and words[5].pause == t.CLAUSE_PAUSE
    assert len(t._WEIGHTS) <= 4
