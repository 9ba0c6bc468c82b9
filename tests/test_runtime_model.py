"""StaticGPT and KVCache as built: every tensor on the model's device and in
its dtype (checked on ``meta`` in bf16, where a wrong one cannot hide), the
KV cache's size, the refusals. Numerics are tests/test_runtime_decoder.py's."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from runtime_fixtures import fidelity_assets

from realtime.engine.model.gpt import KVCache, StaticGPT
from realtime.engine.model.shapes import TINY


def _matrices(m: StaticGPT):
    return [x for layer in m.layers for x in (layer.w_qkv, layer.w_o, layer.w_gate_up, layer.w_down)]


def test_every_tensor_is_on_the_models_device_in_its_dtype():
    a = fidelity_assets()
    m = StaticGPT(a.shape, a.gpt_state, a.embed, torch.device("meta"), torch.bfloat16)
    bf16 = [m.emb_text, m.emb_code, m.norm, m.cos, m.sin, *(x.w_t for x in _matrices(m)),
            *(t for layer in m.layers for t in (layer.ln1, layer.ln2))]
    heads = m.heads.w_t
    assert all(isinstance(t, torch.Tensor) and t.device.type == "meta" for t in bf16 + [heads])
    assert all(t.dtype == torch.bfloat16 for t in bf16)
    assert heads.dtype == torch.float32  # logits are always fp32
    q, v, d = a.shape.num_vq, a.shape.num_audio_tokens, a.shape.hidden
    assert m.emb_code.shape == (q, v, d) and m.heads.shape == (d, q * v)
    h, hd = a.shape.heads, a.shape.head_dim
    assert m.layers[0].w_qkv.shape == (d, 3 * h * hd)
    assert m.layers[0].w_gate_up.shape == (d, 2 * a.shape.intermediate)


def test_every_matrix_is_one_fp32_copy_taken_from_the_prepared_layout():
    a = fidelity_assets()
    m = StaticGPT(a.shape, a.gpt_state, a.embed, torch.device("cpu"), torch.float32)
    fp32_bytes = sum(x.shape[0] * x.shape[1] * 4 for x in (*_matrices(m), m.heads))
    assert m.weight_nbytes == fp32_bytes
    assert all(x.w_t.is_contiguous() for x in (*_matrices(m), m.heads))
    q = a.gpt_state["layers.0.self_attn.q_proj.weight"]
    torch.testing.assert_close(m.layers[0].w_qkv.w_t[:, :q.shape[0]], q.t(), rtol=0, atol=0)


def test_kv_cache_size():
    cache = KVCache(TINY, slots=3, max_len=64, dtype=torch.bfloat16, device="meta")
    per_layer = 2 * (3 + 1) * TINY.kv_heads * 64 * TINY.head_dim * 2  # K and V, slots + scratch, bf16
    assert cache.nbytes == TINY.layers * per_layer
    assert cache.k[0].shape == (4, TINY.kv_heads, 64, TINY.head_dim) and cache.scratch == 3


def test_grouped_query_attention_is_refused():
    a = fidelity_assets()
    shape = dataclasses.replace(a.shape, kv_heads=a.shape.heads // 2)
    with pytest.raises(ValueError, match="grouped-query attention is not used by ChatTTS"):
        StaticGPT(shape, a.gpt_state, a.embed, torch.device("meta"), torch.bfloat16)


def test_attention_in_place_equals_the_gathered_rows():
    # Every slot attending over the cache as it lies, then the rows picked
    # out, is the same attention as gathering the rows' slots: hidden states
    # and the K/V written, at scattered slots and positions, with padding
    # rows sharing the scratch slot.
    a = fidelity_assets()
    m = StaticGPT(a.shape, a.gpt_state, a.embed, torch.device("cpu"), torch.float32)
    cache = KVCache(a.shape, slots=6, max_len=64, dtype=torch.float32, device="cpu")
    gen = torch.Generator().manual_seed(3)
    for t in cache.k + cache.v:
        t.copy_(torch.randn(t.shape, generator=gen))
    saved = [t.clone() for t in cache.k + cache.v]
    x = torch.randn(5, a.shape.hidden, generator=gen)
    slots = torch.tensor([4, 0, 2, cache.scratch, cache.scratch])
    pos = torch.tensor([40, 3, 63, 0, 0])
    gathered = m.decode(x, slots, pos, cache, 64)
    written = [t[:5].clone() for t in cache.k + cache.v]  # without the scratch slot
    for t, s in zip(cache.k + cache.v, saved):
        t.copy_(s)
    in_place = m.decode(x, slots, pos, cache, 64, in_place=True)
    torch.testing.assert_close(in_place[:3], gathered[:3], rtol=1e-5, atol=1e-5)
    for t, w in zip(cache.k + cache.v, written):
        torch.testing.assert_close(t[:5], w, rtol=1e-5, atol=1e-5)  # later layers: rounding
    assert not cache.reads_in_place(2) and cache.reads_in_place(3)  # 7 slots: 3 x 2 < 7 <= 3 x 3
