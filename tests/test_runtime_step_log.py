"""Recording a runner's work and replaying it without the server."""

from __future__ import annotations

import json

import pytest
from runtime_fixtures import TEXTS, Driver, request, tiny_runner

from bench.driver import CodeRecorder
from realtime.engine import step_log
from realtime.engine.api import RuntimeOptions
from realtime.engine.build import build_runner
from scheduler.plan import Lane, StepPlan

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_plans_and_requests_survive_json():
    plan = StepPlan(Lane.BACKGROUND, prefill=(3,), decode=(1, 2), release=(7,), batch_size=4,
                    kv_bucket=256)
    assert step_log.plan_from_json(json.loads(json.dumps(step_log.plan_to_json(plan)))) == plan
    req = request(TEXTS[1], streaming=True, seed=5, temperature=0.5)
    back = step_log.request_from_json(json.loads(json.dumps(step_log.request_to_json(req))))
    assert back == req


def test_the_recorder_writes_what_the_runner_did_and_stays_a_runner(tmp_path):
    from runtime_fixtures import tiny_assets

    path = tmp_path / "steps.jsonl"
    runner = build_runner(RuntimeOptions(weights="tiny-random", device="cpu",
                                         record_steps=str(path)), assets=tiny_assets())
    assert isinstance(runner, step_log.StepRecorder)
    assert runner.sample_rate == 24000 and runner.device == "cpu"  # delegated
    d = Driver(runner)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=6, max_new_tokens=6, streaming=True))
    d.run()
    runner.prepare(request(TEXTS[1]))  # prepared, never scheduled: not recorded
    records = step_log.read(str(path))
    assert len(records) == 6
    first = records[0]
    assert first["plan"]["prefill"] == [1] and first["seconds"] > 0
    assert step_log.request_from_json(first["requests"][0]).text == TEXTS[0]
    assert all(r["requests"] == [] for r in records[1:])
    # Each step's start on the monotonic clock: a step begins after the last one's work.
    assert all(b["started"] >= a["started"] + a["seconds"] * 0.99 for a, b in zip(records, records[1:]))
    assert step_log.read(str(path), start_line=5) == records[5:]


def test_an_unseeded_request_is_recorded_with_the_seed_it_drew(tmp_path):
    from runtime_fixtures import tiny_assets

    path = tmp_path / "steps.jsonl"
    runner = build_runner(RuntimeOptions(weights="tiny-random", device="cpu",
                                         record_steps=str(path)), assets=tiny_assets())
    d = Driver(runner)
    d.add(1, request(TEXTS[0], min_new_tokens=4, max_new_tokens=4))
    d.run()
    seed = step_log.read(str(path))[0]["requests"][0]["params"]["seed"]
    assert isinstance(seed, int)


def test_replay_reproduces_the_recorded_work(tmp_path):
    from runtime_fixtures import tiny_assets

    path = tmp_path / "steps.jsonl"
    recorder = build_runner(RuntimeOptions(weights="tiny-random", device="cpu",
                                           record_steps=str(path)), assets=tiny_assets())
    d = Driver(recorder)
    d.add(1, request(TEXTS[0], seed=1, min_new_tokens=10, max_new_tokens=10, streaming=True))
    d.step()
    d.add(2, request(TEXTS[2], seed=2, min_new_tokens=5, max_new_tokens=7))
    d.run()
    fresh = tiny_runner()
    recorded = CodeRecorder(fresh)
    result = step_log.replay(recorded, step_log.read(str(path)))
    assert result["steps"] == 10 and result["failed"] == 0 and not fresh.jobs
    assert result["audio_s"] == pytest.approx(
        sum(len(c) for chunks in d.audio.values() for c in chunks) / 24000)
    for job in (1, 2):
        assert (recorded.codes[job] == d.codes[job]).all()
