"""protocol.schema: the JSON Schema accepts exactly what decode_client accepts."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, validators
from protocol_strategies import SMALL_OFFER, ids, json_values, speaker_embedding

import protocol as p
from protocol.schema import SEED_VOICE_PATTERN, client_schema, load_client_schema, render


def _integer_without_fraction(checker, instance) -> bool:
    # The protocol's integers are written without fraction ("5.0" is refused);
    # JSON Schema's data model cannot tell 5.0 from 5, so the check says it.
    return isinstance(instance, int) and not isinstance(instance, bool)


StrictValidator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", _integer_without_fraction),
)


def accepted(message: dict, offer: p.Offer) -> bool:
    try:
        p.decode_client(json.dumps(message), offer)
    except p.ProtocolError:
        return False
    return True


def test_the_published_file_is_the_schema_of_the_default_offer():
    assert load_client_schema() == client_schema(p.DEFAULT_OFFER)
    from importlib import resources
    text = resources.files("protocol").joinpath("client_messages.schema.json").read_text()
    assert text == render(client_schema(p.DEFAULT_OFFER))


@pytest.mark.parametrize("offer", [p.DEFAULT_OFFER, SMALL_OFFER])
def test_the_schema_is_a_valid_draft_2020_12_schema(offer):
    Draft202012Validator.check_schema(client_schema(offer))


def test_a_generic_validator_accepts_typical_messages():
    validator = Draft202012Validator(load_client_schema())
    for message in [
        {"type": "speak", "id": "u1", "text": "Hello there."},
        {"type": "speak", "id": "u2", "text": "Long read.", "lane": "background",
         "deadline_ms": 60000, "format": "pcm_mulaw", "sample_rate": 8000, "frame_ms": 20,
         "voice": "seed:1234", "chunking": "token", "params": {"temperature": 0.3}},
        {"type": "append", "id": "u1", "text": " more", "final": True},
        {"type": "flush", "id": "u1"},
        {"type": "cancel", "id": "u1"},
    ]:
        assert validator.is_valid(message), message
        assert accepted(message, p.DEFAULT_OFFER)
    assert not validator.is_valid({"type": "speak", "id": "u1"})
    assert not validator.is_valid({"type": "sing", "id": "u1"})


@settings(max_examples=400, deadline=None)
@given(st.integers(-5, 2**33) | st.sampled_from([2**32 - 1, 2**32, 4294967290, 4299999999]),
       st.sampled_from(["", "0", "+", "-", " "]))
def test_the_seed_pattern_is_exactly_the_seed_range(n, prefix):
    voice = f"seed:{prefix}{n}"
    in_range = prefix == "" and 0 <= n <= p.SEED_MAX
    assert (re.search(SEED_VOICE_PATTERN, voice) is not None) == in_range
    assert (p.seed_of(voice) is not None) == in_range


# --- near-valid messages ----------------------------------------------------
# Every field has a strategy of valid values and a list of edge cases on both
# sides of its rules. A message is valid values with some fields (including
# "params.<name>") set to edge cases, null, absent or any JSON value.

ABSENT = object()
EMBEDDING_OK = speaker_embedding(0)


def _edge_strings(offer: p.Offer) -> list[str]:
    """Voice strings on both sides of every voice rule."""
    voices = [f"seed:{n}" for n in (-1, 0, 7, 2**32 - 1, 2**32)]
    voices += ["seed:", "seed:01", "seed:+1", "seed:7\n", "nobody", "", "ALICE", *offer.voices]
    for n in (1, 15, 16, 17, 4096, 4097):
        for mark in ("", "\u3d01", "\u3d06", "\u3d07", "\n", "\u3d03\n", "x", "\u4dff"):
            voices.append("\u4e00" * n + mark)
    voices += ["\u8dff" * 20, "\u8e00" * 20, EMBEDDING_OK, EMBEDDING_OK + "\n"]
    return voices


def _valid_voices(offer: p.Offer):
    options = [u32_strings, st.integers(0, 3).map(speaker_embedding)]
    if offer.voices:
        options.append(st.sampled_from(offer.voices))
    return st.one_of(options)


u32_strings = st.integers(0, 2**32 - 1).map(lambda n: f"seed:{n}")

NUMBER_EDGES = [0, -0.0, 5e-324, -1, 1, 1.0, 0.5, 0.99, 0.9999999, 1.0000001, 2, 2.0,
                2.0000001, 3, 20, 20.0, 626, 627, 2**32 - 1, 2**32, True, False, "1", [], {}]


REFINE_EDGES = [False, True, 0, 1, "", "[oral_2][laugh_0][break_6]", "x" * 256, "x" * 257,
                {}, {"oral": 0, "laugh": 0, "break": 0}, {"oral": 9, "laugh": 2, "break": 7},
                {"oral": 10}, {"laugh": 3}, {"break": 8}, {"oral": -1}, {"oral": True},
                {"oral": 2.0}, {"oral": None}, {"mood": 3}, [], ["oral"]]


def field_cases(offer: p.Offer) -> dict[str, tuple[st.SearchStrategy, list]]:
    """Per field path: (valid values, edge cases)."""
    limit = offer.max_text_chars
    return {
        "type": (st.sampled_from(["speak"] * 5 + ["append", "flush", "cancel", "ping"]),
                 ["x", "Speak", "hello", "pong", 5, ["speak"]]),
        "id": (ids, ["", "a" * 64, "a" * 65, "a b", "abc\n", "é", "a/b", 5, True]),
        "text": (st.text(max_size=30) | st.just("é" * limit),
                 ["", "é" * (limit - 1), "é" * limit, "é" * (limit + 1), 5, ["a"]]),
        "final": (st.booleans(), [0, 1, "true", True]),
        "lane": (st.sampled_from(offer.lanes), ["urgent", "", "Background", *p.LANES]),
        "deadline_ms": (st.integers(1, 2**32 - 1),
                        [0, 1, -1, 1.5, 5000.0, 2**32 - 1, 2**32, "100"]),
        "voice": (_valid_voices(offer), [*_edge_strings(offer), 5]),
        "format": (st.sampled_from(offer.formats), ["mp3", "", *p.FORMATS]),
        "sample_rate": (st.sampled_from(offer.sample_rates),
                        [11025, 24000, 24000.0, 0, -1, 384000, 384001, 48000, 16000, "24000"]),
        "frame_ms": (st.integers(10, 1000), [8, 9, 10, 1000, 1001, 100.0, 0, -10]),
        "chunking": (st.sampled_from(offer.chunkings), ["word", "token", "sentence", ""]),
        "params": (st.just({}), ["x", [], 1, True]),
        "params.temperature": (st.floats(0, 2, exclude_min=True), NUMBER_EDGES),
        "params.top_p": (st.floats(0, 1, exclude_min=True), NUMBER_EDGES),
        "params.top_k": (st.integers(1, 626), NUMBER_EDGES),
        "params.repetition_penalty": (st.floats(1, 2), NUMBER_EDGES),
        "params.seed": (st.integers(0, 2**32 - 1), NUMBER_EDGES),
        "params.speed": (st.integers(0, 9), [-1, 0, 9, 10, 5.0, True, "5"]),
        "params.refine": (st.just(False), REFINE_EDGES),
        "params.reference": (st.sampled_from(p.REFERENCES),
                             ["first", "none", "First", "", "last", 1, True]),
        "timestamps": (st.booleans(), [0, 1, "true", True, False]),
        "flush_id": (ids, ["", "f" * 64, "f" * 65, "a b", "f\n", "é", 5, True]),
        "data": (st.text(max_size=20), ["", "é" * 256, "é" * 257, 5, {}]),
    }


def build(values: dict) -> dict:
    """A message from field paths. ABSENT leaves a field out; members of
    params are dropped when params itself is set to a non-object."""
    message: dict = {}
    for path, value in values.items():
        head, _, member = path.partition(".")
        if value is ABSENT:
            continue
        if not member:
            message[head] = dict(value) if isinstance(value, dict) else value
        elif isinstance(message.setdefault(head, {}), dict):
            message[head][member] = value
    return message


def base_speak(offer: p.Offer) -> dict:
    return {"type": "speak", "id": "u1", "text": "Hello.", "lane": "background",
            "deadline_ms": 1000, "voice": "seed:1", "format": offer.formats[0],
            "sample_rate": offer.sample_rates[0], "frame_ms": 100, "chunking": "token",
            "params.temperature": 0.3, "params.top_p": 0.7, "params.top_k": 20,
            "params.repetition_penalty": 1.05, "params.seed": 3}


@st.composite
def near_valid_messages(draw, offer: p.Offer) -> dict:
    cases = field_cases(offer)
    values = {}
    for path, (valid, _) in cases.items():
        optional = path not in ("type", "id", "text")
        values[path] = draw(st.one_of(st.just(ABSENT), st.none(), valid, valid)
                            if optional else valid)
    for path in draw(st.lists(st.sampled_from(sorted(cases)), max_size=2, unique=True)):
        edge = st.sampled_from(cases[path][1])
        values[path] = draw(st.one_of(edge, edge, edge, json_values, st.just(ABSENT)))
    values["extra"] = draw(st.just(ABSENT) | json_values)
    # "params" first, so a non-object params is not overwritten by its members.
    return build({"params": values.pop("params"), **values})


OFFERS = pytest.mark.parametrize("offer", [p.DEFAULT_OFFER, SMALL_OFFER],
                                 ids=["default", "small"])


@OFFERS
@pytest.mark.parametrize("kind", ["speak", "append", "flush", "cancel", "ping"])
def test_every_edge_of_every_field_agrees(offer, kind):
    """One field at a time set to each edge case, null or absent, on an
    otherwise valid message: the schema and the decoder agree each time."""
    validator = StrictValidator(client_schema(offer))
    base = {**base_speak(offer), "type": kind}
    verdicts = []
    for path, (_, edges) in field_cases(offer).items():
        for value in [*edges, None, ABSENT]:
            message = build({"params": ABSENT, **{**base, path: value}})
            verdict = accepted(message, offer)
            assert validator.is_valid(message) == verdict, message
            verdicts.append(verdict)
    assert True in verdicts and False in verdicts


@OFFERS
def test_valid_by_schema_iff_accepted_by_the_decoder(offer):
    """Random combinations (several fields off at once, any JSON values); the
    single-field sweep above is what pins every boundary exactly."""
    validator = StrictValidator(client_schema(offer))
    seen = {True: 0, False: 0}

    # Derandomized: the mix of verdicts checked below must not depend on the run.
    @settings(max_examples=250, deadline=None, derandomize=True)
    @given(near_valid_messages(offer))
    def check(message):
        verdict = accepted(message, offer)
        assert validator.is_valid(message) == verdict, message
        seen[verdict] += 1

    check()
    # Both verdicts were common, so the equivalence is not vacuous.
    assert seen[True] > 20 and seen[False] > 20, seen
