"""The prepared cache: hits, misses on every key change, bad entries rebuilt,
concurrent writers, and the checkpoint content id."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
from pathlib import Path

import pytest
import torch

from realtime.engine.model import prepared_cache as pc
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache, checkpoint_id

TENSORS = {"w": torch.arange(12, dtype=torch.float32).view(3, 4),
           "q": torch.tensor([-3, 0, 7], dtype=torch.int8),
           "b": torch.tensor([1.5, -2.0]).bfloat16(),
           "flag": torch.tensor([True, False])}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[n], b[n]) for n in a)


@pytest.fixture
def cache(tmp_path):
    return PreparedCache(tmp_path / "cache")


def test_json_and_tensors_hit(cache):
    key = CacheKey.of("weights", checkpoint="abc", precision="fp32")
    assert cache.load_json(key) is None and cache.load_tensors(key) is None
    assert cache.store_json(key, {"plan": [1, 2], "x": "y"})
    assert cache.store_tensors(key, TENSORS)
    assert cache.load_json(key) == {"plan": [1, 2], "x": "y"}
    loaded = cache.load_tensors(key)
    assert loaded is not None and _same(loaded, TENSORS)
    # A second cache object on the same directory (another process) sees them.
    assert _same(PreparedCache(cache.root).load_tensors(key), TENSORS)


def test_off_cache_misses_and_stores_nothing(tmp_path):
    for off in (PreparedCache(None), PreparedCache("")):
        key = CacheKey.of("weights", checkpoint="abc")
        assert not off.enabled
        assert not off.store_json(key, 1) and off.load_json(key) is None
        assert not off.store_tensors(key, TENSORS) and off.load_tensors(key) is None


@pytest.mark.parametrize("change", ["kind", "checkpoint", "precision", "backend", "torch", "cpu"])
def test_every_key_part_invalidates(cache, monkeypatch, change):
    base = dict(checkpoint="abc", precision="fp32", backend="auto")
    key = CacheKey.of("weights", **base)
    cache.store_json(key, "old")
    cache.store_tensors(key, TENSORS)
    if change == "kind":
        other = CacheKey.of("gemm-plan", **base)
    elif change in base:
        other = CacheKey.of("weights", **{**base, change: "other"})
    else:
        real = pc.machine_parts()
        monkeypatch.setattr(pc, "machine_parts", lambda: {**real, change: "another " + change})
        other = CacheKey.of("weights", **base)
    assert other.name != key.name
    assert cache.load_json(other) is None and cache.load_tensors(other) is None
    assert cache.load_json(key) == "old"  # the old entry is still there for its own key


def _entries(cache) -> list[str]:
    return sorted(os.listdir(cache.root))


@pytest.mark.parametrize("suffix", [".json", ".pt"])
@pytest.mark.parametrize("damage", ["truncated", "flipped", "empty", "other key"])
def test_bad_entry_is_a_miss_removed_and_rebuilt(cache, caplog, suffix, damage):
    key = CacheKey.of("weights", checkpoint="abc")
    store = (lambda: cache.store_json(key, {"big": list(range(200))})) if suffix == ".json" \
        else (lambda: cache.store_tensors(key, {"w": torch.randn(64, 64)}))
    load = cache.load_json if suffix == ".json" else cache.load_tensors
    store()
    path = cache.path(key, suffix)
    data = Path(path).read_bytes()
    if damage == "truncated":
        data = data[:len(data) // 2]
    elif damage == "flipped":  # one byte in the middle: the payload, not the framing
        mid = len(data) // 2 if suffix == ".json" else len(data) - 5000
        data = data[:mid] + bytes([data[mid] ^ 0x55]) + data[mid + 1:]
    elif damage == "empty":
        data = b""
    else:  # a whole entry of another key in this key's place
        other = CacheKey.of("weights", checkpoint="xyz")
        (cache.store_json(other, {"big": list(range(200))}) if suffix == ".json"
         else cache.store_tensors(other, {"w": torch.randn(64, 64)}))
        data = Path(cache.path(other, suffix)).read_bytes()
    with open(path, "wb") as f:
        f.write(data)
    with caplog.at_level(logging.WARNING, logger=pc.__name__):
        assert load(key) is None
    assert "rebuilding" in caplog.text
    assert not os.path.exists(path)
    store()
    assert load(key) is not None


def test_write_failure_is_logged_not_raised(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = PreparedCache(blocker / "cache")
    with caplog.at_level(logging.WARNING, logger=pc.__name__):
        assert not cache.store_json(CacheKey.of("weights"), 1)
    assert "cannot write" in caplog.text
    assert cache.load_json(CacheKey.of("weights")) is None


def test_no_temporary_file_left_after_a_failed_fill(cache):
    def fail(f):
        f.write(b"half")
        raise OSError("disk full")
    assert not cache._write(CacheKey.of("weights"), ".json", fail)
    assert _entries(cache) == []


def test_old_entries_pruned_per_kind(cache):
    keep = pc.KEEP.get("weights", pc.KEEP_PER_KIND)  # the big kind keeps fewer
    assert keep < pc.KEEP_PER_KIND
    keys = [CacheKey.of("weights", n=i) for i in range(pc.KEEP_PER_KIND + 3)]
    plan = CacheKey.of("weights-plan", n=0)  # a kind whose name starts like another's
    cache.store_json(plan, 0)
    for i, key in enumerate(keys):
        cache.store_json(key, i)
        os.utime(cache.path(key, ".json"), (1000 + i, 1000 + i))
    names = _entries(cache)
    assert len([n for n in names if n.startswith("weights-") and not n.startswith("weights-plan")]) \
        == keep
    assert cache.load_json(keys[-1]) == len(keys) - 1
    assert cache.load_json(plan) == 0


def _writer(root: str, value: int, rounds: int) -> None:
    cache = PreparedCache(root)
    key = CacheKey.of("weights", checkpoint="shared")
    for _ in range(rounds):
        cache.store_tensors(key, {"w": torch.full((256, 256), float(value))})
        cache.store_json(key, {"value": value, "pad": [value] * 500})


def test_concurrent_writers_leave_a_whole_entry(cache, caplog):
    caplog.set_level(logging.WARNING, logger=pc.__name__)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(cache.root, v, 15)) for v in (1, 2)]
    for p in procs:
        p.start()
    key = CacheKey.of("weights", checkpoint="shared")
    seen = set()
    while any(p.is_alive() for p in procs):
        doc = cache.load_json(key)
        if doc is not None:
            assert doc["pad"] == [doc["value"]] * 500  # never half of one and half of another
            seen.add(doc["value"])
    for p in procs:
        p.join()
        assert p.exitcode == 0
    final = cache.load_tensors(key)
    assert final is not None
    assert final["w"].unique().tolist() in ([1.0], [2.0])
    assert cache.load_json(key)["value"] in (1, 2)
    assert not [n for n in _entries(cache) if n.endswith(".tmp")]
    assert "rebuilding" not in caplog.text  # no reader ever saw a partial entry


def test_checkpoint_id_follows_content_and_is_reused(tmp_path, cache, monkeypatch):
    asset = tmp_path / "asset"
    (asset / "gpt").mkdir(parents=True)
    (asset / "gpt" / "model.safetensors").write_bytes(b"weights v1")
    (asset / "Embed.safetensors").write_bytes(b"embed")
    first = checkpoint_id(str(asset), cache)
    assert checkpoint_id(str(asset), None) == first
    # Reused while the files' stats stand: no file is read again.
    monkeypatch.setattr("builtins.open", _no_reads(open, str(asset)))
    assert checkpoint_id(str(asset), cache) == first
    monkeypatch.undo()
    (asset / "gpt" / "model.safetensors").write_bytes(b"weights v2")
    second = checkpoint_id(str(asset), cache)
    assert second != first
    (asset / "gpt" / "model.safetensors").rename(asset / "gpt" / "other.safetensors")
    assert checkpoint_id(str(asset), cache) not in (first, second)


def _no_reads(real_open, root: str):
    def guarded(path, *args, **kwargs):
        assert not os.fspath(path).startswith(root), f"read {path}"
        return real_open(path, *args, **kwargs)
    return guarded


def test_key_is_stable_and_json_safe():
    a = CacheKey.of("gemm-plan", threads=2, shapes=[[768, 2304]])
    b = CacheKey.of("gemm-plan", shapes=[[768, 2304]], threads=2)
    assert a.name == b.name
    assert json.loads(a.canonical)["threads"] == 2
    with pytest.raises(ValueError):
        CacheKey.of("../escape")
