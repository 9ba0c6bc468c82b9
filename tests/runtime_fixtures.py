"""Shared helpers for the runtime tests: tiny-random assets, a CPU runner, the
upstream reference, and a loop that drives jobs through ``execute``."""

from __future__ import annotations

import pytest
import torch

from realtime.runtime.api import RuntimeOptions, SamplingParams, SegmentRequest
from realtime.runtime.build import build_runner
from realtime.runtime.shapes import TINY
from realtime.runtime.weights import random_assets
from scheduler.plan import Lane, StepPlan

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


class Driver:
    """Runs jobs to completion, one ``execute`` per step, recording codes/audio."""

    def __init__(self, runner):
        self.runner = runner
        runner.record_codes = True
        self.live: list[int] = []
        self.pending: list[int] = []
        self.codes: dict[int, torch.Tensor] = {}
        self.audio: dict[int, list] = {}
        self.tokens: dict[int, int] = {}
        self.finished: list[int] = []

    def add(self, job_id: int, req: SegmentRequest) -> None:
        self.runner.prepare(job_id, req)
        self.pending.append(job_id)
        self.audio[job_id] = []

    def step(self, release=()) -> None:
        plan = StepPlan(Lane.BACKGROUND, prefill=tuple(self.pending), decode=tuple(self.live),
                        release=tuple(release), batch_size=len(self.pending) + len(self.live))
        out = self.runner.execute(plan)
        assert not out.failed, out.failed
        assert not out.oom
        self.live = [j for j in self.live + self.pending if j not in out.finished]
        self.pending = []
        for j, chunk in out.audio.items():
            self.audio[j].append(chunk)
        self.tokens.update(out.tokens)
        self.finished.extend(out.finished)
        self.codes.update(self.runner.finished_codes)
        return out

    def run(self, max_steps: int = 400) -> None:
        for _ in range(max_steps):
            if not (self.live or self.pending):
                return
            self.step()
        raise AssertionError("jobs did not finish")
