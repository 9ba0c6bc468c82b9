"""The speech endpoint's audio out (realtime.audio.encoders.EncodedStream):
an utterance's 24 kHz samples become the response format's bytes a piece at
a time, counted as the utterance reports them, with nothing lost at a codec
that holds pieces back."""

from __future__ import annotations

import numpy as np
import pytest

from realtime.audio.encoders import EncodedStream, PcmEncoder, encoder_for
from realtime.audio.formats import available_formats, response_stream

RATE = 24000


def _tone(n: int, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(n) * 0.1).astype(np.float32)


def test_pieces_are_cut_at_piece_ms_and_counted_per_segment():
    stream = EncodedStream(PcmEncoder(), 100)  # 2,400 samples a piece, 2 bytes a sample
    assert stream.push(_tone(1000)) == []  # not a whole piece yet
    out = stream.push(_tone(5000))  # 6,000 in all: two pieces, 1,200 left
    assert [len(p) for p in out] == [4800, 4800]
    assert stream.samples_sent == stream.segment_samples == 4800
    assert [len(p) for p in stream.end_segment()] == [2400]  # the rest, shorter
    assert stream.samples_sent == stream.segment_samples == 6000  # the ended segment's total
    assert stream.ms(stream.samples_sent) == 250.0
    stream.push(_tone(2400))  # the next segment starts counting afresh
    assert stream.segment_samples == 2400 and stream.samples_sent == 8400
    assert stream.end_segment() == [] and stream.segment_samples == 2400
    assert stream.end_segment() == [] and stream.segment_samples == 0  # a segment given nothing


def test_the_bytes_are_the_encoders_own_for_the_same_samples():
    audio = _tone(10_000, seed=3)
    stream = EncodedStream(PcmEncoder(), 100)
    got = b"".join(stream.push(audio[:3000]) + stream.push(audio[3000:]) + stream.end_segment())
    assert got == PcmEncoder().push(audio)


@pytest.mark.parametrize("fmt", [f for f in ("mp3", "opus", "flac", "aac") if f in available_formats()])
def test_a_codec_that_holds_pieces_back_loses_nothing(fmt):
    """Pieces a codec keeps come out empty; the bytes follow later or from
    ``finish``, and together they decode to the audio's length."""
    av = pytest.importorskip("av")
    import io

    stream = response_stream(fmt, 100)
    audio = _tone(RATE, seed=5)  # one second
    payloads = stream.push(audio) + stream.end_segment()
    assert len(payloads) == 10 and stream.samples_sent == RATE
    data = b"".join(payloads) + stream.finish()
    with av.open(io.BytesIO(data)) as container:
        seconds = sum(frame.samples / frame.sample_rate for frame in container.decode(audio=0))
    assert seconds == pytest.approx(1.0, abs=0.1)


def test_every_response_format_makes_a_stream():
    for fmt in available_formats():
        stream = response_stream(fmt, 100)
        assert stream.sample_rate == RATE and stream.pre_skip is None
        assert stream.encoder.content_type == encoder_for(fmt).content_type
