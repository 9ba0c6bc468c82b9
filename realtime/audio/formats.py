"""The audio an utterance's carrier sends, by format: one registry for both transports.

An utterance pushes 24 kHz float32 samples into an ``AudioOut`` its carrier
chose and sends the payloads it returns. The WebSocket's: ``framer_for``,
PCM frames of ``frame_ms`` (``realtime.audio.framer``) or Opus packets
(``realtime.audio.opus``, built on the PCM framer); the speech endpoint's:
``response_stream``, the response format's bytes (``realtime.audio.encoders``:
PCM, WAV, MP3, Ogg Opus, FLAC, AAC). ``offered_formats`` and
``available_formats`` say what each offers here. Every ``AudioOut`` counts
what it has taken in its own output rate, so the timings an utterance
reports match its bytes.

Thread: event loop.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from protocol import FORMATS, OPUS_FORMAT
from realtime.audio.encoders import EncodedStream, available_formats, encoder_for
from realtime.audio.framer import AudioFramer
from realtime.audio.opus import OpusFramer, available, whole_packets_ms

__all__ = ["AudioOut", "available_formats", "framer_for", "offered_formats", "response_stream"]


class AudioOut(Protocol):
    """Samples in, payloads out, as ``AudioFramer`` documents: ``push``,
    ``end_segment`` (the segment's rest), the counters ``samples_sent`` and
    ``segment_samples`` in ``sample_rate``'s samples, ``ms`` of a count, and
    Opus's ``pre_skip`` (None elsewhere)."""

    @property
    def sample_rate(self) -> int: ...
    @property
    def samples_sent(self) -> int: ...
    @property
    def segment_samples(self) -> int: ...
    @property
    def pre_skip(self) -> int | None: ...

    def push(self, samples: np.ndarray) -> list[bytes]: ...
    def end_segment(self) -> list[bytes]: ...
    def ms(self, samples: int) -> float: ...


def frame_seconds(fmt: str, frame_ms: int) -> float:
    """How long the frames of ``framer_for(fmt, _, frame_ms)`` are (Opus: whole packets)."""
    if fmt == OPUS_FORMAT:
        frame_ms = whole_packets_ms(frame_ms)
    return frame_ms / 1000


def framer_for(fmt: str, sample_rate: int, frame_ms: int) -> AudioFramer | OpusFramer:
    """The WebSocket framer of one utterance's format."""
    if fmt == OPUS_FORMAT:
        return OpusFramer(sample_rate, frame_ms)
    return AudioFramer(fmt, sample_rate, frame_ms)


def response_stream(response_format: str, piece_ms: int) -> EncodedStream:
    """The speech endpoint's audio of one request: ``response_format``'s bytes,
    a payload per ``piece_ms`` of audio (one response chunk or SSE event)."""
    return EncodedStream(encoder_for(response_format), piece_ms)


def offered_formats() -> tuple[str, ...]:
    """The formats this server lists in ``hello``: PCM always, Opus when it loads."""
    return (*FORMATS, OPUS_FORMAT) if available() else FORMATS
