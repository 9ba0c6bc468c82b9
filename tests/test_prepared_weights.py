"""The prepared decoder matrices kept per machine (``prepared_weights``): a
warm start's matrices come from the cache and give the same fp32 codes; any
key part changed, or a damaged entry, rebuilds them; a cache directory that
cannot be written leaves the start uncached but whole."""

from __future__ import annotations

import errno
import logging
import os

import pytest
import torch
from runtime_fixtures import GREEDY, TEXTS, Driver, assert_distinct, fidelity_assets, request, tiny_assets

from realtime.engine.api import RuntimeOptions
from realtime.engine.build import build_runner
from realtime.engine.model import prepared_cache, prepared_weights
from realtime.engine.model.checkpoint_io import LazyTensors
from realtime.engine.model.gpt import StaticGPT
from realtime.engine.model.prepared_weights import WeightsEntry
from realtime.engine.model.weights import load_checkpoint, write_checkpoint

pytestmark = pytest.mark.usefixtures("one_torch_thread")
CPU = torch.device("cpu")
LOGGER = prepared_weights.__name__


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The fidelity weights (codes that depend on the prompt) as a checkpoint on disk."""
    return write_checkpoint(fidelity_assets(), str(tmp_path_factory.mktemp("ckpt")))


def _model(root: str, cache_dir: str | None, caplog) -> tuple[StaticGPT, str]:
    """A model from the checkpoint at ``root``; and whether its matrices were
    ``loaded`` from the cache, ``built`` (and stored) or ``uncached``."""
    caplog.clear()
    assets = load_checkpoint(root)
    entry = WeightsEntry.of(assets, cache_dir, CPU, torch.float32)
    with caplog.at_level(logging.INFO, logger=LOGGER):
        model = StaticGPT(assets.shape, assets.gpt_state, assets.embed, CPU, torch.float32, prepared=entry)
    how = ("loaded" if "from the prepared cache" in caplog.text else
           "built" if "stored in the prepared cache" in caplog.text else "uncached")
    return model, how


def _plain(model: StaticGPT) -> list[torch.Tensor]:
    return [m.w_t for m in model.matrices]


def _assert_same_matrices(a: StaticGPT, b: StaticGPT) -> None:
    pa, pb = _plain(a), _plain(b)
    assert len(pa) == len(pb) == 4 * a.shape.layers + 1
    assert all(torch.equal(x, y) for x, y in zip(pa, pb))


def _mapped_from(tensor: torch.Tensor, path: str) -> bool:
    """Whether ``tensor``'s memory lies in a mapping of the file ``path``."""
    ptr = tensor.data_ptr()
    with open("/proc/self/maps") as f:
        for line in f:
            span, *rest = line.split()
            lo, hi = (int(x, 16) for x in span.split("-"))
            if rest and rest[-1] == os.path.realpath(path) and lo <= ptr < hi:
                return True
    return False


def _codes(runner) -> dict[int, torch.Tensor]:
    d = Driver(runner)
    for i, text in enumerate(TEXTS):
        d.add(i, request(text, **GREEDY))
    d.run()
    return {i: d.codes[i] for i in range(len(TEXTS))}


def test_a_warm_start_takes_the_matrices_from_the_cache_with_the_same_codes(checkpoint, tmp_path, caplog):
    cache = str(tmp_path / "cache")
    runners, hows = [], []
    for cache_dir in (cache, cache, None):  # cold (stores), warm (loads), no cache at all
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=LOGGER):
            runners.append(build_runner(RuntimeOptions(weights=checkpoint, device="cpu", max_slots=4,
                                                       batch_sizes=(1, 2, 4), kv_buckets=(64, 128),
                                                       precision="fp32", cpu_engine="torch",
                                                       cache_dir=cache_dir)))
        hows.append("loaded" if "from the prepared cache" in caplog.text else
                    "built" if "stored" in caplog.text else "uncached")
    assert hows == ["built", "loaded", "uncached"]
    assert [n.split("-")[0] for n in os.listdir(cache)].count("weights") == 1
    # The warm model multiplies by the cache file's pages, not by a copy.
    def first_plain(r) -> torch.Tensor:
        return r.model.matrices[0].w_t
    assert _mapped_from(first_plain(runners[1]), _entry_path(cache))
    assert not _mapped_from(first_plain(runners[0]), _entry_path(cache))
    cold, hit, plain = (_codes(r) for r in runners)
    assert_distinct(plain)
    assert all(torch.equal(cold[i], plain[i]) and torch.equal(hit[i], plain[i]) for i in plain)


def test_a_hit_reads_only_the_norms_from_the_checkpoint(checkpoint, tmp_path, caplog, monkeypatch):
    cache = str(tmp_path / "cache")
    _model(checkpoint, cache, caplog)
    read: list[str] = []
    real = LazyTensors.__getitem__
    monkeypatch.setattr(LazyTensors, "__getitem__", lambda self, k: read.append(k) or real(self, k))
    _, how = _model(checkpoint, cache, caplog)
    assert how == "loaded" and read
    assert all(k.endswith("norm.weight") for k in read), read


