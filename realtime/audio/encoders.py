"""Response formats of the speech endpoint: 24 kHz float32 audio in, encoded bytes out.

Each encoder is a stream: ``push(samples)`` returns the bytes ready so far
(possibly none: codecs work in frames), ``finish()`` the rest. ``pcm`` is
24 kHz signed 16-bit little-endian, as OpenAI's; ``wav`` is the same behind a
header whose sizes say "unknown" (0xFFFFFFFF), as a stream's must. The others
go through PyAV's codecs and muxers (libmp3lame, libopus in Ogg, FLAC, AAC
in ADTS), writing into a sink that hands each muxed packet on at once.

Thread: one owner (the event loop); no locking.
"""

from __future__ import annotations

import functools
import logging
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from protocol.pcm import encode_samples
from realtime.audio.framer import SOURCE_RATE as SAMPLE_RATE

if TYPE_CHECKING:
    from av.audio.stream import AudioStream

log = logging.getLogger(__name__)


class ResponseEncoder(Protocol):
    content_type: str

    def push(self, samples: np.ndarray) -> bytes: ...

    def finish(self) -> bytes: ...


class PcmEncoder:
    content_type = "audio/pcm"

    def push(self, samples: np.ndarray) -> bytes:
        return encode_samples(samples, "pcm_s16le")

    def finish(self) -> bytes:
        return b""


class WavEncoder(PcmEncoder):
    """A streamed WAV: RIFF and data sizes 0xFFFFFFFF (readers read to the end)."""

    content_type = "audio/wav"

    def __init__(self) -> None:
        self._header: bytes | None = wav_header(SAMPLE_RATE)

    def push(self, samples: np.ndarray) -> bytes:
        return self._take_header() + super().push(samples)

    def finish(self) -> bytes:
        return self._take_header()

    def _take_header(self) -> bytes:
        header, self._header = self._header or b"", None
        return header


def wav_header(rate: int, data_bytes: int = 0xFFFFFFFF) -> bytes:
    """A 44-byte header of mono s16le WAV; the default sizes mean "unknown"."""
    riff = 0xFFFFFFFF if data_bytes == 0xFFFFFFFF else 36 + data_bytes
    return (b"RIFF" + struct.pack("<I", riff) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", data_bytes))


@dataclass(frozen=True)
class _Codec:
    container: str
    codec: str
    content_type: str
    bit_rate: int | None
    options: tuple[tuple[str, str], ...] = ()


# Ogg pages of 100 ms: each page costs ~30 bytes, so one per 20 ms packet
# would add 12 kb/s; the muxer's default (1 s) would hold audio back.
_CODECS: dict[str, _Codec] = {
    "mp3": _Codec("mp3", "libmp3lame", "audio/mpeg", 64_000),
    "opus": _Codec("ogg", "libopus", "audio/ogg", 32_000, (("page_duration", "100000"),)),
    "aac": _Codec("adts", "aac", "audio/aac", 64_000),
    "flac": _Codec("flac", "flac", "audio/flac", None),
}


class _Sink:
    """What the muxer writes to: bytes collected until taken."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: Any) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def take(self) -> bytes:
        out, self.parts = b"".join(self.parts), []
        return out


class AvEncoder:
    """One PyAV output container for one response."""

    def __init__(self, spec: _Codec) -> None:
        import av

        self._av = av
        self.content_type = spec.content_type
        self._sink = _Sink()
        # flush_packets: hand every muxed packet to the sink at once (streaming).
        self._container = av.open(self._sink, mode="w", format=spec.container,
                                  options={"flush_packets": "1", **dict(spec.options)})
        self._stream = cast("AudioStream", self._container.add_stream(spec.codec, rate=SAMPLE_RATE,
                                                                      layout="mono"))
        if spec.bit_rate:
            self._stream.bit_rate = spec.bit_rate
        self._pts = 0
        self._closed = False

    def push(self, samples: np.ndarray) -> bytes:
        if len(samples):
            frame = self._av.AudioFrame.from_ndarray(
                np.ascontiguousarray(samples, dtype=np.float32).reshape(1, -1),
                format="flt", layout="mono")
            frame.sample_rate = SAMPLE_RATE
            frame.pts = self._pts
            self._pts += len(samples)
            for packet in self._stream.encode(frame):
                self._container.mux(packet)
        return self._sink.take()

    def finish(self) -> bytes:
        if not self._closed:
            self._closed = True
            for packet in self._stream.encode(None):
                self._container.mux(packet)
            self._container.close()
        return self._sink.take()


@functools.cache
def available_formats() -> tuple[str, ...]:
    """The response formats this process can encode (PCM and WAV always)."""
    formats = ["pcm", "wav"]
    try:
        import av
    except ImportError:
        log.info("PyAV is missing: the speech endpoint offers pcm and wav only")
        return tuple(formats)
    for name, spec in _CODECS.items():
        try:
            av.codec.Codec(spec.codec, "w")
        except ValueError:
            log.info("no %s encoder in this PyAV: response_format %s is not offered", spec.codec, name)
            continue
        formats.append(name)
    return tuple(formats)


class EncodedStream:
    """One request's audio as an utterance pushes it (``formats.AudioOut``):
    24 kHz float32 in, cut into ``piece_ms`` pieces, each encoded at once.
    A piece a codec holds back comes out empty (a later one, or ``finish``,
    carries its bytes); the counters count samples taken, at 24 kHz."""

    pre_skip: int | None = None
    sample_rate = SAMPLE_RATE

    def __init__(self, encoder: ResponseEncoder, piece_ms: int) -> None:
        self.encoder = encoder
        self.piece = max(1, SAMPLE_RATE * piece_ms // 1000)
        self.samples_sent = 0
        self.segment_samples = 0
        self._rest = np.zeros(0, dtype=np.float32)
        self._segment_ended = False

    def ms(self, samples: int) -> float:
        return samples * 1000 / SAMPLE_RATE

    def push(self, samples: np.ndarray) -> list[bytes]:
        if self._segment_ended:
            self._segment_ended, self.segment_samples = False, 0
        audio = np.concatenate([self._rest, samples]) if len(self._rest) else samples
        whole = len(audio) - len(audio) % self.piece
        self._rest = audio[whole:]
        return [self._encode(audio[i:i + self.piece]) for i in range(0, whole, self.piece)]

    def end_segment(self) -> list[bytes]:
        if self._segment_ended:
            self.segment_samples = 0
        rest, self._rest = self._rest, np.zeros(0, dtype=np.float32)
        self._segment_ended = True
        return [self._encode(rest)] if len(rest) else []

    def finish(self) -> bytes:
        """What the codec still holds (call once, after the last segment)."""
        return self.encoder.finish()

    def _encode(self, piece: np.ndarray) -> bytes:
        self.samples_sent += len(piece)
        self.segment_samples += len(piece)
        return self.encoder.push(piece)


def encoder_for(response_format: str) -> ResponseEncoder:
    """A fresh encoder; the format must be one of ``available_formats()``."""
    if response_format == "pcm":
        return PcmEncoder()
    if response_format == "wav":
        return WavEncoder()
    return AvEncoder(_CODECS[response_format])
