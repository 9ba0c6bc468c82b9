"""Reading the server's text frames (for clients), sans I/O.

``decode_server`` turns one server text frame into its message. Fields a
newer server adds are ignored; a message type this version lacks is
``unknown_type`` (a client may skip it). The client side of the protocol
(``decode_client``, ``encode``) is ``protocol.codec``.

Thread: pure functions, safe from any thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from protocol.codec import Frame, dispatch
from protocol.fields import FieldReader
from protocol.messages import (
    RETRY_AFTER_MS_MAX,
    SAMPLE_RATE_MAX,
    U32_MAX,
    Cancelled,
    Done,
    Error,
    Hello,
    Limits,
    ModelInfo,
    Segment,
    ServerMessage,
    Started,
    Timing,
)
from protocol.words import Flushed, Pong, Words, WordStart, WordTiming


def decode_server(frame: Frame) -> ServerMessage:
    """Read one server text frame into its message (for clients).

    Fields a newer server adds are ignored. Raises ``ProtocolError``: bad_json
    (not a JSON object), bad_message (a missing or ill-typed field, ``field``
    names it), unknown_type (a message type this version does not know; a
    client may choose to skip it).
    """
    reader, parse = dispatch(frame, _SERVER_PARSERS, "server message type")
    return parse(reader)


def _required(r: FieldReader, name: str) -> FieldReader:
    nested = r.nested(name)
    if nested is None:
        raise r.fail(name, f"missing field {r.prefix + name!r}")
    return nested


def _hello(r: FieldReader) -> Hello:
    limits = _required(r, "limits")
    model = _required(r, "model")
    return Hello(
        protocol=r.integer("protocol", 0, U32_MAX),
        sample_rate=r.integer("sample_rate", 1, SAMPLE_RATE_MAX),
        formats=r.string_list("formats"),
        sample_rates=r.integer_list("sample_rates"),
        voices=r.string_list("voices"),
        limits=Limits(
            max_text_chars=limits.integer("max_text_chars", 0, 2**63 - 1),
            max_active=limits.integer("max_active", 0, 2**63 - 1),
            max_message_bytes=limits.integer("max_message_bytes", 0, 2**63 - 1),
            idle_timeout_s=limits.number("idle_timeout_s", 0.0, math.inf, default=None),
        ),
        model=ModelInfo(
            name=model.string("name"),
            weights=model.string("weights"),
            device=model.string("device"),
        ),
    )


def _started(r: FieldReader) -> Started:
    return Started(
        id=r.string("id"),
        stream=r.integer("stream", 0, U32_MAX),
        lane=r.string("lane"),
        format=r.string("format"),
        sample_rate=r.integer("sample_rate", 1, SAMPLE_RATE_MAX),
        pre_skip=r.integer("pre_skip", 0, 0xFFFF, None),
    )


def _segment(r: FieldReader) -> Segment:
    return Segment(
        id=r.string("id"),
        index=r.integer("index", 0, 0xFFFF),
        text=r.string("text"),
        offset_ms=r.number("offset_ms", 0.0, math.inf),
        audio_ms=r.number("audio_ms", 0.0, math.inf),
        spoken=r.string("spoken", None),
    )


def _done(r: FieldReader) -> Done:
    timing = _required(r, "timing")
    return Done(
        id=r.string("id"),
        audio_ms=r.number("audio_ms", 0.0, math.inf),
        segments=r.integer("segments", 0, U32_MAX),
        timing=Timing(
            queued_ms=timing.number("queued_ms", 0.0, math.inf),
            first_audio_ms=timing.optional_number("first_audio_ms"),
            total_ms=timing.number("total_ms", 0.0, math.inf),
            rtf=timing.optional_number("rtf"),
        ),
        deadline_met=r.boolean("deadline_met", None),
        unspoken=r.string_list("unspoken", ()),
    )


def _cancelled(r: FieldReader) -> Cancelled:
    return Cancelled(id=r.string("id"))


def _error(r: FieldReader) -> Error:
    return Error(
        id=r.string("id", None),
        code=r.string("code"),
        message=r.string("message"),
        field=r.string("field", None),
        retry_after_ms=r.integer("retry_after_ms", 0, RETRY_AFTER_MS_MAX, None),
    )


def _word_readers(r: FieldReader, name: str) -> list[FieldReader]:
    """A reader of each object in list field ``name`` (absent: none)."""
    items = r.obj.get(name)
    if items is None and name == "pending":
        return []
    if not isinstance(items, list):
        raise r.fail(name, f"{name} must be a list of objects")
    if not all(isinstance(item, dict) for item in items):
        n = next(n for n, item in enumerate(items) if not isinstance(item, dict))
        raise r.fail(f"{name}.{n}", "each word must be an object")
    return [FieldReader(item, r.msg_id, f"{name}.{n}.") for n, item in enumerate(items)]


def _words(r: FieldReader) -> Words:
    words = []
    for w in _word_readers(r, "words"):
        start = w.number("start_ms", 0.0, math.inf)
        end = w.number("end_ms", 0.0, math.inf)
        if end < start:
            raise w.fail("end_ms", "a word cannot end before it starts")
        words.append(WordTiming(w.string("word"), start, end, w.string("original", None)))
    pending = tuple(WordStart(w.string("word"), w.number("start_ms", 0.0, math.inf),
                              w.string("original", None)) for w in _word_readers(r, "pending"))
    return Words(id=r.string("id"), segment=r.integer("segment", 0, 0xFFFF), words=tuple(words),
                 method=r.string("method"), pending=pending)


def _flushed(r: FieldReader) -> Flushed:
    return Flushed(id=r.string("id"), flush_id=r.string("flush_id"))


def _pong(r: FieldReader) -> Pong:
    return Pong(r.string("data", None))


_SERVER_PARSERS: dict[str, Callable[[FieldReader], ServerMessage]] = {
    Hello.TYPE: _hello,
    Started.TYPE: _started,
    Segment.TYPE: _segment,
    Done.TYPE: _done,
    Cancelled.TYPE: _cancelled,
    Error.TYPE: _error,
    Words.TYPE: _words,
    Flushed.TYPE: _flushed,
    Pong.TYPE: _pong,
}
