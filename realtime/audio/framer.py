"""Output audio of one utterance: 24 kHz float32 chunks in, framed payloads out.

The vocoder yields audio at 24 kHz in chunks of whatever size decoding gives.
A client asked for a sample rate, a sample format and a frame duration. The
``AudioFramer`` resamples as a stream (soxr), encodes each chunk in one
vectorized pass and cuts the encoded stream into frames of exactly
``frame_ms``; only a segment's last frame may be shorter. Encoding is per
sample, so the bytes equal those of encoding frame by frame, at a fraction of
the cost (a chunk is many frames). Counting happens in output-rate samples, so
the timing fields the session reports (``offset_ms``, ``audio_ms``) match the
bytes sent exactly.
"""

from __future__ import annotations

import logging

import numpy as np
import soxr

from protocol import DEFAULT_SAMPLE_RATE, DEFAULT_SAMPLE_RATES
from protocol.pcm import BYTES_PER_SAMPLE, encode_samples

log = logging.getLogger(__name__)

# What the model makes (ChatTTS's vocoder: 24 kHz), the wire's default rate; the
# engine's SAMPLE_RATE is the same (tests/test_architecture.py holds them equal).
SOURCE_RATE = DEFAULT_SAMPLE_RATE
SUPPORTED_RATES = DEFAULT_SAMPLE_RATES  # the framer resamples to each

_EMPTY = np.zeros(0, dtype=np.float32)


class AudioFramer:
    """24 kHz float32 chunks in -> encoded frame payloads of frame_ms out (one per utterance).

    ``push`` returns the payloads of the frames completed by a chunk;
    ``end_segment`` flushes the resampler and returns the rest of the segment
    (its last frame may be shorter, it is never empty). A segment that was
    given no samples produces no payload.

    Counters, in output-rate samples:
      ``samples_sent``    all payloads returned so far;
      ``segment_samples`` payloads of the current segment. After ``end_segment``
                          it still holds the ended segment's total (so the
                          caller can report it) until the next ``push`` or
                          ``end_segment`` starts a new segment.
    The segment's start offset is therefore ``samples_sent - segment_samples``.

    Raises ``ValueError`` for an unsupported rate, format or frame duration.
    Thread: one owner; no locking.
    """

    pre_skip: int | None = None  # only Opus streams have one (``started.pre_skip``)

    def __init__(self, fmt: str, sample_rate: int, frame_ms: int):
        if sample_rate not in SUPPORTED_RATES:
            raise ValueError(f"unsupported sample rate {sample_rate}")
        if fmt not in BYTES_PER_SAMPLE:
            raise ValueError(f"unsupported format {fmt!r}")
        if frame_ms < 1:
            raise ValueError(f"frame_ms must be >= 1, got {frame_ms}")
        self.fmt = fmt
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self.bytes_per_sample = BYTES_PER_SAMPLE[fmt]
        self.frame_samples = max(1, round(sample_rate * frame_ms / 1000))
        self.frame_bytes = self.frame_samples * self.bytes_per_sample
        self.samples_sent = 0
        self.segment_samples = 0
        self._segment_ended = False
        self._resampler: soxr.ResampleStream | None = None
        # Encoded bytes not yet framed; always shorter than one frame between calls.
        self._pending = b""

    def ms(self, samples: int) -> float:
        """Duration in milliseconds of ``samples`` output-rate samples."""
        return samples * 1000 / self.sample_rate

    def push(self, samples: np.ndarray) -> list[bytes]:
        """Add a chunk of 24 kHz mono float32 audio; return payloads of complete frames.

        ``samples`` is 1-D (any float dtype, converted). An empty chunk returns [].
        """
        chunk = np.asarray(samples, dtype=np.float32)
        if chunk.ndim != 1:
            raise ValueError(f"expected mono 1-D samples, got shape {chunk.shape}")
        self._start_segment_if_ended()
        if chunk.size == 0:
            return []
        if self.sample_rate != SOURCE_RATE:
            if self._resampler is None:
                self._resampler = soxr.ResampleStream(
                    SOURCE_RATE, self.sample_rate, 1, dtype="float32"
                )
            chunk = self._resampler.resample_chunk(chunk)
        return self._frames(chunk, last=False)

    def end_segment(self) -> list[bytes]:
        """Flush the resampler; return the segment's remaining frames (last may be short)."""
        self._start_segment_if_ended()
        tail = _EMPTY
        if self._resampler is not None:
            tail = self._resampler.resample_chunk(_EMPTY, last=True)
            # A fresh resampler per segment: segments are separate sentences,
            # so no filter state carries across the gap between them.
            self._resampler = None
        payloads = self._frames(tail, last=True)
        self._segment_ended = True
        return payloads

    def _start_segment_if_ended(self) -> None:
        if self._segment_ended:
            self._segment_ended = False
            self.segment_samples = 0

    def _frames(self, chunk: np.ndarray, last: bool) -> list[bytes]:
        """Encode ``chunk`` after the pending bytes; cut whole frames (and the rest if last)."""
        # encode_samples clips: the resampler's filter can overshoot full scale.
        data = encode_samples(chunk, self.fmt) if chunk.size else b""
        size = self.frame_bytes
        payloads: list[bytes] = []
        start = 0
        pending = self._pending
        available = len(pending) + len(data)
        if pending:
            # Complete the pending frame first rather than copying the whole chunk
            # behind it.
            start = min(size - len(pending), len(data))
            pending += data[:start]
            if len(pending) == size:
                payloads.append(pending)
                pending = b""
        if not pending:
            whole = start + (len(data) - start) // size * size
            payloads += [data[i:i + size] for i in range(start, whole, size)]
            pending = data[whole:]
        if last and pending:
            payloads.append(pending)
            pending = b""
        self._pending = pending
        framed = (available - len(pending)) // self.bytes_per_sample
        self.samples_sent += framed
        self.segment_samples += framed
        return payloads
