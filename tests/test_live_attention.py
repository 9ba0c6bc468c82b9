"""The live-length decode attention equals the model's current attention:
Triton's kernels in its interpreter on the CPU (skipped where Triton is
absent) and the plain torch reference, padding rows and slot 0 included."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # conftest sets it first: triton may be imported early

import pytest
import torch

from realtime.engine.cuda import live_attention as la
from realtime.engine.model.gpt import KVCache, StaticGPT
from realtime.engine.model.shapes import TINY

needs_triton = pytest.mark.skipif(la.available("cpu") is not None, reason=str(la.available("cpu")))


def _cache(slots: int = 6, max_len: int = 256, seed: int = 0) -> KVCache:
    torch.manual_seed(seed)
    cache = KVCache(TINY, slots, max_len, torch.float32, torch.device("cpu"))
    for k, v in zip(cache.k, cache.v):
        k.normal_()
        v.normal_()
    return cache


def _rows(cache: KVCache, slots, pos):
    """Queries [B, H, Dh], slot ids, positions; padding rows use the scratch slot at 0."""
    slots = torch.tensor(slots)
    pos = torch.tensor(pos)
    q = torch.randn(len(slots), TINY.heads, TINY.head_dim)
    return q, slots, pos


def _current(cache, q, slots, pos, kv_len, in_place=False):
    """The model's attention as StaticGPT.decode runs it (layer 0's cache)."""
    mask = StaticGPT._mask(slots, pos, cache, kv_len, in_place)
    k, v = cache.k[0], cache.v[0]
    if in_place:
        return StaticGPT._attend_in_place(q, slots, k, v, mask, kv_len).view(q.shape)
    keys, values = k[:, :, :kv_len].index_select(0, slots), v[:, :, :kv_len].index_select(0, slots)
    return torch.nn.functional.scaled_dot_product_attention(q.unsqueeze(2), keys, values,
                                                           attn_mask=mask).squeeze(2)


# Slot 0 first, slots out of order, a row at position 0, one at the bucket's
# last position, one past a block edge; two padding rows (scratch slot 6, position 0).
SLOTS = [0, 3, 5, 1, 6, 6]
POS = [37, 0, 255, 64, 0, 0]


def test_reference_equals_the_current_attention():
    cache = _cache()
    q, slots, pos = _rows(cache, SLOTS, POS)
    want = _current(cache, q, slots, pos, 256)
    got = la.reference_attention(q, cache.k[0], cache.v[0], slots, pos + 1, 256)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


@needs_triton
@pytest.mark.parametrize("kv_len", [256, 128 + 64])
def test_kernels_equal_the_current_attention_gathered_and_in_place(kv_len):
    cache = _cache()
    pos = [min(p, kv_len - 1) for p in POS]
    q, slots, pos_t = _rows(cache, SLOTS, pos)
    got = la.decode_attention(q, cache.k[0], cache.v[0], slots, pos_t + 1, kv_len)
    torch.testing.assert_close(got, _current(cache, q, slots, pos_t, kv_len), rtol=1e-4, atol=1e-5)
    # In place needs distinct real slots (the padding rows share the scratch one).
    real = slice(0, 4)
    in_place = _current(cache, q[real], slots[real], pos_t[real], kv_len, in_place=True)
    torch.testing.assert_close(got[real], in_place, rtol=1e-4, atol=1e-5)


@needs_triton
def test_kernels_read_nothing_past_a_rows_length():
    cache = _cache()
    q, slots, pos = _rows(cache, [2, 4], [10, 130])
    before = la.decode_attention(q, cache.k[0], cache.v[0], slots, pos + 1, 256)
    for t in (cache.k[0], cache.v[0]):
        t[2, :, 11:] = float("nan")  # stale entries beyond slot 2's length
        t[4, :, 131:] = float("nan")
    after = la.decode_attention(q, cache.k[0], cache.v[0], slots, pos + 1, 256)
    assert torch.equal(before, after) and not after.isnan().any()


@needs_triton
def test_one_row_splits_the_length_and_still_agrees():
    cache = _cache()
    assert la.split_count(1, TINY.heads, 256) == 4  # one chunk per 64-position block
    q, slots, pos = _rows(cache, [5], [200])
    got = la.decode_attention(q, cache.k[0], cache.v[0], slots, pos + 1, 256)
    torch.testing.assert_close(got, _current(cache, q, slots, pos, 256), rtol=1e-4, atol=1e-5)


def test_split_count_follows_the_shape():
    assert la.split_count(1, 12, 2048) == 22  # 264 programs wanted, 12 heads
    assert la.split_count(64, 12, 2048) == 1
    assert la.split_count(1, 12, 64) == 1  # never a chunk below one block
