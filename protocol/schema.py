"""JSON Schema (draft 2020-12) of the client messages, for one offer.

``client_schema(offer)`` states in JSON Schema exactly what
``decode_client(frame, offer)`` accepts, so clients in other languages can
check their messages before sending. ``client_messages.schema.json`` next to
this file is ``client_schema(DEFAULT_OFFER)``; regenerate it with
``python -m protocol.schema``.

Two notes for validator authors:
- ``"integer"`` here means a number written without fraction or exponent
  (the server refuses ``5.0`` where an integer is due); JSON Schema itself
  counts ``5.0`` as an integer, so a generic validator is slightly more lenient.
- Patterns are anchored with ``^...$`` and strings holding a line feed are
  excluded separately, so ECMA-262 and Python regex engines agree.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from typing import Any

from protocol.codec import DEFAULT_OFFER, Offer
from protocol.messages import (
    DEADLINE_MS_MAX,
    FRAME_MS_MAX,
    FRAME_MS_MIN,
    ID_MAX_CHARS,
    SAMPLE_RATE_MAX,
)
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
)
from protocol.voices import EMBEDDING_PATTERN, SAMPLE_PATTERN
from protocol.words import PING_DATA_MAX_CHARS

SCHEMA_FILE = "client_messages.schema.json"

# "seed:" then a decimal 0..SEED_MAX (4294967295) without sign or leading
# zeros; a test checks the pattern against SEED_MAX.
SEED_VOICE_PATTERN = (
    "^seed:(0|[1-9][0-9]{0,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}"
    "|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}"
    "|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5])$"
)

_NO_LINE_FEED = {"not": {"pattern": "\n"}}


def _nullable(*types: str) -> list[str]:
    return [*types, "null"]


def _choice(values: tuple[Any, ...]) -> dict[str, Any]:
    return {"enum": [*values, None]}


def _id() -> dict[str, Any]:
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": ID_MAX_CHARS,
        "not": {"pattern": "[^A-Za-z0-9._:-]"},
    }


def _text(offer: Offer) -> dict[str, Any]:
    return {"type": "string", "maxLength": offer.max_text_chars}


def _voice(offer: Offer) -> dict[str, Any]:
    kinds: list[dict[str, Any]] = [
        {"type": "null"},
        {"type": "string", "pattern": SEED_VOICE_PATTERN, **_NO_LINE_FEED},
        {"type": "string", "pattern": f"^{EMBEDDING_PATTERN}$", **_NO_LINE_FEED},
        {"type": "string", "pattern": f"^{SAMPLE_PATTERN}$"},
    ]
    if offer.voices:
        kinds.insert(1, {"enum": list(offer.voices)})
    return {"anyOf": kinds}


def _refine(offer: Offer) -> dict[str, Any]:
    if not offer.refine:
        return {"enum": [False, None]}
    levels = {name: {"type": _nullable("integer"), "minimum": low, "maximum": high}
              for name, (low, high) in REFINE_LEVELS.items()}
    return {"anyOf": [
        {"type": _nullable("boolean")},
        {"type": "string", "maxLength": REFINE_PROMPT_MAX_CHARS},
        {"type": "object", "properties": levels},
    ]}


def _params(offer: Offer) -> dict[str, Any]:
    return {
        "type": _nullable("object"),
        "properties": {
            "temperature": {"type": _nullable("number"), "exclusiveMinimum": 0,
                            "maximum": TEMPERATURE_MAX},
            "top_p": {"type": _nullable("number"), "exclusiveMinimum": 0, "maximum": TOP_P_MAX},
            "top_k": {"type": _nullable("integer"), "minimum": 1, "maximum": TOP_K_MAX},
            "repetition_penalty": {"type": _nullable("number"),
                                   "minimum": REPETITION_PENALTY_MIN,
                                   "maximum": REPETITION_PENALTY_MAX},
            "seed": {"type": _nullable("integer"), "minimum": 0, "maximum": SEED_MAX},
            "speed": {"type": _nullable("integer"), "minimum": SPEED_MIN, "maximum": SPEED_MAX},
            "refine": _refine(offer),
            "reference": _choice(REFERENCES),
        },
    }


def _message(kind: str, required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["type", *required],
        "properties": {"type": {"const": kind}, **properties},
    }


def client_schema(offer: Offer = DEFAULT_OFFER) -> dict[str, Any]:
    """The schema every client message must satisfy for ``offer``.

    Unknown extra fields are allowed (the server ignores them); ``null`` is
    allowed wherever a field is optional, meaning "absent".
    """
    speak = _message(
        "speak",
        ["id", "text"],
        {
            "id": _id(),
            "text": _text(offer),
            "final": {"type": _nullable("boolean")},
            "lane": _choice(offer.lanes),
            "deadline_ms": {"type": _nullable("integer"), "minimum": 1,
                            "maximum": DEADLINE_MS_MAX},
            "voice": _voice(offer),
            "format": _choice(offer.formats),
            "sample_rate": {
                "type": _nullable("integer"),
                **_choice(tuple(r for r in offer.sample_rates if 1 <= r <= SAMPLE_RATE_MAX)),
            },
            "frame_ms": {"type": _nullable("integer"), "minimum": FRAME_MS_MIN,
                         "maximum": FRAME_MS_MAX},
            "chunking": _choice(offer.chunkings),
            "params": _params(offer),
            "timestamps": {"type": _nullable("boolean"),
                           "description": "v1 addition: send words messages (word timings)"},
        },
    )
    append = _message(
        "append",
        ["id", "text"],
        {"id": _id(), "text": _text(offer), "final": {"type": _nullable("boolean")}},
    )
    flush = _message("flush", ["id"], {
        "id": _id(),
        "flush_id": {"anyOf": [{"type": "null"}, _id()],
                     "description": "v1 addition: answered by flushed with this flush_id"},
    })
    cancel = _message("cancel", ["id"], {"id": _id()})
    # A ping names no utterance: any id it carries is ignored like any extra field.
    ping = _message("ping", [], {"data": {"type": _nullable("string"),
                                          "maxLength": PING_DATA_MAX_CHARS}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:chattts-realtime:protocol:1:client-message",
        "title": "ChatTTS realtime protocol v1: a client message",
        "description": (
            "One JSON text frame from client to server. Written for the offer: "
            f"formats {list(offer.formats)}, sample_rates {list(offer.sample_rates)}, "
            f"named voices {list(offer.voices)}, max_text_chars {offer.max_text_chars}, "
            f"refine pass {'offered' if offer.refine else 'not offered'}; "
            "a server's hello message states its own (a server without the refine pass "
            "answers params.refine other than false with unsupported). 'integer' means a number "
            "written without fraction or exponent."
        ),
        "oneOf": [
            {"$ref": "#/$defs/speak"},
            {"$ref": "#/$defs/append"},
            {"$ref": "#/$defs/flush"},
            {"$ref": "#/$defs/cancel"},
            {"$ref": "#/$defs/ping"},
        ],
        "$defs": {"speak": speak, "append": append, "flush": flush, "cancel": cancel,
                  "ping": ping},
    }


def load_client_schema() -> dict[str, Any]:
    """The published schema file (``client_schema(DEFAULT_OFFER)``)."""
    text = resources.files("protocol").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def render(schema: dict[str, Any]) -> str:
    """The schema as the file stores it (stable key order, ASCII escapes)."""
    return json.dumps(schema, indent=2, ensure_ascii=True) + "\n"


if __name__ == "__main__":
    target = resources.files("protocol").joinpath(SCHEMA_FILE)
    with open(str(target), "w", encoding="utf-8") as out:
        out.write(render(client_schema()))
    sys.stdout.write(f"wrote {target}\n")
