"""protocol.frames: the 12-byte binary audio header."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import protocol as p


def test_layout_is_little_endian_version_flags_segment_stream_seq():
    header = p.FrameHeader(flags=p.FLAG_SEGMENT_END | p.FLAG_UTTERANCE_END, segment=2,
                           stream=7, seq=258)
    data = p.pack_frame(header, b"\x01\x00")
    assert p.HEADER_SIZE == 12 and p.HEADER.format == "<BBHII"
    assert data == bytes.fromhex("01 03 0200 07000000 02010000 0100")


def test_unpack_returns_header_and_payload_view():
    data = p.pack_frame(p.FrameHeader(1, 3, 9, 4), b"abcd")
    header, payload = p.unpack_frame(data)
    assert header == p.FrameHeader(flags=1, segment=3, stream=9, seq=4)
    assert header.segment_end and not header.utterance_end
    assert isinstance(payload, memoryview) and bytes(payload) == b"abcd"


def test_reserved_flag_bits_are_carried_and_ignored():
    header, _ = p.unpack_frame(bytes([1, 0xF4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]))
    assert header.flags == 0xF4 and not header.segment_end and not header.utterance_end


@pytest.mark.parametrize("data", [b"", b"\x01" * 11, b"\x01" * 12])
def test_short_data_or_an_empty_payload_is_refused(data):
    with pytest.raises(ValueError):
        p.unpack_frame(data)


def test_an_unknown_version_is_refused():
    data = p.pack_frame(p.FrameHeader(0, 0, 0, 0, version=2), b"xx")
    with pytest.raises(ValueError, match="version"):
        p.unpack_frame(data)


def test_an_empty_payload_is_never_packed():
    with pytest.raises(ValueError):
        p.pack_frame(p.FrameHeader(0, 0, 0, 0), b"")


@pytest.mark.parametrize(
    "fields",
    [dict(flags=256), dict(flags=-1), dict(segment=65536), dict(stream=2**32), dict(seq=2**32),
     dict(seq=-1), dict(version=256), dict(seq=1.0), dict(flags=True)],
)
def test_fields_outside_their_unsigned_range_are_refused(fields):
    base = dict(flags=0, segment=0, stream=0, seq=0)
    with pytest.raises(ValueError):
        p.FrameHeader(**{**base, **fields})


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 0xFF), st.integers(0, 0xFFFF), st.integers(0, 2**32 - 1),
       st.integers(0, 2**32 - 1), st.binary(min_size=1, max_size=64))
def test_headers_round_trip_over_every_range(flags, segment, stream, seq, payload):
    header = p.FrameHeader(flags, segment, stream, seq)
    data = p.pack_frame(header, payload)
    assert len(data) == p.HEADER_SIZE + len(payload)
    back, view = p.unpack_frame(bytearray(data))
    assert back == header and bytes(view) == payload


def test_the_byte_level_example_of_the_protocol_document():
    payload = p.encode_samples(np.array([0.0, 0.5]), "pcm_s16le")
    data = p.pack_frame(p.FrameHeader(flags=3, segment=2, stream=7, seq=258), payload)
    assert data.hex(" ") == "01 03 02 00 07 00 00 00 02 01 00 00 00 00 00 40"
