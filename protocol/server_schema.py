"""JSON Schema (draft 2020-12) of the server's text messages.

``server_schema()`` states what ``decode_server`` reads: ``hello``,
``started``, ``segment``, ``done``, ``cancelled`` and ``error``, with the
v1 additions (``error.retry_after_ms``, ``started.pre_skip``,
``hello.limits.idle_timeout_s``, ``words``, ``flushed``, ``pong``,
``segment.spoken``, ``done.unspoken``). Clients in
other languages can check what they receive against it. Extra fields are
allowed: a newer server may add some, and a client ignores them.
``server_messages.schema.json`` next to this file is ``server_schema()``;
regenerate it with ``python -m protocol.server_schema``.

"integer" means a number written without fraction, as in the client schema.
"""

from __future__ import annotations

import sys
from importlib import resources
from typing import Any

from protocol.messages import ID_MAX_CHARS, RETRY_AFTER_MS_MAX, SAMPLE_RATE_MAX, U32_MAX
from protocol.schema import render

SCHEMA_FILE = "server_messages.schema.json"

_NUMBER_MS = {"type": "number", "minimum": 0}


def _integer(low: int, high: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": low, "maximum": high}


def _id() -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": ID_MAX_CHARS}


def _message(kind: str, properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    required = ["type", *(name for name in properties if name not in optional)]
    return {
        "type": "object",
        "required": required,
        "properties": {"type": {"const": kind}, **properties},
    }


def server_schema() -> dict[str, Any]:
    """The schema every server text message satisfies."""
    strings = {"type": "array", "items": {"type": "string"}}
    hello = _message("hello", {
        "protocol": _integer(0, U32_MAX),
        "sample_rate": _integer(1, SAMPLE_RATE_MAX),
        "formats": strings,
        "sample_rates": {"type": "array", "items": _integer(1, SAMPLE_RATE_MAX)},
        "voices": strings,
        "limits": {"type": "object", "required": ["max_text_chars", "max_active", "max_message_bytes"],
                   "properties": {**{name: {"type": "integer", "minimum": 0} for name in
                                     ("max_text_chars", "max_active", "max_message_bytes")},
                                  "idle_timeout_s": {**_NUMBER_MS, "description": (
                                      "v1 addition: an idle connection is closed after this "
                                      "many seconds; 0: never")}}},
        "model": {"type": "object", "required": ["name", "weights", "device"],
                  "properties": {name: {"type": "string"} for name in ("name", "weights", "device")}},
    })
    started = _message("started", {
        "id": _id(), "stream": _integer(0, U32_MAX), "lane": {"type": "string"},
        "format": {"type": "string"}, "sample_rate": _integer(1, SAMPLE_RATE_MAX),
        "pre_skip": _integer(0, U32_MAX),
    }, optional=("pre_skip",))
    segment = _message("segment", {
        "id": _id(), "index": _integer(0, 0xFFFF), "text": {"type": "string"},
        "offset_ms": _NUMBER_MS, "audio_ms": _NUMBER_MS,
        "spoken": {"type": "string",
                   "description": "the text as the model read it (after normalization); "
                                  "text stays the client's original"},
    }, optional=("spoken",))
    timing = {
        "type": "object",
        "required": ["queued_ms", "first_audio_ms", "total_ms", "rtf"],
        "properties": {"queued_ms": _NUMBER_MS, "first_audio_ms": {"type": ["number", "null"]},
                       "total_ms": _NUMBER_MS, "rtf": {"type": ["number", "null"]}},
    }
    done = _message("done", {
        "id": _id(), "audio_ms": _NUMBER_MS, "segments": _integer(0, U32_MAX), "timing": timing,
        "deadline_met": {"type": "boolean"},
        "unspoken": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                     "description": "sentences that normalized to nothing and were not "
                                    "spoken; present only when non-empty"},
    }, optional=("deadline_met", "unspoken"))
    cancelled = _message("cancelled", {"id": _id()})
    error = _message("error", {
        "id": {"type": ["string", "null"]},
        "code": {"type": "string"},
        "message": {"type": "string"},
        "field": {"type": "string"},
        "retry_after_ms": {**_integer(0, RETRY_AFTER_MS_MAX),
                           "description": "only on refusals caused by load (overloaded, "
                                          "too_many_active, rate limits): the earliest time "
                                          "the same request is worth retrying"},
    }, optional=("field", "retry_after_ms"))
    word = {"type": "object", "required": ["word", "start_ms", "end_ms"],
            "properties": {"word": {"type": "string"}, "start_ms": _NUMBER_MS,
                           "end_ms": _NUMBER_MS, "original": {"type": "string"}}}
    begun = {"type": "object", "required": ["word", "start_ms"],
             "properties": {"word": {"type": "string"}, "start_ms": _NUMBER_MS,
                            "original": {"type": "string"}}}
    words = _message("words", {
        "id": _id(), "segment": _integer(0, 0xFFFF),
        "words": {"type": "array", "items": word}, "method": {"type": "string"},
        "pending": {"type": "array", "items": begun,
                    "description": "token chunking: the words after these that have begun "
                                   "in the audio that follows, end not known yet; each comes "
                                   "again in a later words list with the same start_ms"},
    }, optional=("pending",))
    flushed = _message("flushed", {"id": _id(), "flush_id": _id()})
    pong = _message("pong", {"data": {"type": "string"}}, optional=("data",))
    defs = {"hello": hello, "started": started, "segment": segment, "done": done,
            "cancelled": cancelled, "error": error, "words": words, "flushed": flushed,
            "pong": pong}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:chattts-realtime:protocol:1:server-message",
        "title": "ChatTTS realtime protocol v1: a server text message",
        "description": ("One JSON text frame from server to client. Extra fields may appear "
                        "(a newer server); clients ignore them. 'integer' means a number "
                        "written without fraction or exponent."),
        "oneOf": [{"$ref": f"#/$defs/{name}"} for name in defs],
        "$defs": defs,
    }


def load_server_schema() -> dict[str, Any]:
    """The published schema file (``server_schema()``)."""
    import json

    text = resources.files("protocol").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    result: dict[str, Any] = json.loads(text)
    return result


if __name__ == "__main__":
    target = resources.files("protocol").joinpath(SCHEMA_FILE)
    with open(str(target), "w", encoding="utf-8") as out:
        out.write(render(server_schema()))
    sys.stdout.write(f"wrote {target}\n")
