"""AudioFramer: streamed resampling matches one-shot soxr, exact frame sizes and counters."""

from __future__ import annotations

import numpy as np
import pytest
import soxr

from protocol.pcm import BYTES_PER_SAMPLE, decode_samples, encode_samples
from realtime.audio.framer import SOURCE_RATE, SUPPORTED_RATES, AudioFramer

FORMATS = ("pcm_s16le", "pcm_f32le", "pcm_mulaw")


def tone(n: int, seed: int = 0) -> np.ndarray:
    """A 440 Hz tone plus a little noise, well inside full scale."""
    rng = np.random.default_rng(seed)
    t = np.arange(n) / SOURCE_RATE
    return (0.5 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(n)).astype(np.float32)


def random_chunks(x: np.ndarray, seed: int) -> list[np.ndarray]:
    """Split x at random points, with some empty chunks."""
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.integers(0, x.size + 1, size=12))
    bounds = [0, *cuts.tolist(), x.size]
    return [x[a:b] for a, b in zip(bounds, bounds[1:])]


def run_segment(framer: AudioFramer, x: np.ndarray, seed: int) -> tuple[list[bytes], list[bytes]]:
    """Push x in random chunks then end the segment; (payloads from push, from end_segment)."""
    pushed: list[bytes] = []
    for chunk in random_chunks(x, seed):
        pushed += framer.push(chunk)
    return pushed, framer.end_segment()


def expected_frame_samples(rate: int, frame_ms: int) -> int:
    return max(1, round(rate * frame_ms / 1000))


