"""protocol.words' hot-path writer: the bytes orjson would write for the same message."""

from __future__ import annotations

import orjson
import pytest

import protocol as p
from protocol.words import WordsJson, numbers, words_body

W = p.WordTiming


@pytest.mark.parametrize("words", [
    (W("a", 0.0, 1.0), W("b", 1.0, 2.5)),  # every word the client's own: the one-list case
    (W("a", 0.0, 1.0, ""), W("b", 1.0, 2.0)),  # an empty original is still an original
    (W("twenty", 0.0, 1.0, "$20"), W("dollars", 1.0, 2.0, "$20"), W("now", 2.0, 3.0)),
])
def test_a_segments_objects_and_pending_word_are_orjsons_bytes(words):
    pending = (p.WordStart("x\"y", 3.25, "$5"),)
    columns = list(zip(*words))
    text = WordsJson(columns[0], columns[3])
    body = words_body(text.timed(0, columns[1], columns[2]),
                      WordsJson(["x\"y"], ["$5"]).started(0, numbers([3.25])[0]))
    got = p.TimedWords.from_body("u1", 7, body)
    assert p.encode(got) == orjson.dumps(p.Words("u1", 7, words, pending=pending).to_wire())


def test_objects_from_an_offset_and_no_pending_member_when_none():
    text = WordsJson(["one", "two", "three"], [None, None, None])
    body = words_body(text.timed(1, [5.0, 6.0], [6.0, 7.5]))
    message = p.decode_server(p.encode(p.TimedWords.from_body("u", 0, body)))
    assert message == p.Words("u", 0, (W("two", 5.0, 6.0), W("three", 6.0, 7.5)))
    assert b"pending" not in body


def test_body_with_a_pending_word_is_words_body_with_started():
    text = WordsJson(["one", "twenty", "dollars"], [None, "$20", "$20"])
    objects = text.timed(0, [0.0], [131.1])
    for method in ("estimated", "aligned"):
        assert (text.body(objects, 1, b"393.4", method)
                == words_body(objects, text.started(1, b"393.4"), method))
