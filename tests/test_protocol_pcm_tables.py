"""protocol.pcm's mu-law tables, rebuilt here: the module builds them once at
import, so a test must call the builders itself for a change to them to fail
here (a mutation run imports the module before the change takes effect)."""

from __future__ import annotations

import numpy as np
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
