"""Sample formats of the audio payload, numpy only (server and clients).

Float samples in -1..1 go to bytes with ``encode_samples`` and come back with
``decode_samples``:
- ``pcm_s16le``: signed 16-bit little-endian, ``round(x * 32767)``;
- ``pcm_f32le``: 32-bit IEEE float little-endian;
- ``pcm_mulaw``: 8-bit G.711 mu-law of the 16-bit value (bias 132, clip
  32635, bits inverted), as telephony systems expect.
Encoding clips to -1..1 and writes NaN as 0; decoding returns float32 in -1..1
(scale 1/32767 for the integer formats). Encoding is per sample, so encoding a
stream in any chunking gives the same bytes: callers may encode a long chunk
once and cut the bytes into frames.

Thread: pure functions, safe from any thread (encoding reuses scratch buffers
that belong to the calling thread).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

BYTES_PER_SAMPLE: dict[str, int] = {"pcm_s16le": 2, "pcm_f32le": 4, "pcm_mulaw": 1}

S16_SCALE = 32767.0
MULAW_BIAS = 132
MULAW_CLIP = 32635


def _mulaw_encode_table() -> np.ndarray:
    """The mu-law byte of every int16 value, indexed by value + 32768."""
    linear = np.arange(-32768, 32768, dtype=np.int32)
    sign = np.where(linear < 0, 0x80, 0)
    magnitude = np.minimum(np.abs(linear), MULAW_CLIP) + MULAW_BIAS  # 132..32767
    exponent = np.floor(np.log2(magnitude)).astype(np.int32) - 7  # 0..7
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    table: np.ndarray = (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8)
    return table


def _mulaw_decode_table() -> np.ndarray:
    """The float value of every mu-law byte (the middle of its interval)."""
    code = ~np.arange(256, dtype=np.int32) & 0xFF
    exponent = (code >> 4) & 0x07
    mantissa = code & 0x0F
    magnitude = (((mantissa << 3) + MULAW_BIAS) << exponent) - MULAW_BIAS
    linear = np.where(code & 0x80, -magnitude, magnitude)
    return (linear / S16_SCALE).astype(np.float32)


_MULAW_ENCODE = _mulaw_encode_table()
_MULAW_DECODE = _mulaw_decode_table()


def _check_format(fmt: str) -> None:
    if fmt not in BYTES_PER_SAMPLE:
        raise ValueError(f"unknown sample format {fmt!r}")


_LITTLE_ENDIAN = sys.byteorder == "little"
# Samples encoded per pass: the scratch buffers hold one block (1.5 MB per
# thread in all); a block holds a whole sentence of 24 kHz audio in one piece
# (~5 s), and is long enough that numpy's per-call cost vanishes next to the
# per-sample work.
_BLOCK = 1 << 17


class _Scratch(threading.local):
    """One thread's reusable buffers: encoding allocates nothing but its result."""

    def __init__(self) -> None:
        self.f32 = np.empty(_BLOCK, np.float32)
        self.nan = np.empty(_BLOCK, np.bool_)
        self.i16 = np.empty(_BLOCK, np.int16)
        self.i32 = np.empty(_BLOCK, np.int32)
        self.u8 = np.empty(_BLOCK, np.uint8)


_scratch = _Scratch()
_lowest, _highest = np.minimum.reduce, np.maximum.reduce


def encode_samples(x: np.ndarray, fmt: str) -> bytes:
    """The payload bytes of mono float samples ``x`` (shape ``[n]``) in ``fmt``.

    Raises ValueError for an unknown format or a non-1-D array.
    """
    _check_format(fmt)
    samples = np.asarray(x, dtype=np.float32)
    if samples.ndim != 1:
        raise ValueError(f"samples must be mono, shape [n], got {samples.shape}")
    if samples.size <= _BLOCK:
        return _encode_block(samples, fmt, _scratch)
    return b"".join(_encode_block(samples[start:start + _BLOCK], fmt, _scratch)
                    for start in range(0, samples.size, _BLOCK))


def _encode_block(samples: np.ndarray, fmt: str, s: _Scratch) -> bytes:
    """``encode_samples`` of at most ``_BLOCK`` float32 samples, in place in ``s``."""
    n = samples.size
    if n == 0:
        return b""
    y = s.f32[:n]
    # Two quick reductions skip the clip in the usual case; NaN fails both
    # comparisons and takes the slow path.
    if _lowest(samples) >= -1.0 and _highest(samples) <= 1.0:
        clipped = samples
    else:
        clipped = np.clip(samples, -1.0, 1.0, out=y)  # NaN stays NaN here
        nan = np.isnan(y, out=s.nan[:n])
        if nan.any():
            y[nan] = 0.0
    if fmt == "pcm_f32le":
        return clipped.tobytes() if _LITTLE_ENDIAN else clipped.astype("<f4").tobytes()
    np.multiply(clipped, S16_SCALE, out=y)  # float32 arithmetic: rint(x * 32767) in float32
    np.rint(y, out=y)
    if fmt == "pcm_s16le":
        s16 = s.i16[:n]
        np.copyto(s16, y, casting="unsafe")  # exact: y holds integers in -32767..32767
        return s16.tobytes() if _LITTLE_ENDIAN else s16.astype("<i2").tobytes()
    index = s.i32[:n]
    np.copyto(index, y, casting="unsafe")
    index += 32768
    return np.take(_MULAW_ENCODE, index, out=s.u8[:n], mode="clip").tobytes()


def decode_samples(data: bytes | bytearray | memoryview, fmt: str) -> np.ndarray:
    """Float32 samples (a new writable array) from payload bytes in ``fmt``.

    Raises ValueError for an unknown format or a byte count that is not a
    whole number of samples.
    """
    _check_format(fmt)
    raw = memoryview(data).cast("B")
    if len(raw) % BYTES_PER_SAMPLE[fmt]:
        raise ValueError(f"{len(raw)} bytes is not a whole number of {fmt} samples")
    if fmt == "pcm_f32le":
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    if fmt == "pcm_s16le":
        samples: np.ndarray = np.frombuffer(raw, dtype="<i2").astype(np.float32) / np.float32(S16_SCALE)
        np.maximum(samples, np.float32(-1.0), out=samples)  # -32768 reads as -1
        return samples
    decoded: np.ndarray = _MULAW_DECODE[np.frombuffer(raw, dtype=np.uint8)]
    return decoded
