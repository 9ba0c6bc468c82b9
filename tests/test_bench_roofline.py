"""bench/roofline.py: the bytes it counts are the bytes a decode step reads."""

from __future__ import annotations

import pytest

from bench import roofline
from realtime.engine.model.shapes import FULL, TINY
from tests.runtime_fixtures import tiny_assets


def _step_matrices(assets) -> int:
    """Weights of every matrix a decode step multiplies, from the real assets."""
    body = sum(t.numel() for k, t in assets.gpt_state.items() if k.endswith("proj.weight"))
    heads = sum(m.weight.numel() for m in assets.embed.head_code)
    return body + heads


def test_the_bytes_are_the_real_models_matrices():
    assert roofline.step_bytes("fp32", TINY) == 4 * _step_matrices(tiny_assets())


def test_int8_keeps_its_heads_in_fp32():
    heads = 4 * FULL.num_vq * FULL.num_audio_tokens * FULL.hidden
    body = roofline.step_bytes("fp32", FULL) - heads
    assert roofline.step_bytes("int8", FULL) == pytest.approx(body / 4 + heads)
    assert roofline.step_bytes("bf16", FULL) == pytest.approx(roofline.step_bytes("fp32", FULL) / 2)


def test_full_size_is_upstreams_190_million():
    assert round(roofline.step_bytes("fp32", FULL) / 4e6, 1) == 190.7


def test_floors_follow_the_bandwidth(monkeypatch):
    monkeypatch.setattr(roofline, "read_gbs", lambda gib, rounds: 19.07)
    monkeypatch.setattr(roofline, "mv_pass_ms", lambda rounds: 50.0)
    out = roofline.measure(threads=1, upstream_ms_bs1=60.0)
    assert out["floor_ms_bs1_fp32"] == pytest.approx(40.0, abs=0.01)
    assert out["floor_rtf_fp32"] == pytest.approx(40.0 / out["code_budget_ms"], abs=0.001)
    assert out["max_decode_speedup_bs1"] == pytest.approx(1.5, abs=0.001)
    assert out["floor_ms_bs1_int8"] < out["floor_ms_bs1_bf16"] < out["floor_ms_bs1_fp32"]


def test_the_bandwidth_read_is_measured():
    assert roofline.read_gbs(1 / 64, rounds=2) > 0.1
