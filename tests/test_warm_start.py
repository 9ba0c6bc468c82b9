"""The staged CPU warm-up: the first requests' part before ready, the rest in
idle time, the cost table cached per machine; and a server started warm
serves what a cold one does."""

from __future__ import annotations

import asyncio
import json
import threading

import numpy as np
import pytest
from conftest import async_http_get, http_get
from runtime_fixtures import tiny_assets, tiny_runner

from protocol.pcm import decode_samples
from realtime.engine import runner as runner_module
from realtime.engine import warm_start
from realtime.engine.model.prepared_cache import PreparedCache
from realtime.engine.warm_start import table_key

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SHAPES = dict(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(128, 256))
ALL = {(b, k) for b in (1, 2, 4) for k in (128, 256)}


def _runner(tmp_path, **overrides):
    options = {**SHAPES, **overrides}
    return tiny_runner(assets=tiny_assets(), cache_dir=str(tmp_path / "cache"), **options)


def _count_decodes(monkeypatch, runner) -> list[tuple[int, int]]:
    calls: list[tuple[int, int]] = []
    real = runner._time_decode
    monkeypatch.setattr(runner, "_time_decode", lambda b, k, *a: calls.append((b, k)) or real(b, k, *a))
    return calls


def _finish(runner) -> None:
    while runner.warmup_rest.left:
        runner.warmup_rest.step()


def test_cold_start_times_batch_one_then_the_rest_and_stores_it(tmp_path, monkeypatch):
    runner = _runner(tmp_path)
    calls = _count_decodes(monkeypatch, runner)
    first = runner.warmup_first()
    assert set(first) == {(1, 128), (1, 256)}
    assert set(calls) == {(1, 128), (1, 256)}
    rest = runner.warmup_rest
    assert rest.left == 4  # batches 2 and 4 at each bucket
    cache = PreparedCache(tmp_path / "cache")
    assert cache.load_json(table_key(runner, cache)) is None  # not stored half done
    measured = rest.step()
    assert len(measured) == 1 and rest.left == 3
    _finish(runner)
    assert set(rest.table) == ALL
    stored = cache.load_json(table_key(runner, cache))
    assert {(b, k) for b, k, _ in stored} == ALL
    # The batch-1 whole-step overhead rides on the larger shapes too.
    assert all(s > 0 for _, _, s in stored)


def test_warm_start_takes_the_table_from_the_cache(tmp_path, monkeypatch):
    cold = _runner(tmp_path)
    cold.warmup_first()
    _finish(cold)
    warm = _runner(tmp_path)
    calls = _count_decodes(monkeypatch, warm)
    table = warm.warmup_first()
    assert table == cold.warmup_rest.table
    assert calls == [(1, 128)]  # one decode pages the first requests' path in
    assert warm.warmup_rest.left == 2  # batches 2 and 4 warmed once each, untimed
    assert warm.warmup_rest.step() == {} and warm.warmup_rest.step() == {}
    assert calls[1:] == [(2, 128), (4, 128)]


@pytest.mark.parametrize("change", [dict(kv_buckets=(128, 512)), dict(batch_sizes=(1, 2)),
                                    dict(max_slots=2), dict(cpu_engine="ort"), dict(lookahead_steps=4)])
def test_another_shape_or_engine_measures_again(tmp_path, monkeypatch, change):
    cold = _runner(tmp_path)
    cold.warmup_first()
    _finish(cold)
    other = _runner(tmp_path, **change)
    calls = _count_decodes(monkeypatch, other)
    other.warmup_first()
    assert calls and other.warmup_rest.left != 2 or calls != [(1, 128)]
    assert other.warmup_rest.key != cold.warmup_rest.key


def test_a_table_timed_another_way_is_measured_again(tmp_path, monkeypatch):
    # A table timed by an earlier method (rows at position 0 over untouched
    # pages, say) read far below what a served step costs; kept, it made
    # capacity admission take streams the machine could not serve.
    cold = _runner(tmp_path)
    cold.warmup_first()
    _finish(cold)
    monkeypatch.setattr(warm_start, "TIMING", warm_start.TIMING + 1)
    later = _runner(tmp_path)
    calls = _count_decodes(monkeypatch, later)
    later.warmup_first()
    assert set(calls) == {(1, 128), (1, 256)} and later.warmup_rest.left == 4  # timed afresh
    assert later.warmup_rest.key != cold.warmup_rest.key


def test_without_a_cache_it_stages_and_stores_nothing(tmp_path):
    runner = tiny_runner(assets=tiny_assets(), cache_dir=None, **SHAPES)
    runner.warmup_first()
    _finish(runner)
    assert set(runner.warmup_rest.table) == ALL and runner.warmup_rest.key is None
    assert not (tmp_path / "cache").exists()


def test_a_bad_cached_table_is_measured_again(tmp_path, caplog):
    cold = _runner(tmp_path)
    cold.warmup_first()
    _finish(cold)
    cache = PreparedCache(tmp_path / "cache")
    cache.store_json(cold.warmup_rest.key, [[1, 128, 0.01]])  # whole, but not these shapes
    again = _runner(tmp_path)
    with caplog.at_level("WARNING", logger="realtime.engine.warm_start"):
        assert set(again.warmup_first()) == {(1, 128), (1, 256)}
    assert "do not fit" in caplog.text


