"""Every JSON message of protocol v1 as a small frozen dataclass.

Client messages (``Speak``, ``Append``, ``Flush``, ``Cancel``) are built by
``protocol.codec.decode_client`` after validation; server messages (``Hello``,
``Started``, ``Segment``, ``Done``, ``Cancelled``, ``Error``) are built by the
server and written with ``protocol.codec.encode``. Each class knows its wire
``TYPE`` and how to write itself as a JSON-ready dict (``to_wire``); optional
fields that are None are left out of the JSON.

The constants below are the protocol's fixed ranges and choices; what a given
server offers (formats, sample rates, voices, limits) is ``protocol.codec.Offer``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from protocol.params import Params
from protocol.words import Flushed, Ping, Pong, TimedWords, Words

PROTOCOL_VERSION = 1
DEFAULT_SAMPLE_RATE = 24000

FORMATS: tuple[str, ...] = ("pcm_s16le", "pcm_f32le", "pcm_mulaw")
# v1 addition: Opus packets (see docs/protocol.md), offered only when a server
# lists it in hello.formats, at the rates Opus itself supports.
OPUS_FORMAT = "opus"
OPUS_SAMPLE_RATES: tuple[int, ...] = (8000, 12000, 16000, 24000, 48000)
OPUS_PACKET_MS = 20
ALL_FORMATS: tuple[str, ...] = (*FORMATS, OPUS_FORMAT)
LANES: tuple[str, ...] = ("interactive", "background")
CHUNKINGS: tuple[str, ...] = ("sentence", "token")

DEFAULT_FORMAT = "pcm_s16le"
DEFAULT_LANE = "interactive"
DEFAULT_CHUNKING = "sentence"
DEFAULT_FRAME_MS = 100
FRAME_MS_MIN = 10
FRAME_MS_MAX = 1000

# An id is 1-64 characters of A-Za-z0-9 . _ : -
ID_MAX_CHARS = 64
ID_PATTERN = r"[A-Za-z0-9._:-]{1,64}"
_ID_RE = re.compile(ID_PATTERN)

# Ranges the protocol document states (those of params: protocol.params), plus
# the ceilings it leaves open (an unsigned 32-bit value is the ceiling every
# client language can hold).
U32_MAX = 2**32 - 1
DEADLINE_MS_MAX = U32_MAX
RETRY_AFTER_MS_MAX = U32_MAX
SAMPLE_RATE_MAX = 384_000


def is_valid_id(value: object) -> bool:
    """True when ``value`` is a string usable as an utterance id."""
    return isinstance(value, str) and _ID_RE.fullmatch(value) is not None


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


# --- client -> server -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Speak:
    """Start an utterance. ``deadline_ms`` is None unless ``lane`` is background
    (the decoder drops it on the interactive lane, which has no deadline)."""

    TYPE: ClassVar[str] = "speak"

    id: str
    text: str
    final: bool = True
    lane: str = DEFAULT_LANE
    deadline_ms: int | None = None
    voice: str | None = None
    format: str = DEFAULT_FORMAT
    sample_rate: int = DEFAULT_SAMPLE_RATE
    frame_ms: int = DEFAULT_FRAME_MS
    chunking: str = DEFAULT_CHUNKING
    params: Params = Params()
    timestamps: bool = False  # v1 addition: send ``words`` for each segment

    def to_wire(self) -> dict[str, Any]:
        return _without_none(
            {
                "type": self.TYPE,
                "id": self.id,
                "text": self.text,
                "final": self.final,
                "lane": self.lane,
                "deadline_ms": self.deadline_ms,
                "voice": self.voice,
                "format": self.format,
                "sample_rate": self.sample_rate,
                "frame_ms": self.frame_ms,
                "chunking": self.chunking,
                "params": self.params.to_wire() or None,
                "timestamps": self.timestamps or None,
            }
        )


@dataclass(frozen=True, slots=True)
class Append:
    """More text for an open streaming utterance; ``final`` ends its input."""

    TYPE: ClassVar[str] = "append"

    id: str
    text: str
    final: bool = False

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.TYPE, "id": self.id, "text": self.text, "final": self.final}


@dataclass(frozen=True, slots=True)
class Flush:
    """Synthesize the text buffered so far, even without a sentence end.
    With ``flush_id`` (a v1 addition) the server answers ``Flushed``."""

    TYPE: ClassVar[str] = "flush"

    id: str
    flush_id: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return _without_none({"type": self.TYPE, "id": self.id, "flush_id": self.flush_id})


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the utterance at once (barge-in)."""

    TYPE: ClassVar[str] = "cancel"

    id: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.TYPE, "id": self.id}


# --- server -> client -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limits:
    """``idle_timeout_s`` (a v1 addition; None from an older server): seconds
    after which a connection with no active utterance and no client message
    is closed; 0 means never."""

    max_text_chars: int
    max_active: int
    max_message_bytes: int
    idle_timeout_s: float | None = None

    def to_wire(self) -> dict[str, Any]:
        return _without_none({
            "max_text_chars": self.max_text_chars,
            "max_active": self.max_active,
            "max_message_bytes": self.max_message_bytes,
            "idle_timeout_s": self.idle_timeout_s,
        })


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """``weights`` is "checkpoint", "random" or "tiny-random"; anything but
    "checkpoint" means the audio is noise and a client must say so."""

    name: str
    weights: str
    device: str

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "weights": self.weights, "device": self.device}


