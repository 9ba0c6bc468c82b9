"""Weights: tiny/random builds, checkpoint round trips, clear errors."""

from __future__ import annotations

import logging
import os

import pytest
import torch
from runtime_fixtures import tiny_assets

from realtime.engine.model import weights as W
from realtime.engine.model.shapes import FULL, TINY


def test_tiny_random_is_seeded():
    a = W.random_assets(TINY, seed=3)
    b = W.random_assets(TINY, seed=3)
    c = W.random_assets(TINY, seed=4)
    assert a.kind == "tiny-random" and a.shape == TINY
    for k in a.gpt_state:
        assert torch.equal(a.gpt_state[k], b.gpt_state[k])
    assert not torch.equal(a.gpt_state["norm.weight"] + a.gpt_state["layers.0.mlp.up_proj.weight"].sum(),
                           c.gpt_state["norm.weight"] + c.gpt_state["layers.0.mlp.up_proj.weight"].sum())


def test_tokenizer_holds_chattts_special_tokens():
    tok = tiny_assets().tokenizer
    ids = tok("[Stts][spk_emb][speed_5]hi[uv_break][laugh][Ptts]", add_special_tokens=False)["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    assert pieces[:3] == ["[Stts]", "[spk_emb]", "[speed_5]"]
    assert "[uv_break]" in pieces and "[laugh]" in pieces and pieces[-1] == "[Ptts]"
    assert max(ids) < TINY.num_text_tokens


def test_checkpoint_round_trip(tmp_path, caplog):
    a = tiny_assets()
    W.write_checkpoint(a, str(tmp_path))
    for name in ("Embed", "Decoder", "DVAE", "Vocos"):
        assert (tmp_path / "asset" / f"{name}.safetensors").is_file()
    with caplog.at_level(logging.WARNING):
        b = W.load_checkpoint(str(tmp_path))
    assert "CC BY-NC 4.0" in caplog.text
    assert b.kind == "checkpoint" and b.shape == a.shape
    for k, v in a.gpt_state.items():
        assert torch.equal(v, b.gpt_state[k])
    assert torch.equal(a.embed.head_code[0].weight, b.embed.head_code[0].weight)
    assert torch.equal(a.decoder.coef, b.decoder.coef)
    assert b.tokenizer("[Stts]hello")["input_ids"] == a.tokenizer("[Stts]hello")["input_ids"]
    assert b.spk_stat == a.spk_stat
    # The DVAE encoder round-trips too, and upstream's own loader reads the file.
    assert b.dvae is not None and b.dvae is not a.dvae
    assert torch.equal(a.dvae.coef, b.dvae.coef)
    for k, v in a.dvae.state_dict().items():
        assert torch.equal(v, b.dvae.state_dict()[k]), k
    wav = torch.randn(24000) * 0.1
    assert torch.equal(a.dvae.sample_audio(wav.clone()), b.dvae.sample_audio(wav.clone()))
    # A path to the asset directory itself works too.
    assert W.load_checkpoint(str(tmp_path / "asset")).shape == a.shape


def test_missing_files_are_named(tmp_path):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    os.remove(tmp_path / "asset" / "Vocos.safetensors")
    with pytest.raises(W.WeightsError, match=r"missing: .*Vocos.safetensors") as err:
        W.load_checkpoint(str(tmp_path))
    assert str(tmp_path) in str(err.value)


def test_checkpoint_without_dvae_loads_without_samples(tmp_path, caplog):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    os.remove(tmp_path / "asset" / "DVAE.safetensors")
    with caplog.at_level(logging.WARNING):
        assert W.load_checkpoint(str(tmp_path)).dvae is None
    assert "voices from a sample are unavailable" in caplog.text


def test_no_checkpoint_dir(tmp_path):
    with pytest.raises(W.WeightsError, match=str(tmp_path)):
        W.load_checkpoint(str(tmp_path))


def test_corrupt_file_is_named(tmp_path):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    path = tmp_path / "asset" / "Embed.safetensors"
    path.write_bytes(b"\x00garbage" * 10)
    with pytest.raises(W.WeightsError, match="Embed.safetensors"):
        W.load_checkpoint(str(tmp_path))


def test_mismatched_tensors_are_named(tmp_path):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    other = W.random_assets(TINY, seed=1)
    # A Decoder from a different architecture: wrong number of blocks.
    from safetensors.torch import save_file
    state = {k: v for k, v in other.decoder.state_dict().items() if "decoder_block.1." not in k}
    state["decoder.decoder_block.0.pwconv1.weight"] = torch.zeros(3, 3)
    save_file(state, str(tmp_path / "asset" / "Decoder.safetensors"))
    with pytest.raises(W.WeightsError, match="Decoder.safetensors"):
        W.load_checkpoint(str(tmp_path))


def test_auto_refuses_without_weights_when_required(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(W.WeightsError, match="require-weights"):
        W.resolve_assets("auto", require_weights=True)


def test_auto_falls_back_to_full_random_loudly(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    calls = []
    monkeypatch.setattr(W, "random_assets", lambda shape, seed, kind: calls.append((shape, kind)) or "A")
    with caplog.at_level(logging.WARNING):
        assert W.resolve_assets("auto") == "A"
    assert calls == [(FULL, "random")]
    assert "RANDOM WEIGHTS" in caplog.text


def test_auto_finds_the_hub_cache(tmp_path, monkeypatch):
    snap = tmp_path / "hub" / "models--2Noise--ChatTTS" / "snapshots" / "abc"
    W.write_checkpoint(tiny_assets(), str(snap))
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert W.resolve_assets("auto").source == str(snap / "asset")


def test_model_dir_used_for_auto(tmp_path):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    assert W.resolve_assets("auto", model_dir=str(tmp_path)).kind == "checkpoint"
