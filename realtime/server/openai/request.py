"""The body of ``POST /v1/audio/speech``, read as OpenAI's API reference defines it.

``parse_request(body, offer)`` returns a ``SpeechRequest`` or raises
``ApiError`` (400). What is supported:

- ``model`` (required string): any name; the server has one model, so
  ``tts-1``, ``gpt-4o-mini-tts`` and ``chattts`` all mean ChatTTS;
- ``input`` (required string, not blank, at most ``max_text_chars``);
- ``voice`` (required): a name from ``/v1/voices`` (OpenAI's own names, alloy
  to cedar, are among them: ``realtime/engine/text/voice_table.py``), ``seed:<n>``
  or an encoded ChatTTS speaker, as a string or OpenAI's ``{"id": ...}``
  object; another name is ``unsupported``;
- ``response_format``: ``mp3`` (OpenAI's default), ``opus`` (Ogg), ``aac``
  (ADTS), ``flac``, ``wav``, ``pcm`` (24 kHz s16le); an encoder that is
  missing here is ``unsupported``;
- ``speed``: OpenAI's range is 0.25-4.0 (outside it: ``bad_message``), a
  tempo multiplier; it becomes the nearest ChatTTS level ``[speed_N]``
  (``realtime.speech.speed.level_for_tempo``: monotonic, 1.0 -> 5);
- ``stream_format``: ``audio`` (default; chunked bytes) or ``sse``;
- ``instructions``: a speed it names (``[speed_N]`` or a speed word, see
  ``instructions.py``) applies when ``speed`` is absent, and the refine
  levels it names (``[oral_N]``, ``[laugh_N]``, ``[break_N]``) when
  ``refine`` is absent and the server runs the pass; the rest is ignored;
- extensions: ``lane`` (``interactive`` default, or ``background``),
  ``chunking`` (``sentence`` default, or ``token``) and ``seed``,
  ``temperature``, ``top_p``, ``top_k``, ``refine``, each validated as the
  WebSocket's ``speak.params`` member of that name (``refine`` other than
  ``false`` is ``unsupported`` on a server without the pass, as there).
Unknown fields are ignored, as OpenAI's clients may send newer ones.

Thread: pure functions.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from protocol import (
    CHUNKINGS,
    DEFAULT_CHUNKING,
    DEFAULT_LANE,
    LANES,
    ErrorCode,
    Params,
    ProtocolError,
)
from protocol.codec import load_object
from protocol.fields import FieldReader
from protocol.params_reader import read_params
from protocol.voices import voice_kind
from realtime.server.http.api_error import ApiError
from realtime.server.openai.instructions import refine_from_instructions, speed_from_instructions
from realtime.speech.speed import level_for_tempo

RESPONSE_FORMATS = ("mp3", "opus", "aac", "flac", "wav", "pcm")
DEFAULT_RESPONSE_FORMAT = "mp3"
STREAM_FORMATS = ("audio", "sse")
SPEED_MIN, SPEED_MAX = 0.25, 4.0
DEFAULT_SPEED = 1.0
# speak.params members accepted at the top level of the body, as OpenAI's
# clients pass extra fields (``extra_body``).
PARAM_EXTENSIONS = ("seed", "temperature", "top_p", "top_k", "refine")


@dataclass(frozen=True)
class SpeechRequest:
    model: str
    input: str
    voice: str
    response_format: str = DEFAULT_RESPONSE_FORMAT
    stream_format: str = "audio"
    speed: float = DEFAULT_SPEED
    lane: str = DEFAULT_LANE
    chunking: str = DEFAULT_CHUNKING
    params: Params = Params()  # speed as a ChatTTS level, and the extensions


def parse_request(body: bytes, voices: Collection[str], max_text_chars: int,
                  formats: Collection[str] = RESPONSE_FORMATS,
                  refine_offered: bool = True) -> SpeechRequest:
    """Validate one request body. ``voices`` are the offered voice names,
    ``formats`` the response formats this server can encode,
    ``refine_offered`` whether it runs the refine pass. Raises ``ApiError``."""
    try:
        return _parse(body, voices, max_text_chars, formats, refine_offered)
    except ProtocolError as exc:
        raise ApiError.from_wire(exc.code.value, exc.message, exc.field) from None


def _parse(body: bytes, voices: Collection[str], max_text_chars: int,
           formats: Collection[str], refine_offered: bool) -> SpeechRequest:
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
    instructions = r.string("instructions", None)
    response_format = r.choice("response_format", RESPONSE_FORMATS, DEFAULT_RESPONSE_FORMAT)
    if response_format not in formats:
        raise r.fail("response_format", f"{response_format} has no encoder on this server "
                     f"(available: {', '.join(formats)})", ErrorCode.UNSUPPORTED)
    speed: float | None = r.number("speed", SPEED_MIN, SPEED_MAX, default=None)
    level = speed_from_instructions(instructions) if speed is None else level_for_tempo(speed)
    stream_format = r.choice("stream_format", STREAM_FORMATS, "audio")
    lane = r.choice("lane", LANES, DEFAULT_LANE)
    chunking = r.choice("chunking", CHUNKINGS, DEFAULT_CHUNKING)
    extensions = FieldReader({k: r.obj[k] for k in PARAM_EXTENSIONS if k in r.obj})
    params = replace(read_params(extensions, refine_offered), speed=level)
    if params.refine is None and refine_offered:
        params = replace(params, refine=refine_from_instructions(instructions))
    return SpeechRequest(
        model=model, input=text, voice=voice, response_format=response_format,
        stream_format=stream_format, speed=DEFAULT_SPEED if speed is None else speed,
        lane=lane, chunking=chunking, params=params,
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
