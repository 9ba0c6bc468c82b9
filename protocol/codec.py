"""Bytes in, messages out, and back: the JSON side of protocol v1, sans I/O.

``decode_client`` turns one client text frame into a validated client message
or raises ``ProtocolError``; ``encode`` writes any message as the JSON bytes of
a text frame; ``decode_server`` reads a server text frame (for clients).
Nothing here touches a socket: the server and the clients move the bytes.
(``decode_server`` lives in ``protocol.server_codec``.)

Validation order of a client message, which decides the one error reported
when several fields are wrong: the frame must be JSON (``bad_json``), an object
(``bad_json``), with a string ``type`` (``bad_message``) naming a client
message (``unknown_type``); then ``id``, then the fields in the order of the
protocol table: ``text``, ``final``, ``lane``, ``deadline_ms``, ``voice``,
``format``, ``sample_rate``, ``frame_ms``, ``chunking``, ``params`` (and in
``params``: ``temperature``, ``top_p``, ``top_k``, ``repetition_penalty``,
``seed``, ``speed``, ``refine``, ``reference``), then ``timestamps``;
``flush`` checks ``flush_id``. A ``ping`` carries no id: its only field is
``data``, and its errors have id null.

Thread: pure functions, safe from any thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson

from protocol.errors import ErrorCode, ProtocolError
from protocol.fields import FieldReader
from protocol.messages import (
    ALL_FORMATS,
    CHUNKINGS,
    DEADLINE_MS_MAX,
    DEFAULT_CHUNKING,
    DEFAULT_FORMAT,
    DEFAULT_FRAME_MS,
    DEFAULT_LANE,
    DEFAULT_SAMPLE_RATE,
    FORMATS,
    FRAME_MS_MAX,
    FRAME_MS_MIN,
    LANES,
    OPUS_FORMAT,
    OPUS_SAMPLE_RATES,
    SAMPLE_RATE_MAX,
    Append,
    Cancel,
    ClientMessage,
    Flush,
    Hello,
    ServerMessage,
    Speak,
    is_valid_id,
)
from protocol.params_reader import parse_params
from protocol.voices import voice_kind
from protocol.words import PING_DATA_MAX_CHARS, Ping, TimedWords

Frame = str | bytes | bytearray | memoryview
P = TypeVar("P")  # a parser


@dataclass(frozen=True)
class Offer:
    """What one server offers; the offer-dependent half of validation.

    A ``speak`` naming a format, sample rate, lane, chunking or voice outside
    these is ``unsupported``, and so is ``params.refine`` (anything but
    ``false``) when ``refine`` is False; a ``speak`` or ``append`` whose own text is longer
    than ``max_text_chars`` characters (Unicode code points) is
    ``text_too_long`` (the session also bounds the running total).
    """

    formats: tuple[str, ...]
    sample_rates: tuple[int, ...]
    voices: tuple[str, ...]
    max_text_chars: int
    lanes: tuple[str, ...] = LANES
    chunkings: tuple[str, ...] = CHUNKINGS
    refine: bool = False

    def __post_init__(self) -> None:
        # Accept any iterables from callers; keep the value hashable.
        for name in ("formats", "sample_rates", "voices", "lanes", "chunkings"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @classmethod
    def from_hello(cls, hello: Hello) -> Offer:
        """The offer a server announced, for validating messages client-side.
        ``hello`` does not announce a refine pass, so none is assumed."""
        return cls(
            formats=hello.formats,
            sample_rates=hello.sample_rates,
            voices=hello.voices,
            max_text_chars=hello.limits.max_text_chars,
        )


DEFAULT_MAX_TEXT_CHARS = 5000
DEFAULT_SAMPLE_RATES: tuple[int, ...] = (8000, 16000, 22050, 24000, 44100, 48000)
# The offer the published JSON Schema is written for: every format, common
# sample rates, no named voices (a server lists its own in hello), and every
# form of params.refine the protocol defines.
DEFAULT_OFFER = Offer(
    formats=FORMATS,
    sample_rates=DEFAULT_SAMPLE_RATES,
    voices=(),
    max_text_chars=DEFAULT_MAX_TEXT_CHARS,
    refine=True,
)


# --- JSON text -> object ----------------------------------------------------


def load_object(frame: Frame) -> dict[str, Any]:
    """Parse one text frame (str, or its UTF-8 bytes) into a JSON object.

    Raises ``ProtocolError(bad_json)`` for invalid UTF-8 or JSON, for a number
    that overflows a double, and for JSON that is not an object.
    """
    if not isinstance(frame, (str, bytes, bytearray, memoryview)):
        raise TypeError(f"a frame is str or bytes, not {type(frame).__name__}")
    try:
        value = orjson.loads(frame)
    except (orjson.JSONDecodeError, UnicodeError) as exc:
        raise ProtocolError(ErrorCode.BAD_JSON, f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ProtocolError(ErrorCode.BAD_JSON, "a message must be a JSON object")
    return value


def dispatch(frame: Frame, parsers: Mapping[str, P], what: str) -> tuple[FieldReader, P]:
    """The frame's JSON object as a ``FieldReader`` (carrying its id when that
    id is valid, for error messages) and the parser its ``type`` names."""
    obj = load_object(frame)
    raw_id = obj.get("id")
    reader = FieldReader(obj, raw_id if is_valid_id(raw_id) else None)
    kind = reader.string("type")
    parse = parsers.get(kind)
    if parse is None:
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, f"unknown {what} {kind!r}",
                            field="type", id=reader.msg_id)
    return reader, parse


# --- client messages --------------------------------------------------------


def decode_client(frame: Frame, offer: Offer | None = None) -> ClientMessage:
    """Validate one client text frame and return its message.

    ``frame`` is the text of a WebSocket text frame (str, or its UTF-8 bytes;
    a binary frame is the caller's ``binary_not_allowed``). With ``offer``
    None, only the protocol's own rules apply: any format, lane and chunking
    the protocol defines, any sample rate in range, any voice string, no text
    limit, every form of ``params.refine``.

    Raises ``ProtocolError`` only (codes bad_json, bad_message, unknown_type,
    unsupported, text_too_long), with ``field`` set for field errors and ``id``
    set when the message carried a valid id.
    """
    reader, parse = dispatch(frame, _CLIENT_PARSERS, "message type")
    if parse is _ping:  # connection-level: no utterance id
        return _ping(reader, "", offer)
    msg_id = reader.string("id")
    if reader.msg_id is None:
        raise reader.fail("id", "id must be 1-64 characters of A-Za-z0-9 . _ : -")
    return parse(reader, msg_id, offer)


def _text(r: FieldReader, offer: Offer | None) -> str:
    text = r.string("text")
    if offer is not None and len(text) > offer.max_text_chars:
        raise r.fail(
            "text",
            f"text has {len(text)} characters; the limit is {offer.max_text_chars}",
            ErrorCode.TEXT_TOO_LONG,
        )
    return text


def _voice(r: FieldReader, offer: Offer | None) -> str | None:
    voice = r.string("voice", None)
    if voice is not None and voice_kind(voice, offer.voices if offer else None) is None:
        raise r.fail(
            "voice",
            "voice must be an offered name, 'seed:<n>', an encoded speaker embedding or a "
            "sample voice ('sample:...', from POST /v1/voices)",
            ErrorCode.UNSUPPORTED,
        )
    return voice


def _sample_rate(r: FieldReader, offer: Offer | None) -> int:
    rate = r.integer("sample_rate", 1, SAMPLE_RATE_MAX, DEFAULT_SAMPLE_RATE)
    if offer is not None and rate not in offer.sample_rates:
        offered = ", ".join(map(str, offer.sample_rates))
        raise r.fail("sample_rate", f"sample_rate {rate} is not offered (one of: {offered})",
                     ErrorCode.UNSUPPORTED)
    return rate


def _speak(r: FieldReader, msg_id: str, offer: Offer | None) -> Speak:
    text = _text(r, offer)
    final = r.boolean("final", True)
    lane = r.choice("lane", offer.lanes if offer else LANES, DEFAULT_LANE)
    deadline_ms = r.integer("deadline_ms", 1, DEADLINE_MS_MAX, None)
    voice = _voice(r, offer)
    fmt = r.choice("format", offer.formats if offer else ALL_FORMATS, DEFAULT_FORMAT)
    sample_rate = _sample_rate(r, offer)
    if fmt == OPUS_FORMAT and sample_rate not in OPUS_SAMPLE_RATES:
        rates = ", ".join(map(str, OPUS_SAMPLE_RATES))
        raise r.fail("sample_rate", f"opus is offered at {rates} Hz, not {sample_rate}",
                     ErrorCode.UNSUPPORTED)
    frame_ms = r.integer("frame_ms", FRAME_MS_MIN, FRAME_MS_MAX, DEFAULT_FRAME_MS)
    chunking = r.choice("chunking", offer.chunkings if offer else CHUNKINGS, DEFAULT_CHUNKING)
    params = parse_params(r, offer.refine if offer else True)
    timestamps = r.boolean("timestamps", False)
    return Speak(
        id=msg_id,
        text=text,
        final=final,
        lane=lane,
        # A deadline is validated on every lane but only means something on
        # the background lane; interactive work runs as soon as possible.
        deadline_ms=deadline_ms if lane == "background" else None,
        voice=voice,
        format=fmt,
        sample_rate=sample_rate,
        frame_ms=frame_ms,
        chunking=chunking,
        params=params,
        timestamps=timestamps,
    )


def _append(r: FieldReader, msg_id: str, offer: Offer | None) -> Append:
    return Append(id=msg_id, text=_text(r, offer), final=r.boolean("final", False))


def _flush(r: FieldReader, msg_id: str, offer: Offer | None) -> Flush:
    flush_id = r.string("flush_id", None)
    if flush_id is not None and not is_valid_id(flush_id):
        raise r.fail("flush_id", "flush_id must be 1-64 characters of A-Za-z0-9 . _ : -")
    return Flush(id=msg_id, flush_id=flush_id)


def _cancel(r: FieldReader, msg_id: str, offer: Offer | None) -> Cancel:
    return Cancel(id=msg_id)


def _ping(r: FieldReader, msg_id: str, offer: Offer | None) -> Ping:
    r.msg_id = None  # a ping names no utterance: its errors are connection-level
    data = r.string("data", None)
    if data is not None and len(data) > PING_DATA_MAX_CHARS:
        raise r.fail("data", f"data must be a string of at most {PING_DATA_MAX_CHARS} characters")
    return Ping(data)


_CLIENT_PARSERS: dict[str, Callable[[FieldReader, str, Offer | None], ClientMessage]] = {
    Speak.TYPE: _speak,
    Append.TYPE: _append,
    Flush.TYPE: _flush,
    Cancel.TYPE: _cancel,
    Ping.TYPE: _ping,
}


# --- any message -> bytes ---------------------------------------------------


def encode(msg: ClientMessage | ServerMessage) -> bytes:
    """The JSON text (UTF-8 bytes) of one message, for a WebSocket text frame.

    Optional fields that are None are left out; orjson writes a non-finite
    float as null, so callers keep numbers finite.
    """
    if isinstance(msg, TimedWords):  # the server's per-push message: written already
        return msg.data
    return orjson.dumps(msg.to_wire())
