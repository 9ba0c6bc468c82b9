"""protocol.pcm's mu-law tables, rebuilt here: the module builds them once at
import, so a test must call the builders itself for a change to them to fail
here (a mutation run imports the module before the change takes effect)."""

from __future__ import annotations

import numpy as np
import pytest
from test_protocol_pcm import ref_mulaw_encode

from protocol import pcm


def test_encode_table_is_g711_for_every_int16():
    table = pcm._mulaw_encode_table()
    assert table.dtype == np.uint8 and table.shape == (65536,)
    picks = range(0, 65536, 7)  # every 7th value, both signs, both clip ends
    assert [int(table[i]) for i in picks] == [ref_mulaw_encode(i - 32768) for i in picks]
    assert int(table[32768]) == 0xFF and int(table[-1]) == 0x80 and int(table[0]) == 0x00


def test_decode_table_is_the_middle_of_each_interval():
    table = pcm._mulaw_decode_table()
    assert table.dtype == np.float32 and table.shape == (256,)
    encode = pcm._mulaw_encode_table()
    for code in range(256):
        value = int(round(float(table[code]) * pcm.S16_SCALE))
        # Decodes back into its own interval; 0x7F is mu-law's "negative zero".
        assert encode[value + 32768] == (0xFF if code == 0x7F else code), code
    assert table[0xFF] == 0.0 and table[0x80] == np.float32(32124 / 32767)
    assert table[0x00] == np.float32(-32124 / 32767)


FORMATS = ("pcm_s16le", "pcm_f32le", "pcm_mulaw")


def test_long_input_encodes_as_its_pieces_do():
    # More than one internal block (and exactly one): the bytes equal those of
    # the samples encoded in small pieces, clipping and NaN included.
    rng = np.random.default_rng(0)
    for n in (pcm._BLOCK, 3 * pcm._BLOCK + 123):
        x = (rng.standard_normal(n) * 0.8).astype(np.float32)
        x[::97] = np.nan
        for fmt in FORMATS:
            pieces = b"".join(pcm.encode_samples(x[i:i + 1000], fmt) for i in range(0, n, 1000))
            assert pcm.encode_samples(x, fmt) == pieces, (n, fmt)


def test_each_side_of_the_range_is_clipped_on_its_own():
    for x, want in (([-1.5, 0.0], [-32767, 0]), ([0.0, 1.5], [0, 32767]), ([-1.0, 1.0], [-32767, 32767])):
        got = np.frombuffer(pcm.encode_samples(np.array(x, np.float32), "pcm_s16le"), "<i2")
        assert got.tolist() == want, x
        f32 = np.frombuffer(pcm.encode_samples(np.array(x, np.float32), "pcm_f32le"), "<f4")
        assert f32.tolist() == [max(-1.0, min(1.0, v)) for v in x]


def test_big_endian_hosts_still_write_little_endian(monkeypatch):
    x = np.array([0.5, -0.25, 2.0], np.float32)
    want = {fmt: pcm.encode_samples(x, fmt) for fmt in FORMATS}
    monkeypatch.setattr(pcm, "_LITTLE_ENDIAN", False)
    assert {fmt: pcm.encode_samples(x, fmt) for fmt in FORMATS} == want


def test_mulaw_bytes_decode_through_the_table():
    data = bytes(range(256))
    assert np.array_equal(pcm.decode_samples(data, "pcm_mulaw"), pcm._mulaw_decode_table())


def test_error_messages():
    with pytest.raises(ValueError, match="unknown sample format 'pcm_x'"):
        pcm.encode_samples(np.zeros(2, np.float32), "pcm_x")
    with pytest.raises(ValueError, match="3 bytes is not a whole number of pcm_s16le samples"):
        pcm.decode_samples(b"\x00\x01\x02", "pcm_s16le")