async def _serve_once(cache_dir: str, ws_connect) -> tuple[bytes, int, dict]:
    from realtime.server.app import Server
    from realtime.server.config import ServerConfig

    config = ServerConfig(port=0, weights="tiny-random", device="cpu", batch_sizes=(1, 2),
                          kv_buckets=(256, 512), max_slots=4, admission="queue-only",
                          cache_dir=cache_dir)
    server = Server(config)
    await server.start()
    try:
        await asyncio.wait_for(server.wait_ready(), 180)
        deferred = server.worker.runner.warmup_rest.deferred
        client = await ws_connect(server)
        # One sentence: one segment, so no batching choice (which the cost
        # model makes, and which may move fp32 rounding) separates the runs.
        t = await client.speak_and_collect("a", "Hello there, goodbye.", params={"seed": 5},
                                           timeout=240)
        t.check_done()
        for _ in range(2400):  # idle now: the rest of the warm-up runs
            if server.worker.warming == 0:
                break
            await asyncio.sleep(0.05)
        assert server.worker.warming == 0
        status, _, body = await asyncio.to_thread(http_get, server.port, "/readyz")
        assert status == 200 and json.loads(body)["warming"] == 0
        return bytes(t.audio), deferred, dict(server.worker.scheduler.cost.table)
    finally:
        await server.close()


async def test_a_warm_start_serves_the_audio_of_a_cold_one(tmp_path, ws_connect):
    cache_dir = str(tmp_path / "cache")
    cold_audio, cold_left, cold_costs = await _serve_once(cache_dir, ws_connect)
    warm_audio, warm_left, _ = await _serve_once(cache_dir, ws_connect)
    # The audio within a few 16-bit steps: the servers' timing may
    # pack vocoder windows differently, which moves a sample by a rounding step
    # (as in tests/test_server_overlap.py). A lost or shifted chunk is ~0.1 off.
    cold, warm = (decode_samples(a, "pcm_s16le") for a in (cold_audio, warm_audio))
    assert len(cold) == len(warm) > 0 and float(np.abs(cold - warm).max()) <= 4 / 32768
    assert cold_left == 2  # batch 2 at both buckets, left for idle time
    assert warm_left == 1  # batch 2 warmed once, untimed
    # Once idle, the cold server's cost model knew every shape.
    assert {(2, 256), (2, 512)} <= set(cold_costs)


class _HeldRest:
    """Warm-up pieces that wait for the test's go: what ``StagedWarmup`` offers."""

    def __init__(self, pieces: int):
        self.left, self.go, self.ran = pieces, threading.Event(), 0

    def step(self, cost=None):
        self.go.wait(30)
        self.left -= 1
        self.ran += 1
        return {}


async def test_readyz_counts_the_warm_up_left_and_work_is_served(server_factory, ws_connect):
    from realtime.engine.tone import ToneRunner

    rest = _HeldRest(3)

    class WarmingTone(ToneRunner):
        """A tone runner whose warm-up leaves ``rest`` for idle time."""

        @property
        def warmup_left(self) -> int:
            return rest.left

        def warm_idle(self, cost=None):
            return rest.step(cost)

    server = await server_factory(runner=WarmingTone())
    status, _, body = await async_http_get(server.port, "/readyz")
    assert status == 200 and json.loads(body)["warming"] == 3  # ready, and honest about the rest
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "a", "text": "Served between pieces."})
    rest.go.set()  # the piece in progress ends; the speak is served
    t = (await client.collect(["a"], timeout=60))["a"]
    t.check_done()
    for _ in range(200):
        if rest.left == 0:
            break
        await asyncio.sleep(0.05)
    status, _, body = await async_http_get(server.port, "/readyz")
    assert json.loads(body)["warming"] == 0 and rest.ran == 3


def test_the_piece_in_progress_still_counts_as_left(tmp_path, monkeypatch):
    runner = _runner(tmp_path)
    runner.warmup_first()
    rest = runner.warmup_rest
    seen = []
    real = runner._time_decode
    monkeypatch.setattr(runner, "_time_decode", lambda b, k, *a: seen.append(rest.left) or real(b, k, *a))
    _finish(runner)
    assert seen == [4, 3, 2, 1]  # a server stopped mid-piece has not stored a half table


@pytest.mark.parametrize("engine", ["ort", "torch"])
def test_a_timed_step_attends_over_its_whole_bucket_of_written_pages(engine, monkeypatch):
    # ONNX Runtime reads only the positions a row holds: rows timed at
    # position 0 would leave a bucket's K/V reads out of the cost model.
    runner = tiny_runner(assets=tiny_assets(), cpu_engine=engine, **SHAPES)
    seen, touched = [], []
    decode, touch = runner.model.decode, runner.cache.touch
    monkeypatch.setattr(runner.model, "decode", lambda x, slots, pos, *a, **k: seen.append(
        (len(seen), pos.tolist())) or decode(x, slots, pos, *a, **k))
    monkeypatch.setattr(runner.cache, "touch", lambda n: touched.append((len(seen), n)) or touch(n))
    assert runner._time_decode(2, 128) > 0
    assert seen == [(i, [127, 127]) for i in range(4)]  # one untimed, then the median of 3
    assert touched == [(1, 128)]  # after the untimed first step, before the timed ones
    assert runner.step.state.position[runner.cache.scratch] == 0


def test_a_timed_step_is_the_median_of_three_not_the_best(monkeypatch):
    # On a machine whose speed moves, the best of a few read 10-17% under what
    # served steps cost, and capacity admission took streams it could not serve.
    runner = tiny_runner(assets=tiny_assets(), **SHAPES)
    clock = iter([0.0, 0.0, 5.0, 5.0, 6.0, 6.0, 8.0])  # untimed, then steps of 5, 1 and 2 s
    monkeypatch.setattr(runner_module.time, "perf_counter", lambda: next(clock))
    assert runner._time_decode(1, 128) == 2.0
