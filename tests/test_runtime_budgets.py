"""Host<->device transfers and kernel launches per steady decode step and per
vocoder call, counted on the CPU as the runner would make them on a GPU
(bench/device_counts.py explains the method).

The hot-path issue (#12) sets the budgets: at most 1 blocking transfer per
steady decode step and at most 1 vocoder call per step for 32 concurrent
streams. A steady decode step now sends nothing to the device (per-slot
state lives there) and reads its EOS flags once; with graphs it is one
replay. Vocoding is one packed call per step. Tightening a bound is
changing its number below.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from runtime_fixtures import GREEDY, TEXTS, Driver, request, strict_graph_runner, tiny_runner

from bench.device_counts import DEVICE, DeviceCounter, kv_bytes_per_step
from realtime.engine.model.shapes import FULL

pytestmark = pytest.mark.usefixtures("one_torch_thread")
log = logging.getLogger(__name__)

DECODE_STEP_BLOCKING = 1  # the EOS read
DECODE_STEP_H2D = 0  # device-side step state; slot ids only when the batch changes
DECODE_STEP_D2H = 1  # the EOS flags: the scheduler needs them
GRAPH_STEP_LAUNCHES = 1  # the decode graph's replay, sampling included
KV_IN_PLACE_SHARE = 0.35  # K/V bytes in place vs gathered at batch 64 of 64 slots (65/192)
VOCODER_CALL_BLOCKING = 1  # the audio read back for the wire
VOCODER_CALLS_PER_STEP_32_STREAMS = 1  # one packed call per step (was 32: one per stream)

SHAPES = dict(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64, 128), device=str(DEVICE))


def _steady_counts(runner, steps: int = 3) -> list:
    """Counts of ``steps`` decode steps of 3 running one-shot jobs that
    neither join, leave nor stream (the steady state of a batch)."""
    d = Driver(runner)
    for i, text in enumerate(TEXTS[:3]):
        d.add(i, request(text, **dict(GREEDY, min_new_tokens=20, max_new_tokens=20)))
    d.step()  # prefill
    d.step()  # first decode: builds the batch's sampling parameters
    counts = []
    for _ in range(steps):
        with DeviceCounter() as counter:
            out = d.step()
        assert not out.finished and not out.audio and set(out.tokens) == {0, 1, 2}
        counts.append(counter.counts)
    d.run()
    return counts


@pytest.mark.parametrize("path", ["eager", "graphs"])
def test_steady_decode_step_transfers(path):
    runner = strict_graph_runner(**SHAPES) if path == "graphs" else tiny_runner(**SHAPES)
    counts = _steady_counts(runner)
    for c in counts:
        log.info("steady decode step (%s, batch 3 padded to 4, tiny model): %s; %s",
                 path, c, dict(c.sites))
        assert c.h2d <= DECODE_STEP_H2D and c.d2h <= DECODE_STEP_D2H
        assert c.blocking <= DECODE_STEP_BLOCKING
    assert len({(c.h2d, c.d2h, c.h2d_async, c.launches) for c in counts}) == 1  # the same every step
    assert counts[0].h2d_async == 0
    if path == "graphs":
        assert counts[0].launches <= GRAPH_STEP_LAUNCHES


def test_graph_replay_launches_fewer_kernels_than_eager():
    eager = _steady_counts(tiny_runner(**SHAPES), steps=1)[0]
    runner = strict_graph_runner(**SHAPES)
    graphs = _steady_counts(runner, steps=1)[0]
    log.info("launches per steady decode step: eager %d, with graphs %d", eager.launches, graphs.launches)
    # The whole step, sampling included, collapses into one replay.
    assert graphs.launches < eager.launches
    assert graphs.launches <= GRAPH_STEP_LAUNCHES


def test_a_change_of_batch_sends_slot_ids_without_blocking():
    runner = strict_graph_runner(**SHAPES)
    d = Driver(runner)
    for i, text in enumerate(TEXTS[:2]):
        d.add(i, request(text, **dict(GREEDY, min_new_tokens=20, max_new_tokens=20)))
    d.step()
    d.step()
    d.add(2, request(TEXTS[2], **dict(GREEDY, min_new_tokens=20, max_new_tokens=20)))
    with DeviceCounter() as counter:
        d.step()  # a prefill beside the running decode: prompts and parameters
    prefill = counter.counts
    with DeviceCounter() as counter:
        d.step()  # the new batch of 3: its slot ids
    joined = counter.counts
    log.info("prefill step: %s; %s; first step of a new batch: %s", prefill, dict(prefill.sites), joined)
    assert prefill.blocking <= DECODE_STEP_BLOCKING + 1  # the allowance: prefill adds one
    assert prefill.h2d == 0 and prefill.h2d_async == 2
    assert joined.blocking == DECODE_STEP_BLOCKING and joined.h2d_async == 1
    d.run()


def test_kv_bytes_per_step_on_the_graph_path():
    # Full size, bf16, 64 slots: at batch 64 and a 2048 bucket, gathering
    # moved ~24 GB per step; attending in place reads each K/V byte once.
    gather = kv_bytes_per_step(FULL, 64, 64, 2048, in_place=False)
    chosen = kv_bytes_per_step(FULL, 64, 64, 2048)
    log.info("KV bytes per step, full size bf16, 64 slots, batch 64 x 2048: gather %.2f GB, "
             "in place %.2f GB", gather["total"] / 1e9, chosen["total"] / 1e9)
    assert chosen["in_place"] and chosen["total"] <= gather["total"] * KV_IN_PLACE_SHARE
    small = kv_bytes_per_step(FULL, 64, 1, 2048)  # one row of 64 slots: gathering is cheaper
    assert not small["in_place"] and small["total"] < chosen["total"] / 8
    runner = strict_graph_runner(**SHAPES)
    cache = runner.graphs
    for b, _ in cache.decode_graphs:
        assert runner.cache.reads_in_place(b) == bool(kv_bytes_per_step(runner.shape, 4, b, 64)["in_place"])


def test_vocoder_call_transfers():
    runner = tiny_runner(**SHAPES)
    hidden = torch.randn(24, runner.shape.hidden, device=DEVICE)
    runner.vocoder.one_shot(hidden[:4])  # first call outside the count
    with DeviceCounter() as counter:
        audio = runner.vocoder.one_shot(hidden)
    c = counter.counts
    log.info("one vocoder call (24 steps, tiny model): %s; %s", c, dict(c.sites))
    assert isinstance(audio, np.ndarray) and len(audio) > 0
    assert c.h2d == 0 and c.d2h == VOCODER_CALL_BLOCKING
    assert c.launches > 0


def test_vocoder_calls_per_step_with_32_streams():
    # Streams join in groups, so at any step they are at different ages and
    # their due windows differ in length: one packed call takes them all.
    runner = tiny_runner(max_slots=32, batch_sizes=(1, 8, 32), kv_buckets=(128,))
    d = Driver(runner)
    calls, chunks = [], {}
    for step in range(400):
        if step % 3 == 0 and step < 24:
            for i in range(step // 3 * 4, step // 3 * 4 + 4):
                d.add(i, request(TEXTS[i % 4], streaming=True, seed=i, min_new_tokens=40,
                                 max_new_tokens=40))
        if not (d.live or d.pending):
            break
        before = runner.vocoder.calls
        out = d.step()
        calls.append(runner.vocoder.calls - before)
        for job_id, audio in out.audio.items():
            chunks[job_id] = chunks.get(job_id, 0) + (len(audio) > 0)
    log.info("vocoder calls per step, 32 streams of 40 steps: max %d, mean %.2f over %d steps",
             max(calls), sum(calls) / len(calls), len(calls))
    assert sorted(d.finished) == list(range(32))
    assert min(chunks.values()) >= 3  # every stream got audio while decoding, not only at its end
    assert max(calls) <= VOCODER_CALLS_PER_STEP_32_STREAMS


def test_counter_counts_what_it_should():
    x = torch.arange(6.0, device=DEVICE)
    with DeviceCounter() as counter:
        a = torch.tensor([1, 2], device=DEVICE)  # h2d
        host = torch.tensor([0, 1])  # host: no transfer
        host.tolist()
        x[host]  # a host index tensor used on the device: an implicit h2d
        x[torch.arange(2)]  # a host factory's tensor, the same
        x.cpu().tolist()  # one d2h (the tolist reads the host copy)
        x.sum().item()  # d2h
        x.to(device="cpu", dtype=torch.float32).numpy()  # d2h
        bool(x[0] > 1)  # d2h
        torch.zeros(3, device=DEVICE)  # a fill, no transfer
        torch.tensor([3.0]).to(DEVICE, non_blocking=True)  # async h2d
        a + 1
    c = counter.counts
    assert (c.h2d, c.d2h, c.h2d_async) == (3, 4, 1), dict(c.sites)
    assert c.launches >= 4
