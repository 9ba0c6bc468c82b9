"""EOS flags read one step later (realtime/engine/eos_read.py), on the CPU.

The deferred read is CUDA's default; here the same code runs on the CPU
(``eos_read="deferred"``) beside the blocking read, on the same jobs: the
codes and finish order must be the blocking read's, the hidden states and
audio too within float error,
eagerly and under the strict capture stand-in, with jobs ending at EOS
(each draws one code that is discarded) and at ``max_new``, with a job
released while its flags are in flight and its slot reused, and across a
step that runs out of memory or fails.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import TEXTS, Driver, fidelity_runner, request, strict_graph_runner, tiny_runner

from realtime.engine.eos_read import deferred_for

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# Buckets the jobs cross (prompts of 10-20 tokens, 60 codes): a bucket one
# position short of what the device writes would show.
SHAPES = dict(max_slots=6, batch_sizes=(1, 2, 4, 8), kv_buckets=(32, 64, 128))
VOCODER_BUDGET = 24  # hidden steps per step: some ends must wait for their audio
MAX_NEW = 60
HIDDEN_ATOL = 1e-4  # test_runtime_decoder's bound across batch shapes
AUDIO_ATOL = 1e-3


def _request(i: int):
    """Jobs that end at EOS (hot sampling) and at max_new, streaming or not."""
    return request(TEXTS[i % 4], streaming=i % 2 == 0, seed=i + 1, temperature=0.9, top_k=50,
                   min_new_tokens=1, max_new_tokens=MAX_NEW)


def _run(runner, release_at: int | None = None) -> Driver:
    """Jobs 0-3 at once, 4 and 5 joining mid-run; with ``release_at``, job 0
    is released in that step and job 6 takes its slot."""
    d = Driver(runner)
    d.ended_at = {}  # type: ignore[attr-defined]
    for i in range(4):
        d.add(i, _request(i))
    for step in range(400):
        if step == 3:
            d.add(4, _request(4))
            d.add(5, _request(5))
        release = (0,) if step == release_at and 0 in d.live else ()
        if release:
            d.add(6, _request(6))
        if not (d.live or d.pending):
            return d
        out = d.step(release)
        d.ended_at.update((job, step) for job in out.finished)  # type: ignore[attr-defined]
        if release_at is not None and step >= release_at:
            assert 0 not in out.tokens and 0 not in out.audio and 0 not in out.finished
    raise AssertionError("jobs did not finish")


def _assert_same(blocking: Driver, deferred: Driver) -> None:
    """Same codes, lengths and finish order; the same hidden states and audio
    within float error: a batch still holding a row that ended a step ago
    may attend over a longer length or run another batch size's graph (the
    bound is test_runtime_decoder's across batch mates)."""
    assert deferred.finished == blocking.finished
    assert set(deferred.codes) == set(blocking.codes)
    lengths = {j: len(c) for j, c in blocking.codes.items()}
    assert min(lengths.values()) < MAX_NEW and max(lengths.values()) == MAX_NEW, lengths
    for job in blocking.codes:
        assert torch.equal(deferred.codes[job], blocking.codes[job]), job
        a, b = (np.concatenate(d.audio[job]) if d.audio[job] else np.zeros(0) for d in (blocking, deferred))
        assert a.shape == b.shape, job
        assert (deferred.hidden[job] - blocking.hidden[job]).abs().max().item() <= HIDDEN_ATOL, job
        assert np.abs(a - b).max(initial=0.0) <= AUDIO_ATOL, job
        assert deferred.tokens[job] == blocking.tokens[job] == lengths[job]


def _runner(mode: str, build=tiny_runner):
    runner = build(eos_read=mode, **SHAPES)
    runner.audio.steps_per_call = VOCODER_BUDGET
    return runner


@pytest.fixture(scope="module")
def eager():
    return {mode: _runner(mode) for mode in ("blocking", "deferred")}


def test_the_modes_by_device():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert not deferred_for("auto", cpu) and deferred_for("auto", cuda)
    assert deferred_for("deferred", cpu) and not deferred_for("blocking", cuda)
    with pytest.raises(ValueError, match="unknown EOS read"):
        deferred_for("sometimes", cpu)


def test_deferred_reads_give_the_blocking_codes_audio_and_order(eager):
    blocking, deferred = _run(eager["blocking"]), _run(eager["deferred"])
    _assert_same(blocking, deferred)
    # Every end, at EOS or at max_new, is known exactly one step later.
    assert deferred.ended_at == {j: s + 1 for j, s in blocking.ended_at.items()}
    assert not eager["deferred"].eos.pending and not eager["deferred"].jobs


def test_a_deferred_step_leaves_its_flags_in_flight(eager):
    for mode, runner in eager.items():
        d = Driver(runner)
        d.add(1, _request(1))
        out = d.step()  # the prefill: one code drawn
        held = runner.jobs[1]
        assert out.tokens[1] == held.drawn == 1
        assert (held.n_codes, held.in_flight, runner.eos.pending) == ((0, 1, True) if mode == "deferred"
                                                                      else (1, 0, False))
        d.run()
        assert not runner.eos.pending and not runner.jobs