@dataclass(frozen=True, slots=True)
class Hello:
    """Sent once, right after the handshake: what this server offers."""

    TYPE: ClassVar[str] = "hello"

    sample_rate: int
    formats: tuple[str, ...]
    sample_rates: tuple[int, ...]
    voices: tuple[str, ...]
    limits: Limits
    model: ModelInfo
    protocol: int = PROTOCOL_VERSION

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": self.TYPE,
            "protocol": self.protocol,
            "sample_rate": self.sample_rate,
            "formats": list(self.formats),
            "sample_rates": list(self.sample_rates),
            "voices": list(self.voices),
            "limits": self.limits.to_wire(),
            "model": self.model.to_wire(),
        }


@dataclass(frozen=True, slots=True)
class Started:
    """A speak was accepted; ``stream`` tags its binary frames. ``pre_skip``
    (Opus only) is the number of 48 kHz samples to drop from the decoder's
    first output."""

    TYPE: ClassVar[str] = "started"

    id: str
    stream: int
    lane: str
    format: str
    sample_rate: int
    pre_skip: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire = {
            "type": self.TYPE,
            "id": self.id,
            "stream": self.stream,
            "lane": self.lane,
            "format": self.format,
            "sample_rate": self.sample_rate,
        }
        if self.pre_skip is not None:
            wire["pre_skip"] = self.pre_skip
        return wire


@dataclass(frozen=True, slots=True)
class Segment:
    """Sent after the last audio frame of segment ``index``. ``text`` is the
    client's text of the segment; ``spoken`` (a v1 addition, None from an
    older server) the text as the model read it, after normalization."""

    TYPE: ClassVar[str] = "segment"

    id: str
    index: int
    text: str
    offset_ms: float
    audio_ms: float
    spoken: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "type": self.TYPE,
            "id": self.id,
            "index": self.index,
            "text": self.text,
            "offset_ms": self.offset_ms,
            "audio_ms": self.audio_ms,
        }
        if self.spoken is not None:
            wire["spoken"] = self.spoken
        return wire


@dataclass(frozen=True, slots=True)
class Timing:
    """Milliseconds from receipt of the speak: queued (until its first model
    step), first audio (until its first frame was sent; None when it produced
    none), total (until done). ``rtf`` is synthesis time over audio time (None
    when there was no audio)."""

    queued_ms: float
    first_audio_ms: float | None
    total_ms: float
    rtf: float | None

    def to_wire(self) -> dict[str, Any]:
        return {
            "queued_ms": self.queued_ms,
            "first_audio_ms": self.first_audio_ms,
            "total_ms": self.total_ms,
            "rtf": self.rtf,
        }


@dataclass(frozen=True, slots=True)
class Done:
    """The utterance completed; ``deadline_met`` only on the background lane.
    ``unspoken`` (a v1 addition; on the wire only when non-empty): the
    client's sentences that normalized to nothing (an unsupported script,
    symbols only) and the runs of spoken sentences the model cannot say,
    in input order."""

    TYPE: ClassVar[str] = "done"

    id: str
    audio_ms: float
    segments: int
    timing: Timing
    deadline_met: bool | None = None
    unspoken: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        wire = _without_none(
            {
                "type": self.TYPE,
                "id": self.id,
                "audio_ms": self.audio_ms,
                "segments": self.segments,
                "timing": self.timing.to_wire(),
                "deadline_met": self.deadline_met,
            }
        )
        if self.unspoken:
            wire["unspoken"] = list(self.unspoken)
        return wire


@dataclass(frozen=True, slots=True)
class Cancelled:
    TYPE: ClassVar[str] = "cancelled"

    id: str

    def to_wire(self) -> dict[str, Any]:
        return {"type": self.TYPE, "id": self.id}


@dataclass(frozen=True, slots=True)
class Error:
    """``id`` is None for a connection-level error; ``code`` is an
    ``ErrorCode`` value (kept as a plain string so a client can carry codes a
    newer server adds). ``retry_after_ms`` (a v1 addition) comes only with
    refusals caused by load (``overloaded``, ``too_many_active``, rate
    limits): the earliest time the same request is worth retrying."""

    TYPE: ClassVar[str] = "error"

    id: str | None
    code: str
    message: str
    field: str | None = None
    retry_after_ms: int | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"type": self.TYPE, "id": self.id, "code": str(self.code),
                                "message": self.message}
        if self.field is not None:
            wire["field"] = self.field
        if self.retry_after_ms is not None:
            wire["retry_after_ms"] = self.retry_after_ms
        return wire


ClientMessage = Speak | Append | Flush | Cancel | Ping
ServerMessage = Hello | Started | Segment | Done | Cancelled | Error | Words | TimedWords | Flushed | Pong

CLIENT_TYPES: tuple[str, ...] = (Speak.TYPE, Append.TYPE, Flush.TYPE, Cancel.TYPE, Ping.TYPE)
SERVER_TYPES: tuple[str, ...] = (
    Hello.TYPE, Started.TYPE, Segment.TYPE, Done.TYPE, Cancelled.TYPE, Error.TYPE,
    Words.TYPE, Flushed.TYPE, Pong.TYPE,
)
