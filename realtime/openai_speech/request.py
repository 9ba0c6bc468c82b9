"""The body of ``POST /v1/audio/speech``, read as OpenAI's API reference defines it.

``parse_request(body, offer)`` returns a ``SpeechRequest`` or raises
``ApiError`` (400). What is supported:

- ``model`` (required string): any name; the server has one model, so
  ``tts-1``, ``gpt-4o-mini-tts`` and ``chattts`` all mean ChatTTS;
- ``input`` (required string, not blank, at most ``max_text_chars``);
- ``voice`` (required): a name from ``/v1/voices``, ``seed:<n>`` or an
  encoded ChatTTS speaker, as a string or OpenAI's ``{"id": ...}`` object;
  OpenAI's own voice names are not ours and are ``unsupported``;
- ``response_format``: ``mp3`` (OpenAI's default), ``opus`` (Ogg), ``aac``
  (ADTS), ``flac``, ``wav``, ``pcm`` (24 kHz s16le); an encoder that is
  missing here is ``unsupported``;
- ``speed``: OpenAI's range is 0.25-4.0 (outside it: ``bad_message``);
  ChatTTS speaks at 1.0 only, so another value is ``unsupported``;
- ``stream_format``: ``audio`` (default; chunked bytes) or ``sse``;
- ``instructions``: accepted and ignored (ChatTTS takes no style prompt);
- extensions: ``lane`` (``interactive`` default, or ``background``) and
  ``chunking`` (``sentence`` default, or ``token``), as on the WebSocket.
Unknown fields are ignored, as OpenAI's clients may send newer ones.

Thread: pure functions.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from protocol import CHUNKINGS, DEFAULT_CHUNKING, DEFAULT_LANE, LANES, ErrorCode, ProtocolError
from protocol.codec import load_object
from protocol.fields import FieldReader
from protocol.voices import voice_kind
from realtime.api_error import ApiError

RESPONSE_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
DEFAULT_RESPONSE_FORMAT = "mp3"
STREAM_FORMATS = ("audio", "sse")
SPEED_MIN, SPEED_MAX = 0.25, 4.0
SUPPORTED_SPEED = 1.0


@dataclass(frozen=True)
class SpeechRequest:
    model: str
    input: str
    voice: str
    response_format: str = DEFAULT_RESPONSE_FORMAT
    stream_format: str = "audio"
    speed: float = SUPPORTED_SPEED
    lane: str = DEFAULT_LANE
    chunking: str = DEFAULT_CHUNKING


def parse_request(body: bytes, voices: Collection[str], max_text_chars: int,
                  formats: Collection[str] = RESPONSE_FORMATS) -> SpeechRequest:
    """Validate one request body. ``voices`` are the offered voice names,
    ``formats`` the response formats this server can encode. Raises ``ApiError``."""
    try:
        return _parse(body, voices, max_text_chars, formats)
    except ProtocolError as exc:
        raise ApiError.from_wire(exc.code.value, exc.message, exc.field) from None


def _parse(body: bytes, voices: Collection[str], max_text_chars: int,
           formats: Collection[str]) -> SpeechRequest:
    r = FieldReader(load_object(body))
    model = r.string("model")
    if not model.strip():
        raise r.fail("model", "model must not be empty")
    text = r.string("input")
    if not text.strip():
        raise r.fail("input", "input must not be empty")
    if len(text) > max_text_chars:
        raise r.fail("input", f"input has {len(text)} characters; the limit is {max_text_chars}",
                     ErrorCode.TEXT_TOO_LONG)
    voice = _voice(r, voices)
    r.string("instructions", None)
    response_format = r.choice("response_format", RESPONSE_FORMATS, DEFAULT_RESPONSE_FORMAT)
    if response_format not in formats:
        raise r.fail("response_format", f"{response_format} has no encoder on this server "
                     f"(available: {', '.join(formats)})", ErrorCode.UNSUPPORTED)
    speed = r.number("speed", SPEED_MIN, SPEED_MAX, default=SUPPORTED_SPEED)
    if abs(speed - SUPPORTED_SPEED) > 1e-9:
        raise r.fail("speed", "ChatTTS speaks at speed 1.0 only", ErrorCode.UNSUPPORTED)
    return SpeechRequest(
        model=model, input=text, voice=voice, response_format=response_format,
        stream_format=r.choice("stream_format", STREAM_FORMATS, "audio"), speed=speed,
        lane=r.choice("lane", LANES, DEFAULT_LANE),
        chunking=r.choice("chunking", CHUNKINGS, DEFAULT_CHUNKING),
    )


def _voice(r: FieldReader, voices: Collection[str]) -> str:
    nested = r.obj.get("voice")
    if isinstance(nested, dict):  # OpenAI's custom-voice object: {"id": "..."}
        voice = FieldReader(nested, prefix="voice.").string("id")
    else:
        voice = r.string("voice")
    if voice_kind(voice, voices) is None:
        offered = ", ".join(voices) or "none"
        raise r.fail("voice", f"voice {voice[:64]!r} is not offered (named voices: {offered}; "
                     "or seed:<n>, or an encoded ChatTTS speaker)", ErrorCode.UNSUPPORTED)
    return voice