def test_deferred_reads_under_strict_graphs():
    runners = {mode: _runner(mode, strict_graph_runner) for mode in ("blocking", "deferred")}
    _assert_same(_run(runners["blocking"]), _run(runners["deferred"]))


def test_a_release_while_flags_are_in_flight(eager):
    blocking, deferred = _run(eager["blocking"], release_at=6), _run(eager["deferred"], release_at=6)
    assert 0 not in deferred.codes and 6 in deferred.codes
    _assert_same(blocking, deferred)


def test_a_job_at_max_new_is_not_decoded_past_its_last_code():
    # max_new is the cache's room here: once the code in flight is the
    # job's last, the deferred runner decodes it no more (no wasted row).
    codes, decodes = {}, {}
    for mode in ("blocking", "deferred"):
        runner = tiny_runner(eos_read=mode, max_slots=2, batch_sizes=(1, 2), kv_buckets=(64,))
        counted = _FailOnce(runner, 0, RuntimeError("never"))
        d = Driver(runner)
        d.add(1, request("A short one.", seed=3, min_new_tokens=500, max_new_tokens=500))
        d.run()
        codes[mode], decodes[mode] = d.codes[1], counted.calls
        assert d.prompt_len[1] + len(d.codes[1]) == 64 and not runner.jobs
    assert torch.equal(codes["deferred"], codes["blocking"])
    assert decodes["deferred"] == decodes["blocking"] == len(codes["blocking"]) - 1


class _FailOnce:
    """Wraps ``runner._run_decode``: the ``at``-th decode raises ``exc``."""

    def __init__(self, runner, at: int, exc: BaseException):
        self.real, self.at, self.exc, self.calls = runner._run_decode, at, exc, 0
        runner._run_decode = self

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            raise self.exc
        return self.real(*args, **kwargs)


def test_a_step_out_of_memory_keeps_the_flags_in_flight():
    reference = _run(_runner("blocking"))
    for at in (2, 9, 20):  # while jobs start, while two steps' flags could be in flight, later
        runner = _runner("deferred")
        _FailOnce(runner, at, torch.OutOfMemoryError("injected"))
        d = Driver(runner)
        for i in range(4):
            d.add(i, _request(i))
        ooms = 0
        for step in range(400):
            if step == 3:
                d.add(4, _request(4))
                d.add(5, _request(5))
            if not (d.live or d.pending):
                break
            out = d.step(check=False)  # an out-of-memory step: the same plan again
            ooms += out.oom
        assert ooms == 1
        _assert_same(reference, d)


def test_a_failed_deferred_step_fails_its_jobs_and_the_rest_runs_on():
    runner = tiny_runner(eos_read="deferred", **SHAPES)
    _FailOnce(runner, 5, RuntimeError("injected"))
    d = Driver(runner)
    for i in range(3):
        d.add(i, _request(i))
    failed = {}
    for _ in range(6):  # a prefill, then the fifth decode fails
        failed.update(d.step(check=False).failed)
    assert set(failed) == {0, 1, 2} and "injected" in failed[0]
    assert not runner.jobs and not d.live
    # The slots are free and the device state is restored: new jobs decode
    # exactly as on a fresh blocking runner.
    for i in range(3, 7):
        d.add(i, _request(i))
    d.run()
    fresh = Driver(tiny_runner(eos_read="blocking", **SHAPES))
    for i in range(3, 7):
        fresh.add(i, _request(i))
    fresh.run()
    for job in range(3, 7):
        assert torch.equal(d.codes[job], fresh.codes[job]), job
    assert d.finished == fresh.finished and not runner.eos.pending


def test_refine_passes_beside_deferred_audio_jobs():
    # The refine stage runs the audio part of a step and the audio prompts of
    # ended passes as two executes in one step: each reads the other's flags.
    from test_runtime_refine import ASH, AUDIO, PROMPTS, refine_request

    from realtime.engine.api import SegmentRequest

    runs = {}
    for mode in ("blocking", "deferred"):
        d = Driver(fidelity_runner(eos_read=mode, max_slots=6, batch_sizes=(1, 2, 4, 8), kv_buckets=(128,)))
        d.add(9, SegmentRequest(TEXTS[0], voice=ASH, params=AUDIO))
        for i in range(3):
            d.add(i, refine_request(TEXTS[i + 1], PROMPTS[i % len(PROMPTS)]))
        d.run(max_steps=600)
        runs[mode] = d
    blocking, deferred = runs["blocking"], runs["deferred"]
    assert deferred.refined == blocking.refined and len(blocking.refined) == 3
    assert deferred.finished == blocking.finished
    for job in blocking.codes:
        assert torch.equal(deferred.codes[job], blocking.codes[job]), job
