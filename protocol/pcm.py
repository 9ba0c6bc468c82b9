"""Sample formats of the audio payload, numpy only (server and clients).

Float samples in -1..1 go to bytes with ``encode_samples`` and come back with
``decode_samples``:
- ``pcm_s16le``: signed 16-bit little-endian, ``round(x * 32767)``;
- ``pcm_f32le``: 32-bit IEEE float little-endian;
- ``pcm_mulaw``: 8-bit G.711 mu-law of the 16-bit value (bias 132, clip
  32635, bits inverted), as telephony systems expect.
Encoding clips to -1..1 and writes NaN as 0; decoding returns float32 in -1..1
(scale 1/32767 for the integer formats).

Thread: pure functions, safe from any thread.
"""

from __future__ import annotations

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
    return (~(sign | (exponent << 4) | mantissa) & 0xFF).astype(np.uint8)


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


def _to_s16(x: np.ndarray) -> np.ndarray:
    return np.rint(x * S16_SCALE).astype(np.int16)


def encode_samples(x: np.ndarray, fmt: str) -> bytes:
    """The payload bytes of mono float samples ``x`` (shape ``[n]``) in ``fmt``.

    Raises ValueError for an unknown format or a non-1-D array.
    """
    _check_format(fmt)
    samples = np.asarray(x, dtype=np.float32)
    if samples.ndim != 1:
        raise ValueError(f"samples must be mono, shape [n], got {samples.shape}")
    samples = np.clip(np.nan_to_num(samples, nan=0.0), -1.0, 1.0)
    if fmt == "pcm_f32le":
        return samples.astype("<f4").tobytes()
    s16 = _to_s16(samples)
    if fmt == "pcm_s16le":
        return s16.astype("<i2").tobytes()
    return _MULAW_ENCODE[s16.astype(np.int32) + 32768].tobytes()


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
        samples = np.frombuffer(raw, dtype="<i2").astype(np.float32) / np.float32(S16_SCALE)
        return np.maximum(samples, np.float32(-1.0), out=samples)  # -32768 reads as -1
    return _MULAW_DECODE[np.frombuffer(raw, dtype=np.uint8)]
