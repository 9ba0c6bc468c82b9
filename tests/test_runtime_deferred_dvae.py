"""The DVAE encoder (voices from a sample) is off the start-up path: its
file's header is checked at load, the module built and loaded strictly at
its first use, and the quantizer's imports (vector_quantize_pytorch, einx,
torch._dynamo) happen only then (chattts_import.py, encoder.DeferredDvae)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
from runtime_fixtures import tiny_assets
from safetensors.torch import save_file

from realtime.engine.model import weights as W
from realtime.engine.vocoder.encoder import DeferredDvae, SampleEncoder

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import sys
from realtime.engine.model.weights import load_checkpoint
assets = load_checkpoint(sys.argv[1])
print("AFTER LOAD", [m for m in ("vector_quantize_pytorch", "einx", "torch._dynamo", "transformers")
                     if m in sys.modules])
import numpy as np
from realtime.engine.vocoder.encoder import SampleEncoder
codes = SampleEncoder(assets.dvae).codes(np.zeros(24000, np.float32))
print("AFTER ENCODE", "vector_quantize_pytorch" in sys.modules, tuple(codes.shape)[0],
      type(assets.dvae.vq_layer.quantizer).__module__)
"""


def test_loading_a_checkpoint_imports_no_quantizer(tmp_path):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "AFTER LOAD []" in out
    assert "AFTER ENCODE True 4 vector_quantize_pytorch." in out


def test_the_deferred_dvae_is_upstreams_module_loaded_once(tmp_path):
    a = tiny_assets()
    W.write_checkpoint(a, str(tmp_path))
    b = W.load_checkpoint(str(tmp_path)).dvae
    assert isinstance(b, DeferredDvae)
    module = b.module()
    assert b.module() is module and SampleEncoder(b).dvae is module
    for k, v in a.dvae.state_dict().items():
        assert torch.equal(v, module.state_dict()[k]), k


def test_a_dvae_file_that_is_no_safetensors_fails_the_start(tmp_path):
    W.write_checkpoint(tiny_assets(), str(tmp_path))
    (tmp_path / "asset" / "DVAE.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(W.WeightsError, match="DVAE.safetensors"):
        W.load_checkpoint(str(tmp_path))


def test_a_dvae_that_does_not_fit_fails_at_first_use_and_again(tmp_path):
    a = tiny_assets()
    W.write_checkpoint(a, str(tmp_path))
    state = dict(a.dvae.state_dict())
    state["encoder.decoder_block.0.pwconv1.weight"] = torch.zeros(3, 3)  # a wrong shape
    save_file({k: v.contiguous() for k, v in state.items()},
              str(tmp_path / "asset" / "DVAE.safetensors"))
    dvae = W.load_checkpoint(str(tmp_path)).dvae  # the header is sound
    for _ in range(2):  # not cached as loaded
        with pytest.raises(W.WeightsError, match="DVAE.safetensors"):
            dvae.module()
