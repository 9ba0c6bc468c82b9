"""Opus on the WebSocket: one encoder per utterance, packets framed as PROTOCOL.md's v1 additions say.

``OpusFramer`` has ``AudioFramer``'s interface (``push``, ``end_segment``,
``ms``, ``samples_sent``, ``segment_samples``, ``sample_rate``), so an
utterance drives it the same way. Inside, an ``AudioFramer`` in ``pcm_f32le``
resamples and cuts the audio into 20 ms chunks; each chunk becomes one Opus
packet; ``ceil(frame_ms / 20)`` packets make one frame payload, each packet
preceded by its byte length (u16 little-endian).

At a segment's end the short last chunk is padded with silence to 20 ms, and
when that padding is shorter than the encoder's lookahead one more silent
packet follows: every segment's audio then decodes completely before the next
segment (or the end of the utterance), at the price of at most 20 ms of
silence between sentences. The counters count the audio before encoding
(padding excluded), as ``segment.audio_ms`` and ``done.audio_ms`` must.

The encoder is libopus as PyAV ships it (``pip install av``); ``available()``
says whether it loads here, and the server offers ``opus`` only then.

Thread: one owner (the event loop); no locking.
"""

from __future__ import annotations

import functools
import logging
import math
from fractions import Fraction

import numpy as np

from protocol import OPUS_PACKET_MS, OPUS_SAMPLE_RATES
from protocol.packets import pack_packets
from realtime.audio.framer import AudioFramer

log = logging.getLogger(__name__)

# Bit rates per sample rate: speech at 24 kHz is transparent-enough at 32 kb/s.
BITRATES = {8000: 16_000, 12000: 20_000, 16000: 24_000, 24000: 32_000, 48000: 48_000}
_DEFAULT_PRE_SKIP = 312  # libopus's lookahead at 48 kHz, should the header lack it


@functools.cache
def available() -> bool:
    """Whether an Opus encoder can be built here (PyAV with libopus)."""
    try:
        import av

        av.codec.Codec("libopus", "w")
    except (ImportError, ValueError) as exc:  # no PyAV, or one built without libopus
        log.info("opus is not offered: %s", exc)
        return False
    return True


class OpusEncoder:
    """One Opus stream: 20 ms float32 chunks in, packets out.

    ``pre_skip`` is the encoder's lookahead in 48 kHz samples (as in Ogg
    Opus); ``lookahead`` the same in samples at ``sample_rate``. Raises
    ``ValueError`` for a rate Opus does not support.
    """

    def __init__(self, sample_rate: int, bitrate: int | None = None) -> None:
        if sample_rate not in OPUS_SAMPLE_RATES:
            raise ValueError(f"opus does not support {sample_rate} Hz")
        import av

        ctx = av.CodecContext.create("libopus", "w")
        ctx.sample_rate = sample_rate
        ctx.layout = "mono"
        ctx.format = "flt"
        ctx.bit_rate = bitrate or BITRATES[sample_rate]
        ctx.time_base = Fraction(1, sample_rate)
        ctx.options = {"frame_duration": str(OPUS_PACKET_MS), "application": "audio"}
        ctx.open()
        self._ctx = ctx
        self._av = av
        self.sample_rate = sample_rate
        self.packet_samples = sample_rate * OPUS_PACKET_MS // 1000
        extradata = ctx.extradata or b""
        # OpusHead: "OpusHead", version, channels, then pre-skip (u16 LE).
        self.pre_skip = (int.from_bytes(extradata[10:12], "little")
                         if extradata[:8] == b"OpusHead" else _DEFAULT_PRE_SKIP)
        self.lookahead = math.ceil(self.pre_skip * sample_rate / 48000)
        self._pts = 0

    def encode(self, chunk: np.ndarray) -> list[bytes]:
        """Encode exactly one packet's samples (float32, shorter chunks are
        padded with silence); return the packets the encoder released."""
        n = self.packet_samples
        if len(chunk) < n:
            chunk = np.concatenate([chunk, np.zeros(n - len(chunk), np.float32)])
        frame = self._av.AudioFrame.from_ndarray(
            np.ascontiguousarray(chunk, dtype=np.float32).reshape(1, n), format="flt", layout="mono")
        frame.sample_rate = self.sample_rate
        frame.pts = self._pts
        self._pts += n
        return [bytes(packet) for packet in self._ctx.encode(frame)]

    def silence(self) -> list[bytes]:
        return self.encode(np.zeros(self.packet_samples, np.float32))


def whole_packets_ms(frame_ms: int) -> int:
    """The frame an Opus stream sends for ``frame_ms``: rounded up to whole packets."""
    return max(1, math.ceil(frame_ms / OPUS_PACKET_MS)) * OPUS_PACKET_MS


class OpusFramer:
    """24 kHz float32 chunks in -> Opus frame payloads out (one per utterance).

    ``frame_ms`` is rounded up to a multiple of 20 ms. See the module
    docstring for padding and counting. Raises ``ValueError`` for a sample
    rate Opus does not support.
    """

    def __init__(self, sample_rate: int, frame_ms: int, bitrate: int | None = None) -> None:
        self._encoder = OpusEncoder(sample_rate, bitrate)
        self._pcm = AudioFramer("pcm_f32le", sample_rate, OPUS_PACKET_MS)
        self.sample_rate = sample_rate
        self.frame_ms = whole_packets_ms(frame_ms)
        self.packets_per_frame = self.frame_ms // OPUS_PACKET_MS
        self.pre_skip = self._encoder.pre_skip
        self._packets: list[bytes] = []  # encoded, not yet in a returned payload
        self._segment_open = False  # audio was pushed since the last end_segment

    @property
    def samples_sent(self) -> int:
        return self._pcm.samples_sent

    @property
    def segment_samples(self) -> int:
        return self._pcm.segment_samples

    def ms(self, samples: int) -> float:
        return self._pcm.ms(samples)

    def push(self, samples: np.ndarray) -> list[bytes]:
        """Add 24 kHz float32 audio; return the payloads of complete frames."""
        if len(samples):
            self._segment_open = True
        for chunk in self._pcm.push(samples):
            self._packets += self._encoder.encode(np.frombuffer(chunk, dtype="<f4"))
        return self._take(whole_only=True)

    def end_segment(self) -> list[bytes]:
        """The segment's remaining audio, padded and flushed (see the module
        docstring); the last payload may hold fewer packets."""
        tail = self._pcm.end_segment()
        if not self._segment_open:
            return self._take(whole_only=False)
        self._segment_open = False
        padding = 0
        for chunk in tail:
            samples = np.frombuffer(chunk, dtype="<f4")
            padding = self._encoder.packet_samples - len(samples)
            self._packets += self._encoder.encode(samples)
        if padding < self._encoder.lookahead:
            self._packets += self._encoder.silence()
        return self._take(whole_only=False)

    def _take(self, whole_only: bool) -> list[bytes]:
        per = self.packets_per_frame
        count = len(self._packets) // per * per if whole_only else len(self._packets)
        if not count:
            return []
        ready, self._packets = self._packets[:count], self._packets[count:]
        return [pack_packets(ready[i:i + per]) for i in range(0, count, per)]
