"""The audio formats this server offers, and the framer of each.

PCM comes from ``realtime.audio.framer`` and Opus from ``realtime.audio.opus`` (which
builds on the PCM framer): this module sits above both, so neither needs
the other's name to pick a framer.

Thread: event loop.
"""

from __future__ import annotations

from protocol import FORMATS, OPUS_FORMAT
from realtime.audio.framer import AudioFramer
from realtime.audio.opus import OpusFramer, available


def framer_for(fmt: str, sample_rate: int, frame_ms: int) -> AudioFramer | OpusFramer:
    """The framer of one utterance's format."""
    if fmt == OPUS_FORMAT:
        return OpusFramer(sample_rate, frame_ms)
    return AudioFramer(fmt, sample_rate, frame_ms)


def offered_formats() -> tuple[str, ...]:
    """The formats this server lists in ``hello``: PCM always, Opus when it loads."""
    return (*FORMATS, OPUS_FORMAT) if available() else FORMATS
