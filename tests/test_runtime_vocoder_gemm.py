"""The vocoder's linears on a packed GEMM backend (``vocoder_gemm``).

Replaced layers must compute what ``nn.Linear`` computes (bias included, any
leading shape), only in a copy of the module (upstream's reference decodes
from the same assets), and only where a packed backend was chosen: plain
``mm``, tiny unmeasured shapes and devices other than the CPU keep the very
modules, so the vocoder stays bit-identical to upstream there.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from runtime_fixtures import tiny_assets

from realtime.engine.cpu import vocoder_gemm
from realtime.engine.cpu.gemm import backend_available, plain
from realtime.engine.cpu.plan import GemmPolicy
from realtime.engine.cpu.vocoder_gemm import PackedLinear, bf16_layers, pack_linears
from realtime.engine.model.shapes import TINY
from realtime.engine.vocoder.precision import BF16Linear
from realtime.engine.vocoder.stream import StreamingVocoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CPU = torch.device("cpu")
needs_onednn = pytest.mark.skipif(not backend_available("onednn", CPU, torch.float32),
                                  reason="no oneDNN in this torch")


def _linears(module: torch.nn.Module) -> list[torch.nn.Module]:
    return [m for m in module.modules() if isinstance(m, (torch.nn.Linear, PackedLinear))]


def _modules():
    a = tiny_assets(3)
    return a.decoder.eval(), a.vocos.eval()


@needs_onednn
def test_forced_onednn_packs_every_linear_of_a_copy():
    decoder, vocos = _modules()
    before = [(type(m), m.weight.clone()) for m in _linears(decoder) + _linears(vocos)]
    (dec, voc), _ = pack_linears([decoder, vocos], GemmPolicy("onednn"))
    assert dec is not decoder and voc is not vocos
    packed = _linears(dec) + _linears(voc)
    assert len(packed) == len(before) >= 7  # tiny: 2 + 1 ConvNeXt blocks, 2 linears each, and the head
    assert all(isinstance(m, PackedLinear) for m in packed)
    # The originals are untouched: same classes, same weights.
    after = _linears(decoder) + _linears(vocos)
    assert all(type(m) is t and torch.equal(m.weight, w) for m, (t, w) in zip(after, before))


@needs_onednn
def test_a_packed_linear_is_the_linear_it_replaces():
    lin = torch.nn.Linear(48, 80)
    with torch.no_grad():
        lin.bias.uniform_(-1, 1)  # a bias that shows if it went missing
    holder = torch.nn.Sequential(lin)
    (packed,), _ = pack_linears([holder], GemmPolicy("onednn"))
    assert isinstance(packed[0], PackedLinear)
    x = torch.randn(2, 7, 48)  # a leading batch and frame axis, as the vocoder's
    with torch.no_grad():
        torch.testing.assert_close(packed(x), lin(x), atol=1e-5, rtol=1e-5)
        assert packed(x).shape == (2, 7, 80)


@needs_onednn
def test_packed_vocoder_renders_what_the_plain_one_renders():
    decoder, vocos = _modules()
    (dec, voc), _ = pack_linears([decoder, vocos], GemmPolicy("onednn"))
    hidden = torch.randn(40, TINY.hidden, generator=torch.Generator().manual_seed(0))
    ref = StreamingVocoder(decoder, vocos).one_shot(hidden)
    out = StreamingVocoder(dec, voc).one_shot(hidden)
    assert np.abs(ref).max() > 1e-3
    np.testing.assert_allclose(out, ref, atol=1e-6, rtol=0)


@pytest.mark.parametrize("mode, device", [("auto", CPU), ("mm", CPU), ("int8", CPU),
                                          ("onednn", torch.device("meta"))])
def test_modules_stay_where_nothing_is_packed(mode, device):
    # auto and int8 (which runs the vocoder as auto) on tiny shapes: unmeasured, mm.
    decoder, vocos = _modules()
    if device != CPU:  # the modules say where the vocoder runs
        decoder, vocos = copy.deepcopy(decoder).to(device), copy.deepcopy(vocos).to(device)
    modules, _ = pack_linears([decoder, vocos], GemmPolicy(mode))
    assert modules[0] is decoder and modules[1] is vocos
    assert not any(isinstance(m, PackedLinear) for m in decoder.modules())


def _timer(fp32_s: float, bf16_s: float):
    """A fake clock for ``bf16_layers``: each shape times fp32, then bf16."""
    answers = iter([fp32_s, bf16_s] * 100)
    return lambda call: next(answers)


def _all_linears(decoder, vocos) -> list[torch.nn.Linear]:
    return [m for m in list(decoder.modules()) + list(vocos.modules()) if isinstance(m, torch.nn.Linear)]


def test_bf16_is_taken_per_shape_only_where_it_measures_faster():
    decoder, vocos = _modules()
    linears = _all_linears(decoder, vocos)
    matrices = [plain(lin.weight.detach()) for lin in linears]
    faster = bf16_layers(linears, matrices, 0, timer=_timer(1.0, 0.5))
    assert set(faster) == {id(lin) for lin in linears}
    assert all(isinstance(m, BF16Linear) for m in faster.values())
    assert bf16_layers(linears, matrices, 0, timer=_timer(1.0, 0.95)) == {}  # under the gain
    # Shapes below the measuring floor are not even timed: tiny models stay exact.
    assert bf16_layers(linears, matrices, 2**30, timer=lambda call: 1 / 0) == {}


def test_without_native_bf16_the_vocoder_keeps_fp32_linears(monkeypatch):
    decoder, vocos = _modules()
    monkeypatch.setattr(vocoder_gemm, "bf16_available", lambda: "no AVX-512 BF16 or AMX")
    monkeypatch.setattr(vocoder_gemm, "bf16_layers", lambda *a, **k: 1 / 0)  # never even timed
    (dec, voc), _ = pack_linears([decoder, vocos], GemmPolicy("int8"))
    assert not any(isinstance(m, BF16Linear) for m in list(dec.modules()) + list(voc.modules()))


@pytest.mark.skipif(vocoder_gemm.bf16_available() is not None, reason="no native bf16 on this CPU")
def test_a_bf16_vocoder_stays_within_its_documented_snr_of_fp32(monkeypatch):
    decoder, vocos = _modules()
    monkeypatch.setattr(vocoder_gemm, "bf16_layers",
                        lambda linears, matrices, min_bytes: bf16_layers(linears, matrices, 0,
                                                                         timer=_timer(1.0, 0.5)))
    (dec, voc), _ = pack_linears([decoder, vocos], GemmPolicy("int8"))
    layers = [m for m in dec.modules() if isinstance(m, (BF16Linear, torch.nn.Linear))]
    assert layers and all(isinstance(m, BF16Linear) for m in layers)
    assert isinstance(voc.head.out, torch.nn.Linear)  # the head stays fp32
    assert not any(isinstance(m, BF16Linear) for m in decoder.modules())  # the assets untouched
    hidden = torch.randn(40, TINY.hidden, generator=torch.Generator().manual_seed(0))
    ref = StreamingVocoder(decoder, vocos).one_shot(hidden)
    out = StreamingVocoder(dec, voc).one_shot(hidden)
    assert out.dtype == np.float32 and out.shape == ref.shape
    snr = 10 * np.log10(np.sum(ref ** 2) / np.sum((out - ref) ** 2))
    assert 30.0 < snr < 120.0  # bf16 rounding shows, within bounds (full size: 45-48 dB)


@needs_onednn
def test_the_vocoder_plan_is_measured_once_per_machine(tmp_path, monkeypatch, caplog):
    """The per-shape measurement is stored (its own kind of entry) and
    the next start packs from it without timing anything; another key (the
    thread count) misses, and a torn entry is a miss that is measured again."""
    import logging

    from realtime.engine.cpu import plan as gemm_plan
    from realtime.engine.cpu import plan_cache

    policy = GemmPolicy("auto", min_measured_bytes=0, cache_dir=str(tmp_path))
    monkeypatch.setattr(gemm_plan, "_CACHE", {})
    monkeypatch.setattr(gemm_plan, "_time_pass",
                        lambda forms, x: 1.0 if forms[0].backend == "onednn" else 2.0)
    (dec, _), _ = pack_linears(list(_modules()), policy)
    assert isinstance(_linears(dec)[0], PackedLinear)
    (entry,) = [p for p in tmp_path.iterdir() if p.name.startswith(plan_cache.VOCODER_KIND + "-")]

    def no_measuring(forms, x):
        raise AssertionError("a cached vocoder plan measured again")
    monkeypatch.setattr(gemm_plan, "_CACHE", {})
    monkeypatch.setattr(gemm_plan, "_time_pass", no_measuring)
    with caplog.at_level(logging.INFO):
        (dec, _), _ = pack_linears(list(_modules()), policy)
    assert "vocoder gemm plan from this machine's cache" in caplog.text
    assert isinstance(_linears(dec)[0], PackedLinear)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 7)  # another key: measured
    with pytest.raises(AssertionError, match="measured again"):
        pack_linears(list(_modules()), policy)
    monkeypatch.undo()
    entry.write_text(entry.read_text()[:40])  # torn: a miss, measured and stored again
    monkeypatch.setattr(gemm_plan, "_CACHE", {})
    monkeypatch.setattr(gemm_plan, "_time_pass", lambda forms, x: 1.0)
    with caplog.at_level(logging.WARNING):
        pack_linears(list(_modules()), policy)
    assert "rebuilding" in caplog.text
    assert plan_cache.load(str(tmp_path), None) is None and entry.exists()
