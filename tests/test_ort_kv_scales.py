"""The int8 K/V cache of the int forms (realtime/engine/ort/kv_scales.py, graph.py).

The calibration's forward is the torch decoder's (its K, rotated, and V
equal the ones the decoder caches); the scales are whole rotary pairs (a
channel and its partner share one); a graph with the int8 cache stores
each position's K and V within half a scale of the fp32 ones, channel by
channel (a scale applied to the wrong channel would not be); the int forms
decode over int8 buffers, fp32 over fp32; and the prompt graph reads and
writes the cache with the decode graph's scales.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import fidelity_assets, one_torch_thread  # noqa: F401  (a fixture)

from realtime.engine.model.gpt import StaticGPT
from realtime.engine.ort import graph, kv_scales
from realtime.engine.ort.backbone import OrtBackbone
from realtime.engine.ort.kv import OrtKV
from realtime.engine.ort.model import OrtGPT

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def torch_model():
    a = fidelity_assets()
    return StaticGPT(a.shape, a.gpt_state, a.embed, CPU, torch.float32)


@pytest.fixture(scope="module")
def scales(torch_model):
    return kv_scales.calibrate(torch_model, fidelity_assets())


def _torch_kv(torch_model, x: torch.Tensor):
    cache = torch_model.new_cache(1, x.shape[1], 1)
    torch_model.prefill(x.unsqueeze(0) if x.dim() == 2 else x, torch.tensor([0]), cache)
    return cache


def test_the_calibration_forward_is_the_decoders(torch_model):
    a = fidelity_assets()
    x = torch.randn(1, 12, a.shape.hidden, generator=torch.Generator().manual_seed(3))
    cache = _torch_kv(torch_model, x)
    for i, (k, v) in enumerate(kv_scales.forward_kv(a.shape, a.gpt_state, x)):
        assert torch.allclose(k[0], cache.k[i][0, :, :12], atol=1e-5, rtol=1e-4), i
        assert torch.allclose(v[0], cache.v[i][0, :, :12], atol=1e-5, rtol=1e-4), i


def test_scales_are_positive_and_shared_by_rotary_pairs(scales):
    a = fidelity_assets()
    half = a.shape.head_dim // 2
    assert scales.shape == (a.shape.layers, 2, a.shape.kv_heads, a.shape.head_dim)
    assert scales.dtype == np.float32 and np.all(scales > 0)
    assert np.array_equal(scales[:, 0, :, :half], scales[:, 0, :, half:])  # K: the pair's norm
    assert not np.array_equal(scales[:, 1, :, :half], scales[:, 1, :, half:])  # V: its own


def test_the_int8_cache_holds_each_channel_within_half_a_scale(tmp_path, torch_model, scales):
    """An fp32 graph with the int8 cache isolates the cache's rounding: its
    first layer's stored K/V, dequantized, against the torch decoder's fp32
    K/V within half a scale (later layers see attention over the rounded
    cache: within four)."""
    a = fidelity_assets()
    graph.write_backbone(a.shape, a.gpt_state, "fp32", str(tmp_path), scales)
    assert np.array_equal(kv_scales.load(str(tmp_path)), scales)
    backbone = OrtBackbone(str(tmp_path), 1, False)
    assert backbone.kv_dtype is np.int8
    tokens = 10
    x = torch.randn(1, tokens, a.shape.hidden, generator=torch.Generator().manual_seed(5)) * 0.5
    kv = OrtKV(a.shape, 1, 16, 1, np.int8)
    kv.place([0], [0])
    backbone.run(x, np.ones((1, tokens), dtype=np.int64), kv, 0)
    cache = _torch_kv(torch_model, x)
    for i in range(a.shape.layers):
        for j, (ours, ref) in enumerate(((kv.k[i], cache.k[i]), (kv.v[i], cache.v[i]))):
            scale = scales[i, j][:, None, :]  # [H, 1, Dh]
            want = ref[0, :, :tokens].numpy()
            inside = np.abs(want) <= 127 * scale  # what the range holds (MARGIN: nearly all)
            assert inside.mean() > 0.99
            got = ours[0, :, :tokens].astype(np.float32) * scale
            steps = 0.5 if i == 0 else 4.0
            bound = np.broadcast_to(scale, want.shape)[inside] * steps + 1e-6
            assert np.all(np.abs(got - want)[inside] <= bound), (i, j)


@pytest.mark.parametrize("form, dtype", [("fp32", np.float32), ("int8", np.int8), ("int4", np.int8)])
def test_the_int_forms_decode_over_an_int8_cache(form, dtype):
    model = OrtGPT(fidelity_assets(), form, 1, False, None)
    assert model.backbone.kv_dtype is dtype
    assert model.new_cache(2, 16, 2).k[0].dtype == dtype
    assert (model.kv_scales is None) == (form == "fp32")
    if model.prompts is not None:  # the prompt graph shares the decode graph's cache
        assert model.prompts.kv_dtype is dtype


def test_one_calibration_serves_every_form_built_from_the_same_weights(caplog):
    import logging

    from realtime.engine.model.shapes import TINY
    from realtime.engine.model.weights import random_assets

    assets = random_assets(TINY, 7)
    with caplog.at_level(logging.INFO, logger=kv_scales.__name__):
        first = OrtGPT(assets, "int8", 1, False, None)
        second = OrtGPT(assets, "int4", 1, False, None)
    assert sum("calibrated" in r.getMessage() for r in caplog.records) == 1
    assert np.array_equal(first.kv_scales, second.kv_scales)


def test_the_cache_type_is_measured_and_the_verdict_kept(tmp_path, monkeypatch, caplog):
    """Where int8 attention loses, the int forms keep fp32 K/V; the verdict is
    kept per machine (a second start measures nothing)."""
    import dataclasses
    import logging

    from realtime.engine.model.shapes import TINY
    from realtime.engine.ort import kv_choice

    shape = dataclasses.replace(TINY, hidden=kv_choice.SMALL_HIDDEN, heads=4, kv_heads=4)
    timed = []

    def measure(*args):
        timed.append(args)
        return {"int8": 2.0, "fp32": 1.0}

    monkeypatch.setattr(kv_choice, "measure", measure)
    cache = str(tmp_path)
    with caplog.at_level(logging.INFO, logger=kv_choice.__name__):
        assert kv_choice.int8_cache_pays(shape, 1, False, cache) is False
        assert kv_choice.int8_cache_pays(shape, 1, False, cache) is False
    assert len(timed) == 1 and "measured earlier" in caplog.records[-1].getMessage()
    assert kv_choice.int8_cache_pays(TINY, 1, False, cache) is True  # small: not timed
    assert len(timed) == 1


def test_the_measure_times_both_caches_on_real_sessions():
    import dataclasses

    from realtime.engine.model.shapes import TINY
    from realtime.engine.ort import kv_choice

    ms = kv_choice.measure(dataclasses.replace(TINY, hidden=128, heads=4, kv_heads=4), 1, False)
    assert set(ms) == {"int8", "fp32"} and all(t > 0 for t in ms.values())


def test_an_int_form_keeps_fp32_kv_where_int8_loses(monkeypatch):
    from realtime.engine.ort import kv_choice

    monkeypatch.setattr(kv_choice, "int8_cache_pays", lambda *args: False)
    model = OrtGPT(fidelity_assets(), "int8", 1, False, None)
    assert model.backbone.kv_dtype is np.float32 and model.kv_scales is None
    assert model.new_cache(1, 16, 1).k[0].dtype == np.float32
    if model.prompts is not None:
        assert model.prompts.kv_dtype is np.float32


def test_buffers_of_another_type_are_refused():
    from realtime.engine.ort.backbone import BackboneError

    model = OrtGPT(fidelity_assets(), "int8", 1, False, None)
    wrong = OrtKV(model.shape, 1, 16, 1, np.float32)
    wrong.place([0], [0])
    with pytest.raises(BackboneError, match="int8"):
        model.backbone.run(torch.zeros(1, 2, model.shape.hidden), np.ones((1, 2), dtype=np.int64), wrong, 0)
