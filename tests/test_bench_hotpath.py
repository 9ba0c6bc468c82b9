"""The hot-path bench's pieces: its simulated streams and its last JSON line."""

from __future__ import annotations

import pytest

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from bench import hotpath
from bench.vocoder import random_models
from realtime.engine.vocoder.stage import PUSH_EVERY
from realtime.engine.vocoder.stream import StreamingVocoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_arrivals_push_every_few_steps_and_at_the_end():
    import torch

    hidden = [torch.zeros(10, 2), torch.zeros(6, 2)]
    pushes = [[(i, h.shape[0], last) for i, h, last in arrived]
              for arrived in hotpath._arrivals(hidden, [0, 3], PUSH_EVERY)]
    assert pushes == [[], [], [], [(0, 4, False)], [], [], [(1, 4, False)],
                      [(0, 4, False)], [(1, 2, True)], [(0, 2, True)]]


@pytest.mark.parametrize("staggered", [False, True])
def test_packed_and_lone_renders_of_the_same_windows_agree(staggered):
    vocoder = StreamingVocoder(*random_models(tiny=True, seed=0))
    r = hotpath.vocoder_ratio(vocoder, streams=3, seconds=2.0, staggered=staggered)
    assert r["windows"] == r["calls_alone"] >= 3 * 4
    # Started together, their windows fall due together and share calls.
    assert r["calls_packed"] <= r["calls_alone"] // (1 if staggered else 3)
    assert r["max_window_diff"] <= 1e-6
    assert r["ratio"] > 0


def test_the_last_line_has_the_issues_keys():
    counts = {"blocking": 4, "launches": 100}
    ratio = {"ratio": 0.5, "max_window_diff": 1e-7}
    line = hotpath.headline({"graphs": counts, "eager": counts,
                             "calls": {"max": 1, "packed_call_d2h": 1},
                             "ratios": {(8, False): ratio, (32, False): ratio, (8, True): ratio,
                                        (32, True): ratio},
                             "models": "tiny", "seconds": 20.0, "threads": 1})
    for key in ("transfers_per_decode_step", "launches_per_decode_step", "vocoder_calls_per_step_32",
                "batched_vocoder_ratio_8", "batched_vocoder_ratio_32"):
        assert key in line
