"""The end-to-end stream bench: a real server records its steps, and the replay does the same work."""

from __future__ import annotations

import pytest
from runtime_fixtures import tiny_runner

from bench.stream_rtf import RUNNER_OPTIONS, StreamServer
from realtime.engine.step_log import replay

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.slow
def test_server_utterance_and_its_replay_do_the_same_work():
    with StreamServer("fp32", 1, extra_args=("--weights", "tiny-random")) as server:
        run = server.speak()
    assert run["audio_s"] > 0 and run["steps"] > 0
    assert run["rtf"] == pytest.approx(run["wall_s"] / run["audio_s"])
    assert run["server_step_ms"] >= run["execute_ms"] > 0
    assert 0 < run["first_audio_ms"] <= run["wall_s"] * 1e3
    records = run["records"]
    assert sum("plan" in r for r in records) == run["steps"]
    assert sum(len(r["requests"]) for r in records) == 3  # the text's three sentences
    # The same weights, seeds and plans: every step runs, as much audio comes out.
    ref = replay(tiny_runner(**RUNNER_OPTIONS), records)
    assert ref["steps"] == run["steps"] and ref["failed"] == 0
    assert ref["audio_s"] == pytest.approx(run["audio_s"], abs=1e-6)
