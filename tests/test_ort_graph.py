"""The backbone graph (realtime/engine/ort/graph.py) and its prepared-cache entry.

The quantized blocks dequantize to within half a step of the weights; the
graph has the fused operators it is meant to have; a checkpoint's graph is
built once per form and key, loaded from the cache afterwards (same hidden
states), and a torn or edited entry is rebuilt; random weights are never kept.
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest
import torch
from runtime_fixtures import fidelity_assets, tiny_assets

from realtime.engine.model.weights import load_checkpoint, write_checkpoint
from realtime.engine.ort import graph, graph_entry
from realtime.engine.ort.model import OrtGPT


def test_blocks_dequantize_within_half_a_step():
    bits = graph.INT4_BITS
    w = np.random.default_rng(0).standard_normal((24, 80)).astype(np.float32)  # K not a block multiple
    q, scale = graph.quantize_blocks(w, bits)
    assert q.dtype == np.uint8 and q.shape == (24, 3, graph.BLOCK * bits // 8)
    back = graph.dequantize_blocks(q, scale, bits, 80)
    step = np.repeat(np.abs(scale).reshape(24, 3), graph.BLOCK, axis=1)[:, :80]
    # Half a step, except where the block's positive peak sits one step above the range.
    assert (np.abs(back - w) <= step * 0.5 + 1e-6).mean() > 0.97
    assert np.abs(back - w).max() <= np.abs(scale).max() + 1e-6
    peak = np.abs(w).reshape(24, -1).max()
    assert np.abs(back).max() <= peak * (1 + 2.0 ** (1 - bits))


def test_channels_quantize_to_7_bits_within_half_a_step():
    w = np.random.default_rng(1).standard_normal((24, 80)).astype(np.float32)
    w[3] = 0.0  # a channel of zeros keeps a usable scale
    q, scale = graph.quantize_channels(w)
    assert q.dtype == np.int8 and q.shape == (80, 24) and scale.shape == (24,)
    assert np.abs(q.astype(np.int16)).max() == graph.INT8_WEIGHT_MAX == 63
    back = (q.astype(np.float32) * scale).T
    assert np.all(np.abs(back - w) <= scale[:, None] * 0.5 + 1e-6)
    assert np.all(back[3] == 0) and np.all(np.isfinite(scale))


@pytest.mark.parametrize("form, matmul", [("fp32", "MatMul"), ("int8", "MatMulInteger"),
                                          ("int4", "MatMulNBits"),
                                          (graph.PROMPT_FORM, "DynamicQuantizeMatMul")])
def test_the_graph_has_the_fused_operators(tmp_path, form, matmul):
    import onnx

    a = tiny_assets()
    graph.write_backbone(a.shape, a.gpt_state, form, str(tmp_path))
    model = onnx.load(str(tmp_path / graph.GRAPH_FILE), load_external_data=False)
    ops = [n.op_type for n in model.graph.node]
    layers = a.shape.layers
    assert ops.count(matmul) == 4 * layers  # fused QKV, O, fused gate/up, down
    assert ops.count("GroupQueryAttention") == layers
    assert ops.count("SkipSimplifiedLayerNormalization") == 2 * layers
    names = [i.name for i in model.graph.input]
    assert names[:2] == ["inputs_embeds", "attention_mask"] and len(names) == 2 + 2 * layers


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(fidelity_assets(), str(tmp_path_factory.mktemp("ckpt")))


def _built(caplog) -> dict[str, str]:
    """Per form the log names: its graph "built" or "cached"."""
    out = {}
    for record in caplog.records:
        words = record.getMessage().split()
        if words[:2] == ["ort", "backbone"] and "from the prepared cache" in record.getMessage():
            out[words[2]] = "cached"
        elif words[:2] == ["ort", "backbone"] and "built from the weights" in record.getMessage():
            out[words[2]] = "built"
    caplog.clear()
    return out


def _hidden(model: OrtGPT) -> torch.Tensor:
    x = torch.randn(1, 5, model.shape.hidden, generator=torch.Generator().manual_seed(0))
    return model.prefill(x, torch.tensor([0]), model.new_cache(1, 16, 1))


def test_a_checkpoints_graph_is_built_once_then_loaded(checkpoint, tmp_path, caplog):
    cache = str(tmp_path / "cache")
    assets = load_checkpoint(checkpoint)
    prompts = graph.PROMPT_FORM
    with caplog.at_level(logging.INFO, logger=graph_entry.__name__):
        cold = OrtGPT(assets, "int8", 1, False, cache)
        assert _built(caplog) == {"int8": "built", prompts: "built"}
        warm = OrtGPT(assets, "int8", 1, False, cache)
        assert _built(caplog) == {"int8": "cached", prompts: "cached"}
        other = OrtGPT(assets, "int4", 1, False, cache)  # another form: another entry; the same prompt graph
        assert _built(caplog) == {"int4": "built", prompts: "cached"}
    # the int8 K/V cache's scales are kept with the graph, and calibrated alike for every form
    assert cold.kv_scales is not None and np.array_equal(warm.kv_scales, cold.kv_scales)
    assert np.array_equal(other.kv_scales, cold.kv_scales)
    torch.testing.assert_close(_hidden(warm), _hidden(cold), rtol=0, atol=0)
    entries = [n for n in os.listdir(cache) if n.startswith(graph_entry.KIND)]
    assert len(entries) == 3


def test_a_damaged_entry_is_rebuilt(checkpoint, tmp_path, caplog):
    cache = str(tmp_path / "cache")
    assets = load_checkpoint(checkpoint)
    first = _hidden(OrtGPT(assets, "fp32", 1, False, cache))
    entry = next(os.path.join(cache, n) for n in os.listdir(cache) if n.startswith(graph_entry.KIND))
    with open(os.path.join(entry, graph.DATA_FILE), "r+b") as f:  # flip bytes in the weights
        f.seek(4096)
        f.write(b"\x7f" * 64)
    with caplog.at_level(logging.INFO):
        again = _hidden(OrtGPT(assets, "fp32", 1, False, cache))
    assert "rebuilding it" in caplog.text and "built from the weights" in caplog.text
    torch.testing.assert_close(again, first, rtol=0, atol=0)


def test_random_weights_are_never_kept(tmp_path, caplog):
    cache = str(tmp_path / "cache")
    with caplog.at_level(logging.INFO, logger=graph_entry.__name__):
        OrtGPT(tiny_assets(), "int8", 1, False, cache)
    assert "not kept: tiny-random weights" in caplog.text
    assert not os.path.exists(cache) or not os.listdir(cache)


def test_the_logits_output_is_the_last_position_times_the_heads(tmp_path):
    """A graph given the code heads also outputs each row's last-position
    logits (what a decode step samples from); one without has no such output."""
    from realtime.engine.model.gpt_ends import head_weights
    from realtime.engine.ort.backbone import OrtBackbone
    from realtime.engine.ort.kv import OrtKV

    a = tiny_assets()
    heads = head_weights(a.embed)
    with_heads, without = tmp_path / "heads", tmp_path / "none"
    with_heads.mkdir()
    without.mkdir()
    graph.write_backbone(a.shape, a.gpt_state, "fp32", str(with_heads), heads=heads)
    graph.write_backbone(a.shape, a.gpt_state, "fp32", str(without))
    session = OrtBackbone(str(with_heads), 1, False)
    assert session.has_logits and session.logits_width == heads.shape[0]
    assert not OrtBackbone(str(without), 1, False).has_logits
    x = torch.randn(2, 3, a.shape.hidden, generator=torch.Generator().manual_seed(5))
    kv = OrtKV(a.shape, 2, 8, 2, np.float32)
    logits = torch.full((2, heads.shape[0]), float("nan"))
    hidden = session.run(x, np.ones((2, 3), np.int64), kv, 0, logits)
    torch.testing.assert_close(logits, hidden[:, -1] @ heads.T, rtol=1e-5, atol=1e-5)

