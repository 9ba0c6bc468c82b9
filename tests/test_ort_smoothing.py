"""Outlier channels folded into the int8 graphs' weights (realtime/engine/ort/smoothing.py).

The fold keeps the function (the backbone's K/V and the activations the
matrices see, scaled back, equal the unfolded ones), flattens the
activations' channels, and where a model has outlier channels (here: some
channels of every norm's gain raised 20x, as trained models raise a few)
the int8 graph built from the folded weights is closer to fp32 than one
built from the raw weights.
"""

from __future__ import annotations

import copy

import pytest
import torch
from runtime_fixtures import fidelity_assets

from realtime.engine.model.gpt import StaticGPT
from realtime.engine.ort import kv_choice, kv_scales, smoothing
from realtime.engine.ort.model import OrtGPT

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _outlier_assets():
    """The fidelity weights with four channels of every norm's gain (each
    norm its own) raised 20x."""
    a = copy.deepcopy(fidelity_assets())
    a.extra.clear()
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, weight in a.gpt_state.items():
            if name.endswith("layernorm.weight"):
                weight[torch.randperm(a.shape.hidden, generator=gen)[:4]] *= 20.0
    return a


def _inputs(model: OrtGPT, length: int = 12) -> torch.Tensor:
    """Embeddings of random codes: inputs as the runtime feeds them."""
    codes = torch.randint(0, model.shape.num_audio_tokens, (length, model.shape.num_vq),
                          generator=torch.Generator().manual_seed(2))
    return model.embed_codes(codes).unsqueeze(0).float()


def test_the_fold_keeps_the_function_and_flattens_the_channels():
    a = _outlier_assets()
    model = OrtGPT(a, "fp32", 1, False, None, prompts=False)  # the embeddings the calibration reads
    folded = smoothing.smoothed(model, a)
    raw_peaks, folded_peaks = [], []
    raw = kv_scales.forward_kv(a.shape, a.gpt_state, _inputs(model), raw_peaks)
    new = kv_scales.forward_kv(a.shape, folded, _inputs(model), folded_peaks)
    for (k0, v0), (k1, v1) in zip(raw, new):
        torch.testing.assert_close(k1, k0, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(v1, v0, rtol=1e-4, atol=1e-4)
    for before, after in zip(raw_peaks, folded_peaks):
        for x0, x1 in zip(before, after):  # QKV's, gate/up's and down's inputs
            assert (x1.max() / x1.median()) < (x0.max() / x0.median())
    assert set(folded) == set(a.gpt_state) and len(folded) == len(a.gpt_state)
    assert folded["norm.weight"] is a.gpt_state["norm.weight"]  # the final norm feeds no int8 matrix


def test_the_int8_graph_from_folded_weights_is_closer_to_fp32(monkeypatch):
    """The matrices' share alone: fp32 K/V (the int8 cache's own error on
    this outlier model would blur it)."""
    monkeypatch.setattr(kv_choice, "int8_cache_pays", lambda *args: False)
    a = _outlier_assets()
    reference = StaticGPT(a.shape, a.gpt_state, a.embed, torch.device("cpu"), torch.float32)
    x = _inputs(OrtGPT(a, "fp32", 1, False, None, prompts=False))
    want = reference.prefill(x, torch.tensor([0]), reference.new_cache(1, 16, 1))

    def error(model: OrtGPT) -> float:
        got = model.prefill(x, torch.tensor([0]), model.new_cache(1, 16, 1))
        return ((got - want).norm() / want.norm()).item()

    smoothed = error(OrtGPT(a, "int8", 1, False, None, prompts=False))
    monkeypatch.setattr(smoothing, "smoothed", lambda model, assets: assets.gpt_state)
    raw = error(OrtGPT(a, "int8", 1, False, None, prompts=False))
    assert smoothed < 0.85 * raw, (smoothed, raw)  # 0.24 against 0.32 here
