"""protocol.pcm: float samples to payload bytes and back."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import protocol as p


def ref_mulaw_encode(sample: int) -> int:
    """G.711 mu-law of one int16, written the classic bit-by-bit way."""
    sign = 0x80 if sample < 0 else 0
    magnitude = min(abs(sample), 32635) + 132
    exponent = 7
    mask = 0x4000
    while exponent > 0 and not magnitude & mask:
        exponent -= 1
        mask >>= 1
    mantissa = (magnitude >> (exponent + 3)) & 0x0F
    return ~(sign | (exponent << 4) | mantissa) & 0xFF


def test_bytes_per_sample():
    assert p.BYTES_PER_SAMPLE == {"pcm_s16le": 2, "pcm_f32le": 4, "pcm_mulaw": 1}


def test_s16_is_little_endian_scaled_by_32767_and_clipped():
    data = p.encode_samples(np.array([0.0, 1.0, -1.0, 0.5, 2.0, -3.0, np.nan], np.float32),
                            "pcm_s16le")
    assert np.frombuffer(data, "<i2").tolist() == [0, 32767, -32767, 16384, 32767, -32767, 0]
    assert data[2:4] == b"\xff\x7f"


def test_f32_is_little_endian_and_clipped():
    data = p.encode_samples(np.array([0.25, 1.5], np.float64), "pcm_f32le")
    assert data == np.array([0.25, 1.0], "<f4").tobytes()
    assert p.decode_samples(data, "pcm_f32le").tolist() == [0.25, 1.0]


def test_mulaw_matches_the_reference_encoder_for_every_int16():
    every = np.arange(-32768, 32768, dtype=np.int32)
    samples = (every / 32767.0).astype(np.float32)
    encoded = np.frombuffer(p.encode_samples(samples, "pcm_mulaw"), np.uint8)
    s16 = np.rint(np.clip(samples, -1, 1) * 32767).astype(int)
    picks = np.linspace(0, len(every) - 1, 4001).astype(int)
    assert [int(encoded[i]) for i in picks] == [ref_mulaw_encode(int(s16[i])) for i in picks]
    # Well-known codes: silence is 0xFF, full positive scale 0x80, full negative 0x00.
    assert p.encode_samples(np.array([0.0, 1.0, -1.0]), "pcm_mulaw") == b"\xff\x80\x00"


def test_decoding_gives_float32_in_range():
    for fmt in p.BYTES_PER_SAMPLE:
        data = bytes(range(256)) * 4
        x = p.decode_samples(data, fmt)
        assert x.dtype == np.float32 and x.flags.writeable
        if fmt != "pcm_f32le":
            assert x.min() >= -1.0 and x.max() <= 1.0
    assert p.decode_samples(b"\x00\x80", "pcm_s16le").tolist() == [-1.0]


def test_errors():
    with pytest.raises(ValueError):
        p.encode_samples(np.zeros(4), "mp3")
    with pytest.raises(ValueError):
        p.encode_samples(np.zeros((2, 4)), "pcm_s16le")
    with pytest.raises(ValueError):
        p.decode_samples(b"\x00\x00\x00", "pcm_s16le")
    with pytest.raises(ValueError):
        p.decode_samples(b"\x00\x00", "pcm_f32le")
    assert p.encode_samples(np.zeros(0), "pcm_mulaw") == b""


samples = arrays(np.float32, st.integers(0, 256),
                 elements=st.floats(-1, 1, width=32, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(samples)
def test_s16_round_trip_within_one_step(x):
    y = p.decode_samples(p.encode_samples(x, "pcm_s16le"), "pcm_s16le")
    assert y.shape == x.shape
    assert np.all(np.abs(y - x) <= 1 / 32767 + 1e-7)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_f32_round_trip_is_exact(x):
    assert np.array_equal(p.decode_samples(p.encode_samples(x, "pcm_f32le"), "pcm_f32le"), x)


@settings(max_examples=200, deadline=None)
@given(samples)
def test_mulaw_round_trip_within_its_quantization_step(x):
    y = p.decode_samples(p.encode_samples(x, "pcm_mulaw"), "pcm_mulaw")
    # The step of mu-law segment e is 2**(e + 3) in 16-bit units.
    magnitude = np.minimum(np.abs(np.rint(x * 32767)), 32635) + 132
    step = 2.0 ** (np.floor(np.log2(magnitude)) - 7 + 3) / 32767
    assert np.all(np.abs(y - x) <= step + 1e-6)
