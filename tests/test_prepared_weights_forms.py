"""The int8 and bf16 forms kept per machine (``prepared_forms``): a warm int8
start makes its forms from the cache and gives the codes an uncached start
gives; a change of precision, form or checkpoint is another entry; a torn or
damaged entry is a miss, rebuilt."""

from __future__ import annotations

import json
import logging
import os

import pytest
import torch
from runtime_fixtures import assert_distinct, fidelity_assets, tiny_assets
from test_prepared_weights import _codes

from realtime.engine.api import RuntimeOptions
from realtime.engine.build import build_runner
from realtime.engine.cpu import bf16 as cpu_bf16
from realtime.engine.cpu import forms as cpu_forms
from realtime.engine.cpu import int8 as cpu_int8
from realtime.engine.cpu.form_state import cacheable
from realtime.engine.cpu.plan import GemmPolicy
from realtime.engine.model import prepared_forms
from realtime.engine.model.gpt import StaticGPT
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache
from realtime.engine.model.prepared_weights import WeightsEntry
from realtime.engine.model.weights import load_checkpoint, write_checkpoint

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CPU = torch.device("cpu")
LOGGER = prepared_forms.__name__
INT8_FORMS = cpu_int8.backends()  # those this machine runs (fbgemm's everywhere int8 runs)
BF16_FORMS = cpu_bf16.backends()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(fidelity_assets(), str(tmp_path_factory.mktemp("ckpt")))


def _how(text: str) -> str:
    return ("loaded" if "made from the prepared cache" in text else
            "built" if "stored in the prepared cache" in text else "uncached")


def _model(root: str, cache_dir: str | None, caplog, mode: str = "int8") -> tuple[StaticGPT, str]:
    """A model whose decoder matrices are in form ``mode`` (its family's plain
    one: the tiny shapes are not measured); whether its forms were ``loaded``
    from the cache, ``built`` (and stored) or ``uncached``."""
    caplog.clear()
    assets = load_checkpoint(root)
    entry = WeightsEntry.of(assets, cache_dir, CPU, torch.float32)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        model = StaticGPT(assets.shape, assets.gpt_state, assets.embed, CPU, torch.float32,
                          gemm=GemmPolicy(mode=mode), prepared=entry)
    return model, _how(caplog.text)


def _products(model: StaticGPT) -> list[torch.Tensor]:
    """Each decoder matrix times fixed inputs of 1, 3 and 9 rows."""
    gen = torch.Generator().manual_seed(0)
    out = []
    for m in model.matrices[:-1]:  # the heads stay fp32, never kept
        out += [m(torch.randn(rows, m.shape[0], generator=gen)) for rows in (1, 3, 9)]
    return out


def _assert_same_products(a: StaticGPT, b: StaticGPT) -> None:
    pa, pb = _products(a), _products(b)
    assert len(pa) == len(pb) == 3 * 4 * a.shape.layers
    assert all(torch.equal(x, y) for x, y in zip(pa, pb))


def _entries(cache: str, kind: str) -> list[str]:
    return sorted(os.path.join(cache, n) for n in os.listdir(cache) if n.startswith(kind + "-"))


@pytest.mark.parametrize("form", INT8_FORMS)
def test_int8_codes_are_the_same_cold_warm_and_uncached(checkpoint, tmp_path, caplog, monkeypatch, form):
    # The tiny model's matrices take the int8 family's plain form: each form in turn.
    monkeypatch.setitem(cpu_forms.FAMILIES, "int8", form)
    cache = str(tmp_path / "cache")
    runners, hows = [], []
    for cache_dir in (cache, cache, None):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=LOGGER):
            runners.append(build_runner(RuntimeOptions(weights=checkpoint, device="cpu", max_slots=4,
                                                       batch_sizes=(1, 2, 4), kv_buckets=(64, 128),
                                                       precision="int8", cpu_engine="torch",
                                                           cache_dir=cache_dir)))
        hows.append(_how(caplog.text))
        assert {b for m in runners[-1].model.matrices[:-1] for b in (m.backend_for(1),)} == {form}
    assert hows == ["built", "loaded", "uncached"]
    assert len(_entries(cache, "int8-forms")) == 4  # one per decoder shape
    cold, warm, plain = (_codes(r) for r in runners)
    assert_distinct(plain)
    assert all(torch.equal(cold[i], plain[i]) and torch.equal(warm[i], plain[i]) for i in plain)


@pytest.mark.parametrize("form", INT8_FORMS + BF16_FORMS)
def test_every_kept_form_multiplies_as_the_one_made_from_the_weights(checkpoint, tmp_path, caplog, form):
    cache = str(tmp_path / "cache")
    cold, how = _model(checkpoint, cache, caplog, form)
    assert how == "built"
    warm, how = _model(checkpoint, cache, caplog, form)
    assert how == "loaded"
    assert {f.backend for m in warm.matrices[:-1] for f in m.forms} == {form}
    _assert_same_products(warm, cold)
    _assert_same_products(warm, _model(checkpoint, None, caplog, form)[0])


