"""Shared helpers for the runtime tests: tiny-random assets, a CPU runner, and
the ``Driver`` that runs jobs through ``execute`` (from tools/driver.py)."""

from __future__ import annotations

import pytest
import torch

from realtime.runtime.api import RuntimeOptions, SamplingParams, SegmentRequest
from realtime.runtime.build import build_runner
from realtime.runtime.shapes import TINY
from realtime.runtime.weights import random_assets
from tools.driver import Driver  # noqa: F401 - re-exported for the test modules

GREEDY = dict(temperature=1e-5, min_new_tokens=8, max_new_tokens=48)
TEXTS = ["Hello world, this is a test.", "A b c.", "The test of the world and this, hello again.",
         "To be."]

_ASSETS = {}


@pytest.fixture(scope="module")
def one_torch_thread():
    """Run a module's tests on one torch thread: the models are tiny, the two
    cores are shared, and extra threads only add contention."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def tiny_assets(seed: int = 0):
    """Tiny-random assets, built once per seed per process (read-only use)."""
    if seed not in _ASSETS:
        _ASSETS[seed] = random_assets(TINY, seed)
    return _ASSETS[seed]


def tiny_runner(seed: int = 0, **options):
    opts = RuntimeOptions(weights="tiny-random", device="cpu", **options)
    return build_runner(opts, assets=tiny_assets(seed))


def request(text: str, streaming: bool = False, voice: str = "ash", **params) -> SegmentRequest:
    return SegmentRequest(text, voice=voice, params=SamplingParams(**params), streaming=streaming)
