"""Decoding an Opus utterance (format "opus", PROTOCOL.md's v1 additions) back to PCM.

One `OpusDecoder` per utterance: the packets of one utterance form one Opus stream.
Each binary frame's payload holds whole packets, each preceded by its u16
little-endian length. The decoder (libopus, from PyAV: `pip install av`) works at
48 kHz; the first `pre_skip` samples (from `started`) are dropped, as in Ogg Opus,
and the rest is resampled to the utterance's rate. The resampler is flushed at the
end of each segment (the server pads every segment so that its audio is complete in
its own packets), so nothing is held back across a segment boundary.
"""

from __future__ import annotations

import numpy as np
import soxr

from protocol.packets import unpack_packets

DECODER_RATE = 48000


class OpusDecoder:
    """Frame payloads in, float32 mono samples at `sample_rate` out.

    Raises ImportError when PyAV is missing and ValueError for a malformed payload.
    """

    def __init__(self, sample_rate: int, pre_skip: int = 0) -> None:
        import av

        self._av = av
        self._codec = av.CodecContext.create("libopus", "r")
        self._codec.sample_rate = DECODER_RATE
        self._codec.layout = "mono"
        self.sample_rate = sample_rate
        self._skip = pre_skip
        self._resampler: soxr.ResampleStream | None = None

    def decode(self, payload: bytes | memoryview, segment_end: bool = False) -> np.ndarray:
        """The audio of one frame payload; `segment_end` flushes the resampler."""
        parts = []
        for packet in unpack_packets(payload):
            for frame in self._codec.decode(self._av.Packet(packet)):
                parts.append(_mono_float(frame.to_ndarray()))
        pcm = np.concatenate(parts) if parts else np.zeros(0, np.float32)
        if self._skip:
            dropped = min(self._skip, len(pcm))
            pcm, self._skip = pcm[dropped:], self._skip - dropped
        if self.sample_rate == DECODER_RATE:
            return pcm
        if self._resampler is None:
            self._resampler = soxr.ResampleStream(DECODER_RATE, self.sample_rate, 1,
                                                  dtype="float32")
        out = self._resampler.resample_chunk(pcm, last=segment_end)
        if segment_end:
            self._resampler = None
        return np.asarray(out, dtype=np.float32)


def _mono_float(samples: np.ndarray) -> np.ndarray:
    """One decoded frame as float32 in -1..1 (libopus gives int16, ffmpeg's own float)."""
    flat = samples.reshape(-1)
    if flat.dtype == np.int16:
        return flat.astype(np.float32) / 32768.0
    return flat.astype(np.float32, copy=False)
