"""Reading ``speak.params`` with the protocol's error rules.

A wrong type or a value outside a field's range is ``bad_message`` with
``field`` ``params.<name>``. A server that does not offer the refine pass
refuses a well-formed ``refine`` other than ``false`` with ``unsupported``
(field ``params.refine``).

Thread: pure functions, safe from any thread.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.fields import FieldReader
from protocol.params import (
    REFERENCES,
    REFINE_LEVELS,
    REFINE_PROMPT_MAX_CHARS,
    REPETITION_PENALTY_MAX,
    REPETITION_PENALTY_MIN,
    SEED_MAX,
    SPEED_MAX,
    SPEED_MIN,
    TEMPERATURE_MAX,
    TOP_K_MAX,
    TOP_P_MAX,
    Params,
    Refine,
    RefineLevels,
)

REFINE_UNAVAILABLE = "the refine pass is not available on this server; send refine false"


def parse_params(r: FieldReader, refine_offered: bool = True) -> Params:
    """The ``params`` object of the message ``r`` reads (``Params()`` when
    absent). Fields are read in the order of the protocol table. Raises
    ``ProtocolError``: ``bad_message`` with ``field`` ``params.<name>`` for a
    wrong type or range, ``unsupported`` for a well-formed ``refine`` other
    than ``false`` when ``refine_offered`` is False."""
    p = r.nested("params")
    return Params() if p is None else read_params(p, refine_offered)


def read_params(p: FieldReader, refine_offered: bool = True) -> Params:
    """``Params`` from the fields ``p`` reads (the members of a ``params``
    object, or another body's fields of the same names), with the rules of
    ``parse_params``; absent fields are None."""
    return Params(
        temperature=p.number("temperature", 0.0, TEMPERATURE_MAX, low_open=True, default=None),
        top_p=p.number("top_p", 0.0, TOP_P_MAX, low_open=True, default=None),
        top_k=p.integer("top_k", 1, TOP_K_MAX, None),
        repetition_penalty=p.number(
            "repetition_penalty", REPETITION_PENALTY_MIN, REPETITION_PENALTY_MAX, default=None
        ),
        seed=p.integer("seed", 0, SEED_MAX, None),
        speed=p.integer("speed", SPEED_MIN, SPEED_MAX, None),
        refine=_refine(p, refine_offered),
        reference=_reference(p),
    )


def _refine(p: FieldReader, offered: bool) -> Refine | None:
    value = p.obj.get("refine")
    refine: Refine | None
    if value is None or isinstance(value, bool):
        refine = value
    elif isinstance(value, str):
        if len(value) > REFINE_PROMPT_MAX_CHARS:
            raise p.fail("refine", f"a refine prompt is at most {REFINE_PROMPT_MAX_CHARS} "
                                   "characters")
        refine = value
    elif isinstance(value, dict):
        levels = p.nested("refine")
        assert levels is not None
        oral, laugh, brk = (levels.integer(name, low, high, None)
                            for name, (low, high) in REFINE_LEVELS.items())
        refine = RefineLevels(oral=oral, laugh=laugh, break_=brk)
    else:
        raise p.fail("refine", "refine must be false, true, an object of levels "
                               "(oral, laugh, break) or a prompt string")
    if refine is not None and refine is not False and not offered:
        raise p.fail("refine", REFINE_UNAVAILABLE, ErrorCode.UNSUPPORTED)
    return refine


def _reference(p: FieldReader) -> str | None:
    value: str | None = p.string("reference", None)
    if value is not None and value not in REFERENCES:
        # Outside the protocol's own choices: bad_message, not unsupported.
        raise p.fail("reference", f"reference must be one of: {', '.join(REFERENCES)}")
    return value

