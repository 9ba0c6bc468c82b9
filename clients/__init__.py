"""Clients for the realtime TTS server: an asyncio library, a CLI (`python -m clients.say`),
a latency probe (`python -m clients.probe`), the browser demo (clients/web/) and a
Pipecat TTS service (clients/pipecat_tts.py, imported on its own: it needs pipecat-ai)."""

from clients.backoff import Backoff, speak_admitted
from clients.client import DEFAULT_URL, RealtimeClient
from clients.errors import (
    BadJson,
    BadMessage,
    BinaryNotAllowed,
    ConnectionLost,
    DeadlineUnmeetable,
    DuplicateId,
    HandshakeRefused,
    InputClosed,
    InternalError,
    Overloaded,
    ProtocolViolation,
    ShuttingDown,
    SlowConsumer,
    TextTooLong,
    TooManyActive,
    TTSError,
    UnknownId,
    UnknownType,
    Unsupported,
    UtteranceCancelled,
    error_for,
    from_message,
)
from clients.events import Flushed, Word, Words
from clients.utterance import AudioChunk, Utterance

__all__ = [
    "Backoff", "speak_admitted",
    "DEFAULT_URL", "RealtimeClient", "Utterance", "AudioChunk", "Word", "Words", "Flushed",
    "TTSError", "error_for",
    "from_message", "BadJson", "BadMessage", "BinaryNotAllowed", "ConnectionLost",
    "DeadlineUnmeetable", "DuplicateId", "HandshakeRefused", "InputClosed", "InternalError",
    "Overloaded", "ProtocolViolation", "ShuttingDown", "SlowConsumer", "TextTooLong",
    "TooManyActive", "UnknownId", "UnknownType", "Unsupported", "UtteranceCancelled",
]