def test_a_change_of_precision_is_another_entry(checkpoint, tmp_path, caplog):
    if not BF16_FORMS:
        pytest.skip("no native bf16 here: bf16 runs fp32, which keeps no forms")
    cache = str(tmp_path / "cache")
    assert _model(checkpoint, cache, caplog, "int8")[1] == "built"
    assert _model(checkpoint, cache, caplog, "bf16")[1] == "built"  # int8's entries not taken
    assert len(_entries(cache, "int8-forms")) == len(_entries(cache, "bf16-forms")) == 4
    assert _model(checkpoint, cache, caplog, "int8")[1] == "loaded"
    # fp32 keeps its source matrices only (the ``weights`` entry), no forms.
    assert _model(checkpoint, cache, caplog, "auto")[1] == "uncached"


def test_a_change_of_form_is_another_entry(checkpoint, tmp_path, caplog, monkeypatch):
    cache = str(tmp_path / "cache")
    _model(checkpoint, cache, caplog)
    assert _model(checkpoint, cache, caplog)[1] == "loaded"
    real = cpu_int8.Int8Packed.state_form.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(cpu_int8.Int8Packed, "state_form", classmethod(lambda cls: real(cls) + " v2"))
    model, how = _model(checkpoint, cache, caplog)
    assert how == "built"
    _assert_same_products(model, _model(checkpoint, None, caplog)[0])
    assert _model(checkpoint, cache, caplog)[1] == "loaded"


def test_a_change_of_checkpoint_is_another_entry(checkpoint, tmp_path, caplog):
    cache = str(tmp_path / "cache")
    _model(checkpoint, cache, caplog)
    other = write_checkpoint(tiny_assets(1), str(tmp_path / "other"))  # other weights, same shape
    model, how = _model(other, cache, caplog)
    assert how == "built"
    _assert_same_products(model, _model(other, None, caplog)[0])  # the new weights' forms
    assert len(_entries(cache, "int8-forms")) == 8
    assert _model(checkpoint, cache, caplog)[1] == "loaded"


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "other tensors"])
def test_a_torn_or_damaged_entry_is_a_miss_and_rebuilt(checkpoint, tmp_path, caplog, damage):
    cache = str(tmp_path / "cache")
    reference, _ = _model(checkpoint, cache, caplog)
    path = _entries(cache, "int8-forms")[0]
    if damage == "other tensors":  # a sound file under the key, holding what the model lacks
        stored = torch.load(path, weights_only=True)
        key = CacheKey("int8-forms", json.loads(stored["key"]))
        assert PreparedCache(cache).store_tensors(key, {"m0.q": torch.zeros(3, 4, dtype=torch.int8)})
    else:
        with open(path, "rb") as f:
            data = bytearray(f.read())
        if damage == "flipped":  # one bit in the middle of the tensors' data
            data[len(data) // 2] ^= 0x10
        with open(path, "wb") as f:
            f.write({"truncated": data[: len(data) // 2], "flipped": data, "empty": b""}[damage])
    caplog.clear()
    with caplog.at_level(logging.INFO):
        assets = load_checkpoint(checkpoint)
        model = StaticGPT(assets.shape, assets.gpt_state, assets.embed, CPU, torch.float32,
                          gemm=GemmPolicy(mode="int8"),
                          prepared=WeightsEntry.of(assets, cache, CPU, torch.float32))
    assert "rebuilding" in caplog.text
    assert "1 entries" in caplog.text  # the damaged one stored again, the others taken
    _assert_same_products(model, reference)
    assert _model(checkpoint, cache, caplog)[1] == "loaded"


@pytest.mark.parametrize("form", INT8_FORMS + BF16_FORMS)
def test_a_state_that_does_not_fit_is_refused(form):
    packer = cpu_forms.PACKERS[form]
    assert cacheable(packer)
    weight = torch.randn(48, 32, generator=torch.Generator().manual_seed(0))
    state = packer(weight, 8).state()
    again = packer.from_state(state, (48, 32), 8)
    x = torch.randn(5, 32)
    assert torch.equal(again(x), packer(weight, 8)(x))
    with pytest.raises(ValueError):
        packer.from_state(state, (64, 32), 8)  # another shape
    with pytest.raises(ValueError):
        packer.from_state({**state, "extra": torch.zeros(1)}, (48, 32), 8)
    name = next(iter(state))
    with pytest.raises(ValueError):
        packer.from_state({**state, name: state[name].float()}, (48, 32), 8)  # another dtype