@pytest.mark.parametrize("change", ["checkpoint", "torch", "cpu", "form"])
def test_any_key_part_changed_rebuilds(checkpoint, tmp_path, caplog, monkeypatch, change):
    cache = str(tmp_path / "cache")
    assert _model(checkpoint, cache, caplog)[1] == "built"
    assert _model(checkpoint, cache, caplog)[1] == "loaded"
    root = checkpoint
    if change == "checkpoint":  # other weights in the same shape
        root = write_checkpoint(tiny_assets(1), str(tmp_path / "other"))
    elif change == "form":
        monkeypatch.setattr(prepared_weights, "FORM", prepared_weights.FORM + " v2")
    else:
        real = prepared_cache.machine_parts()
        monkeypatch.setattr(prepared_cache, "machine_parts", lambda: {**real, change: "another " + change})
    model, how = _model(root, cache, caplog)
    assert how == "built"
    _assert_same_matrices(model, _model(root, None, caplog)[0])  # the new weights, not the stale ones
    assert _model(root, cache, caplog)[1] == "loaded"


def test_a_checkpoint_rewritten_in_place_rebuilds(tmp_path, caplog):
    root = write_checkpoint(tiny_assets(0), str(tmp_path / "ckpt"))
    cache = str(tmp_path / "cache")
    _model(root, cache, caplog)
    write_checkpoint(tiny_assets(2), root)  # same path, new content
    model, how = _model(root, cache, caplog)
    assert how == "built"
    _assert_same_matrices(model, _model(root, None, caplog)[0])


def _entry_path(cache: str) -> str:
    (name,) = [n for n in os.listdir(cache) if n.startswith(prepared_weights.KIND + "-")]
    return os.path.join(cache, name)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "other tensors"])
def test_a_damaged_entry_is_a_miss_and_rebuilt(checkpoint, tmp_path, caplog, damage):
    cache = str(tmp_path / "cache")
    reference, _ = _model(checkpoint, cache, caplog)
    path = _entry_path(cache)
    with open(path, "rb") as f:
        data = bytearray(f.read())
    if damage == "other tensors":  # a sound file under the key, holding what the model lacks
        entry = WeightsEntry.of(load_checkpoint(checkpoint), cache, CPU, torch.float32)
        assert entry is not None and entry.store([torch.zeros(3, 4)])
    else:
        if damage == "flipped":  # one bit in the middle of the matrices' data
            data[len(data) // 2] ^= 0x10
        with open(path, "wb") as f:
            f.write({"truncated": data[: len(data) // 2], "flipped": data, "empty": b""}[damage])
    with caplog.at_level(logging.WARNING):
        model, how = _model(checkpoint, cache, caplog)
    assert how == "built" and "rebuilding" in caplog.text
    _assert_same_matrices(model, reference)
    assert _model(checkpoint, cache, caplog)[1] == "loaded"


def test_an_unwritable_cache_dir_starts_uncached(checkpoint, tmp_path, caplog, monkeypatch):
    cache = str(tmp_path / "cache")
    reference, _ = _model(checkpoint, None, caplog)
    # A read-only filesystem (the tests may run as root, whom chmod does not stop).
    real_mkstemp = prepared_cache.tempfile.mkstemp

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(prepared_cache.tempfile, "mkstemp", read_only)
    with caplog.at_level(logging.WARNING):
        model, how = _model(checkpoint, cache, caplog)
    assert how == "uncached" and "cannot write" in caplog.text
    _assert_same_matrices(model, reference)
    # An entry made before the directory turned read-only is still read.
    monkeypatch.setattr(prepared_cache.tempfile, "mkstemp", real_mkstemp)
    _model(checkpoint, cache, caplog)
    monkeypatch.setattr(prepared_cache.tempfile, "mkstemp", read_only)
    model, how = _model(checkpoint, cache, caplog)
    assert how == "loaded"
    _assert_same_matrices(model, reference)


def test_only_a_cpu_fp32_start_from_a_checkpoint_keeps_an_entry(checkpoint, tmp_path):
    assets, cache = load_checkpoint(checkpoint), str(tmp_path / "cache")
    assert WeightsEntry.of(assets, cache, CPU, torch.float32) is not None
    assert WeightsEntry.of(assets, None, CPU, torch.float32) is None
    assert WeightsEntry.of(assets, cache, torch.device("meta"), torch.float32) is None
    assert WeightsEntry.of(assets, cache, CPU, torch.bfloat16) is None
    assert WeightsEntry.of(tiny_assets(), cache, CPU, torch.float32) is None  # drawn in memory
