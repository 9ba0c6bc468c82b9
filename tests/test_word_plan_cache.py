"""realtime.speech.timing's caches and weights: a plan made from warm caches (pieces and
words seen before, looked up in C) equals the plan made cold, piece by piece; the syllable
rule and the dictionary lookup on the words they decide; protocol.words.WordOrder's bounds
(a client's check: exactly at the slack is allowed, past it is not)."""

from __future__ import annotations

import pytest

from protocol.words import WordOrder, Words, WordStart, WordTiming
from realtime.speech import timing as t

PIECES = [
    None,
    (("It costs ", "It costs "), ("$20", "twenty dollars"), (" today.", " today.")),
    (("Well, ", "Well, "), ("5km", "five kilometers"), (", then: ", ", then: "), ("go", "go"), ("!", "!")),
    (("today ", "today "), ("is", "is"), (" fine", " fine"), (".", ".")),
    (("今天", "今天"), ("3", "三"), ("点，", "点，"), ("OK", "OK"), ("。", "。")),
    (("— ", "— "), ("Hello", "Hello"), (" , , world", " , , world"), ("...", "...")),
]


def _text(pieces) -> str:
    return "".join(s for _, s in pieces) if pieces else "One two, three; four. Five six seven."


def _columns(plan: t.WordPlan) -> tuple:
    return (tuple(plan.words), tuple(plan.originals), tuple(plan.starts), tuple(plan.units),
            tuple(plan.pauses))


def _cold(text: str, pieces) -> tuple:
    t._WEIGHTS.clear()
    t._PIECES.clear()
    t._WORDS.clear()
    return _columns(t.plan_words(text, pieces))


@pytest.mark.parametrize("first", range(len(PIECES)))
def test_a_plan_from_warm_caches_equals_the_cold_one(first):
    # Warm the caches with every other sentence first, in another order each time.
    order = PIECES[first:] + PIECES[:first]
    cold = {i: _cold(_text(p), p) for i, p in enumerate(PIECES)}
    for _ in range(2):
        for pieces in order:
            t.plan_words(_text(pieces), pieces)
        for i, pieces in enumerate(PIECES):
            assert _columns(t.plan_words(_text(pieces), pieces)) == cold[i], pieces


def test_a_sentence_of_seen_words_keeps_the_words_before_it():
    t.plan_words("alpha bravo.")
    t.plan_words("charlie delta")
    pieces = (("Say ", "Say "), ("x", "alpha bravo"), (" charlie delta", " charlie delta"))
    plan = t.plan_words("Say alpha bravo charlie delta", pieces)
    assert list(plan.words) == ["Say", "alpha", "bravo", "charlie", "delta"]
    assert list(plan.originals) == [None, "x", "x", None, None]


def test_marks_alone_are_pauses_not_words():
    plan = t.plan_words("Hello , , world ...")
    assert list(plan.words) == ["Hello", "world"]
    assert plan.pauses[0] == t.CLAUSE_PAUSE and plan.pauses[1] == t.SENTENCE_PAUSE
    lead = t.plan_words("— Hello")
    assert list(lead.words) == ["Hello"] and lead.starts == [0.0]
    assert t.plan_words(", ; .").words == ()


@pytest.mark.parametrize("word,count", [("agree", 2), ("goodbye", 2), ("table", 2), ("make", 1),
                                        ("the", 1), ("rhythm", 1), ("strengths", 1), ("zzz", 1),
                                        ("don't", 1), ("we’ve", 1), ("banana", 3)])
def test_the_syllable_rule(word, count):
    assert t.rule_syllables(word) == count


def test_the_dictionary_is_read_in_lower_case():
    table = t.syllable_table()
    assert table["business"] == 2 != t.rule_syllables("business")
    assert t.units_of("Business") == t.units_of("BUSINESS") == 2.0
    assert t.units_of("Don’t") == float(table["don't"])
    assert t.units_of("1234") == 4.0 and t.units_of("好") == 1.0


def _words(*timings: tuple[str, float, float], pending: tuple[tuple[str, float], ...] = ()) -> Words:
    return Words("u", 0, tuple(WordTiming(w, a, b) for w, a, b in timings),
                 pending=tuple(WordStart(w, a) for w, a in pending))


def test_word_order_allows_exactly_its_slack_and_no_more():
    order = WordOrder(0.5)
    assert order.add(_words(("a", 0.0, 100.0))) is None
    assert order.add(_words(("b", 99.5, 200.0))) is None  # 0.5 before the last end: the slack
    assert WordOrder(0.5).add(_words(("a", 0.0, 100.0), ("b", 99.4, 200.0))) is not None
    order = WordOrder(0.5)
    assert order.add(_words(("a", 0.0, 100.0), pending=(("b", 99.5),))) is None
    assert order.add(_words(("b", 100.0, 150.0))) is None  # its start again, within the slack
    bad = WordOrder(0.5)
    assert bad.add(_words(("a", 0.0, 100.0), pending=(("b", 99.4),))) is not None
    moved = WordOrder(0.5)
    moved.add(_words(("a", 0.0, 100.0), pending=(("b", 100.0),)))
    assert moved.add(_words(("b", 100.6, 150.0))) is not None


def test_word_order_checks_each_pending_word_against_the_one_before():
    order = WordOrder(0.5)
    assert order.add(_words(("a", 0.0, 100.0), pending=(("b", 100.0), ("c", 150.0)))) is None
    assert WordOrder(0.5).add(_words(("a", 0.0, 100.0), pending=(("b", 150.0), ("c", 120.0)))) is not None


def test_latin_between_han_characters_stays_one_word():
    plan = t.plan_words("用AI芯片和GPU卡")
    assert list(plan.words) == ["用", "AI", "芯", "片", "和", "GPU", "卡"]


def test_a_message_from_its_body_keeps_its_id_and_segment():
    from protocol.words import TimedWords

    message = TimedWords.from_body("u7", 3, b'"words":[],"method":"estimated"}')
    assert (message.id, message.segment) == ("u7", 3)


def test_word_order_keeps_the_first_start_and_checks_the_segment_bounds():
    order = WordOrder(0.5)
    order.add(_words(("a", 10.0, 20.0)))
    order.add(_words(("b", 20.0, 30.0)))
    assert order.span == (10.0, 30.0)
    assert order.closed(10.5, 19.0) is None  # both ends exactly at the slack
    assert order.closed(10.6, 19.0) is not None  # the first start before the segment
    assert order.closed(10.0, 19.4) is not None  # the last end after it
