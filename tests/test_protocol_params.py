"""protocol.params and protocol.params_reader: speed, refine and reference on
the wire, at every edge (the sampling fields are in test_protocol_codec.py)."""

from __future__ import annotations

import json

import pytest

import protocol as p
from protocol.errors import ErrorCode as E

# The protocol's own rules (every refine form) and a server without the pass.
FULL = p.DEFAULT_OFFER
NO_REFINE = p.Offer(formats=p.FORMATS, sample_rates=(24000,), voices=(), max_text_chars=100)


def speak_params(**params) -> str:
    return json.dumps({"type": "speak", "id": "u1", "text": "Hello.", "params": params})


def params_of(offer: p.Offer = FULL, **params) -> p.Params:
    msg = p.decode_client(speak_params(**params), offer)
    assert isinstance(msg, p.Speak)
    return msg.params


def refusal(offer: p.Offer = FULL, **params) -> p.ProtocolError:
    with pytest.raises(p.ProtocolError) as caught:
        p.decode_client(speak_params(**params), offer)
    return caught.value


def test_defaults_are_none_meaning_the_server_default():
    params = params_of()
    assert (params.speed, params.refine, params.reference) == (None, None, None)
    assert not params.wants_refine
    assert p.DEFAULT_SPEED == 5 and (p.SPEED_MIN, p.SPEED_MAX) == (0, 9)


@pytest.mark.parametrize("speed", [0, 1, 5, 8, 9])
def test_speed_inside_its_range_is_kept_as_an_int(speed):
    got = params_of(speed=speed).speed
    assert got == speed and type(got) is int


@pytest.mark.parametrize("speed", [-1, 10, 5.0, 4.5, True, False, "5", [5], {}])
def test_speed_outside_or_ill_typed_is_bad_message(speed):
    err = refusal(speed=speed)
    assert (err.code, err.field, err.id) == (E.BAD_MESSAGE, "params.speed", "u1")
    assert "0 to 9" in err.message


@pytest.mark.parametrize("reference", ["first", "none"])
def test_reference_takes_first_or_none(reference):
    assert params_of(reference=reference).reference == reference


@pytest.mark.parametrize("reference", ["First", "", "last", "all", 1, True, ["first"]])
def test_another_reference_is_bad_message_not_unsupported(reference):
    err = refusal(reference=reference)
    assert (err.code, err.field) == (E.BAD_MESSAGE, "params.reference")


@pytest.mark.parametrize(("wire", "kept"), [
    (False, False),
    (True, True),
    ("[oral_2][laugh_0][break_6]", "[oral_2][laugh_0][break_6]"),
    ("", ""),
    ("x" * p.REFINE_PROMPT_MAX_CHARS, "x" * p.REFINE_PROMPT_MAX_CHARS),
    ({}, p.RefineLevels()),
    ({"oral": 0, "laugh": 0, "break": 0}, p.RefineLevels(0, 0, 0)),
    ({"oral": 9, "laugh": 2, "break": 7}, p.RefineLevels(9, 2, 7)),
    ({"laugh": 1, "mood": 3}, p.RefineLevels(laugh=1)),
    ({"oral": None}, p.RefineLevels()),
])
def test_every_refine_form_is_read_by_the_protocol(wire, kept):
    params = params_of(refine=wire)
    assert params.refine == kept and type(params.refine) is type(kept)
    assert params.wants_refine is (wire is not False)


@pytest.mark.parametrize(("wire", "field"), [
    (0, "params.refine"), (1, "params.refine"), (0.5, "params.refine"),
    (["oral"], "params.refine"), ("x" * (p.REFINE_PROMPT_MAX_CHARS + 1), "params.refine"),
    ({"oral": 10}, "params.refine.oral"), ({"oral": -1}, "params.refine.oral"),
    ({"laugh": 3}, "params.refine.laugh"), ({"break": 8}, "params.refine.break"),
    ({"oral": True}, "params.refine.oral"), ({"break": False}, "params.refine.break"),
    ({"oral": 2.0}, "params.refine.oral"), ({"laugh": "1"}, "params.refine.laugh"),
])
def test_a_malformed_refine_is_bad_message_naming_the_level(wire, field):
    for offer in (FULL, NO_REFINE):  # malformed is bad_message even where unsupported
        err = refusal(offer, refine=wire)
        assert (err.code, err.field) == (E.BAD_MESSAGE, field)


@pytest.mark.parametrize("wire", [True, {}, {"oral": 2}, "[oral_2]", ""])
def test_a_server_without_the_refine_pass_refuses_it_as_unsupported(wire):
    err = refusal(NO_REFINE, refine=wire)
    assert (err.code, err.field, err.id) == (E.UNSUPPORTED, "params.refine", "u1")
    assert "refine pass is not available" in err.message


def test_a_server_without_the_refine_pass_accepts_refine_false_or_absent():
    assert params_of(NO_REFINE, refine=False).refine is False
    assert params_of(NO_REFINE, refine=None).refine is None
    assert params_of(NO_REFINE).refine is None


def test_offers_say_whether_refine_is_offered():
    assert FULL.refine is True  # the published schema shows every form
    assert NO_REFINE.refine is False  # the default of an Offer


def test_the_new_fields_come_after_the_sampling_ones_in_the_report_order():
    err = refusal(seed=-1, speed=10, refine=7, reference="x")
    assert err.field == "params.seed"
    err = refusal(speed=10, refine=7, reference="x")
    assert err.field == "params.speed"
    err = refusal(refine=7, reference="x")
    assert err.field == "params.refine"


@pytest.mark.parametrize("params", [
    p.Params(speed=0, refine=p.RefineLevels(oral=2, break_=6), reference="first"),
    p.Params(speed=9, refine=True, reference="none"),
    p.Params(refine=False),
    p.Params(refine="[oral_1]"),
])
def test_params_round_trip_through_the_wire(params):
    msg = p.Speak("u1", "Hello.", params=params)
    assert p.decode_client(p.encode(msg)) == msg


def test_refine_levels_write_break_under_its_wire_name():
    wire = p.Params(refine=p.RefineLevels(oral=1, laugh=0, break_=4)).to_wire()
    assert wire == {"refine": {"oral": 1, "laugh": 0, "break": 4}}
    assert p.Params(refine=False).to_wire() == {"refine": False}