@pytest.mark.parametrize("rate", SUPPORTED_RATES)
def test_streamed_resampling_equals_one_shot(rate):
    x = tone(SOURCE_RATE // 2 + 37, seed=rate)
    framer = AudioFramer("pcm_f32le", rate, frame_ms=20)
    pushed, tail = run_segment(framer, x, seed=rate)
    got = np.concatenate([decode_samples(p, "pcm_f32le") for p in pushed + tail])
    want = x if rate == SOURCE_RATE else soxr.resample(x, SOURCE_RATE, rate)
    assert got.size == want.size
    np.testing.assert_allclose(got, np.clip(want, -1, 1), atol=1e-6)
    assert framer.samples_sent == got.size


@pytest.mark.parametrize("rate", SUPPORTED_RATES)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("frame_ms", [10, 33, 100, 1000])
def test_frame_sizes_and_byte_counts(rate, fmt, frame_ms):
    x = tone(SOURCE_RATE * 3 // 10 + 11, seed=frame_ms)
    framer = AudioFramer(fmt, rate, frame_ms)
    pushed, tail = run_segment(framer, x, seed=rate + frame_ms)
    payloads = pushed + tail
    size = expected_frame_samples(rate, frame_ms) * BYTES_PER_SAMPLE[fmt]
    assert framer.frame_samples * BYTES_PER_SAMPLE[fmt] == size
    assert all(len(p) == size for p in payloads[:-1])
    assert 0 < len(payloads[-1]) <= size
    assert sum(len(p) for p in payloads) == framer.samples_sent * BYTES_PER_SAMPLE[fmt]
    want = x.size if rate == SOURCE_RATE else soxr.resample(x, SOURCE_RATE, rate).size
    assert framer.samples_sent == want
    assert framer.segment_samples == want


@pytest.mark.parametrize(
    "fmt, atol", [("pcm_f32le", 1e-7), ("pcm_s16le", 1.0 / 32767), ("pcm_mulaw", 0.03)]
)
def test_formats_round_trip(fmt, atol):
    x = tone(4800)
    framer = AudioFramer(fmt, SOURCE_RATE, frame_ms=50)
    payloads = framer.push(x) + framer.end_segment()
    got = np.concatenate([decode_samples(p, fmt) for p in payloads])
    assert got.shape == x.shape
    np.testing.assert_allclose(got, x, atol=atol)


def test_source_rate_bypasses_resampler_and_frames_exactly():
    framer = AudioFramer("pcm_f32le", SOURCE_RATE, frame_ms=10)  # 240 samples a frame
    assert framer.push(np.zeros(239, np.float32)) == []
    frames = framer.push(np.zeros(242, np.float32))
    assert [len(f) for f in frames] == [960, 960]
    assert framer.samples_sent == 480
    assert [len(f) for f in framer.end_segment()] == [4]
    assert framer.samples_sent == 481


def test_out_of_range_samples_are_clipped():
    framer = AudioFramer("pcm_f32le", SOURCE_RATE, frame_ms=10)
    payloads = framer.push(np.array([2.0, -3.0, 0.25], np.float32)) + framer.end_segment()
    np.testing.assert_array_equal(decode_samples(payloads[0], "pcm_f32le"), [1.0, -1.0, 0.25])


def test_segment_counters_and_offsets():
    framer = AudioFramer("pcm_s16le", 16000, frame_ms=20)
    first, second = tone(2400, seed=1), tone(5000, seed=2)
    a_push, a_tail = run_segment(framer, first, seed=3)
    a_samples = sum(len(p) for p in a_push + a_tail) // 2
    assert framer.segment_samples == a_samples == framer.samples_sent
    assert a_samples == soxr.resample(first, SOURCE_RATE, 16000).size

    # The ended segment's total stays readable until the next segment starts.
    b_push = framer.push(second)
    assert framer.segment_samples == sum(len(p) for p in b_push) // 2
    b_tail = framer.end_segment()
    b_samples = sum(len(p) for p in b_push + b_tail) // 2
    assert framer.segment_samples == b_samples
    assert framer.samples_sent - framer.segment_samples == a_samples  # offset of segment 1
    assert framer.ms(framer.samples_sent) == pytest.approx((a_samples + b_samples) / 16.0)
    # Each segment is resampled on its own: no filter state crosses the boundary.
    assert b_samples == soxr.resample(second, SOURCE_RATE, 16000).size


def test_frames_never_span_segments():
    framer = AudioFramer("pcm_s16le", SOURCE_RATE, frame_ms=100)  # 2400 samples a frame
    assert framer.push(np.zeros(1000, np.float32)) == []
    assert [len(p) for p in framer.end_segment()] == [2000]
    assert framer.push(np.zeros(2000, np.float32)) == []
    assert [len(p) for p in framer.end_segment()] == [4000]


def test_empty_pushes_and_empty_segments():
    for rate in (SOURCE_RATE, 8000):
        framer = AudioFramer("pcm_s16le", rate, frame_ms=20)
        assert framer.push(np.zeros(0, np.float32)) == []
        assert framer.end_segment() == []
        assert framer.end_segment() == []
        assert framer.samples_sent == 0 and framer.segment_samples == 0


@pytest.mark.parametrize("rate", SUPPORTED_RATES)
def test_one_sample_segment(rate):
    framer = AudioFramer("pcm_s16le", rate, frame_ms=20)
    one = np.array([0.5], np.float32)
    payloads = framer.push(one) + framer.end_segment()
    want = 1 if rate == SOURCE_RATE else soxr.resample(one, SOURCE_RATE, rate).size
    assert all(payloads)  # never an empty payload
    assert sum(len(p) for p in payloads) == 2 * want == 2 * framer.samples_sent


def test_bad_arguments_rejected():
    with pytest.raises(ValueError):
        AudioFramer("pcm_s16le", 11025, 20)
    with pytest.raises(ValueError):
        AudioFramer("opus", 24000, 20)
    with pytest.raises(ValueError):
        AudioFramer("pcm_s16le", 24000, 0)
    framer = AudioFramer("pcm_s16le", 24000, 20)
    with pytest.raises(ValueError):
        framer.push(np.zeros((10, 2), np.float32))


def test_float64_input_is_accepted():
    framer = AudioFramer("pcm_f32le", SOURCE_RATE, frame_ms=10)
    payloads = framer.push(np.full(240, 0.5)) + framer.end_segment()
    assert len(payloads) == 1
    got = decode_samples(payloads[0], "pcm_f32le")
    np.testing.assert_array_equal(got, np.full(240, 0.5, np.float32))


@pytest.mark.parametrize("rate", [SOURCE_RATE, 16000, 44100])
@pytest.mark.parametrize("fmt", FORMATS)
def test_payloads_are_the_frame_by_frame_encoding(rate, fmt):
    # Chunks are encoded whole and cut into frames; the bytes must equal
    # encoding each frame's samples on its own, whatever the chunking.
    x = tone(SOURCE_RATE // 2 + 5, seed=7)
    x[100:102] = [1.7, -2.5]  # clipped on the way
    if rate == SOURCE_RATE:
        x[103] = np.nan  # (the resampler would smear a NaN over its whole filter)
    chunks = random_chunks(x, seed=11)
    framer = AudioFramer(fmt, rate, frame_ms=20)
    got = [p for chunk in chunks for p in framer.push(chunk)] + framer.end_segment()
    if rate == SOURCE_RATE:
        stream = x
    else:  # the same streamed resampling, chunk by chunk
        resampler = soxr.ResampleStream(SOURCE_RATE, rate, 1, dtype="float32")
        parts = [resampler.resample_chunk(c) for c in chunks if c.size]
        stream = np.concatenate(parts + [resampler.resample_chunk(np.zeros(0, np.float32),
                                                                  last=True)])
    size = framer.frame_samples
    assert got == [encode_samples(stream[i:i + size], fmt) for i in range(0, stream.size, size)]
