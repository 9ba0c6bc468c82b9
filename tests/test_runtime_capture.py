"""The CUDA path on the CPU: the exact code captured into CUDA graphs, traced
under the strict stand-in of bench/strict_graphs.py, and the model step on
the ``meta`` device in bf16.

- Through ``GraphCache``'s real bookkeeping, the runner's graph path (padded
  batches, static inputs, one shared pool) decodes every fidelity text as
  upstream does, codes and hidden states.
- A graph replayed at other slots and positions than it was captured with
  matches eager on the same cache, while the pool poisons every other
  graph's output; a branch frozen at capture is caught by that comparison.
- The guard refuses host syncs, host data, random draws, boolean masks and
  device mixing, so each of those in the model's step would fail here.
"""

from __future__ import annotations

import pytest
import torch
from runtime_fixtures import (
    GREEDY,
    TEXTS,
    Driver,
    fidelity_runner,
    meta_runner,
    request,
    strict_graph_runner,
)

from bench.strict_graphs import CaptureGuard, CaptureViolation, StrictCapture
from realtime.engine.cuda.graphs import GraphCache
from realtime.engine.sampling import RowParams, sample

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SHAPES = dict(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64, 128))


@pytest.fixture(scope="module")
def graph_runner():
    runner = strict_graph_runner(fidelity_runner, **SHAPES)
    cache = runner.graphs
    assert cache.errors == []
    assert set(cache.decode_graphs) == {(b, k) for b in (1, 2, 4) for k in (64, 128)}
    assert set(cache.prefill_graphs) == {(b, p) for b in (1, 2, 4) for p in (32, 64)}
    return runner


def _replays(cache) -> int:
    return sum(e.graph.replays for e in (*cache.decode_graphs.values(), *cache.prefill_graphs.values()))


def test_graph_path_decodes_as_upstream(graph_runner, references):
    cache = graph_runner.graphs
    before = {k: e.graph.replays for k, e in cache.decode_graphs.items()}
    prefills_before = sum(e.graph.replays for e in cache.prefill_graphs.values())
    d = Driver(graph_runner)
    d.add(0, request(TEXTS[0], **GREEDY))
    d.add(1, request(TEXTS[1], **GREEDY))
    for _ in range(3):
        d.step()
    d.add(2, request(TEXTS[2], **GREEDY))  # 3 rows: a padded batch of 4
    d.step()
    d.add(3, request(TEXTS[3], **GREEDY))
    d.run()
    for i, text in enumerate(TEXTS):
        ref = references[text]
        assert torch.equal(d.codes[i], ref.codes), text
        assert (d.hidden[i] - ref.hidden).abs().max().item() <= 1e-4, text
    used = {k for k, e in cache.decode_graphs.items() if e.graph.replays > before[k]}
    assert {(2, 64), (4, 64)} <= used  # real rows and padded rows both replayed
    assert sum(e.graph.replays for e in cache.prefill_graphs.values()) > prefills_before


def _device_state(runner) -> list[torch.Tensor]:
    """Everything a decode step reads or writes on the device."""
    st = runner.step.state
    p = st.params
    return [*runner.cache.k, *runner.cache.v, runner.codes, runner.hidden, st.position, st.steps,
            p.temperature, p.top_p_cut, p.top_k, p.penalty, p.min_new, p.seed]


def _clone_cache(cache):
    return [t.clone() for t in cache.k + cache.v]


def _restore(tensors, saved):
    for t, s in zip(tensors, saved):
        t.copy_(s)


def _random_state(runner, gen) -> None:
    """Distinct K/V and codes everywhere; slots 0-3 mid-stream at distinct
    positions with distinct sampling parameters."""
    for layer in runner.cache.k + runner.cache.v:
        layer.copy_(torch.randn(layer.shape, generator=gen))
    runner.codes.copy_(torch.randint(0, runner.shape.num_audio_tokens - 1, runner.codes.shape, generator=gen))
    st = runner.step.state
    n = 4
    st.set_rows(torch.arange(n), torch.tensor([40, 7, 63, 12]), torch.tensor([20, 3, 30, 17]))
    ints = torch.tensor([[3, 0, 11], [20, 5, 12], [7, 0, 13], [626, 0, 14]])
    floats = torch.tensor([[0.3, 0.3, 1.05], [1.0, 0.1, 1.2], [0.7, 0.5, 1.0], [1e-5, 0.3, 1.05]])
    st.load(torch.arange(n), ints, floats)


def test_replay_at_other_slots_and_positions_matches_eager(graph_runner):
    # The whole decode step (state, model, sampling, stores, advance) as a
    # graph, replayed at slots it was not captured with, equals the eager step.
    runner, cache = graph_runner, graph_runner.graphs
    gen = torch.Generator().manual_seed(0)
    _random_state(runner, gen)
    saved = [t.clone() for t in _device_state(runner)]
    other = cache.decode_graphs[(1, 64)]
    other_out = cache.decode(torch.tensor([2]), 64)
    assert other_out is other.output and other_out.dtype == torch.bool
    for slots in ([3, 0], [1, 2], [0, 3]):
        s = torch.tensor(slots)
        _restore(_device_state(runner), saved)
        want = runner.step.decode(s, 64).clone()
        want_state = [t.clone() for t in _device_state(runner)]
        _restore(_device_state(runner), saved)
        got = cache.decode(s, 64)
        assert got is cache.decode_graphs[(2, 64)].output
        assert torch.equal(got, want)
        for a, b in zip(_device_state(runner), want_state):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
        # One pool: the other graph's output did not survive this replay.
        assert other.output.all()
    _restore(_device_state(runner), saved)


def test_a_branch_frozen_at_capture_is_caught_by_replay(graph_runner):
    # ``first_slot`` selects a cache view in Python: captured with the
    # scratch slot, the graph keeps reading it at every replay.
    runner = graph_runner
    m, kv = runner.model, runner.cache
    inputs = (torch.zeros(1, m.shape.hidden), torch.tensor([kv.scratch]), torch.zeros(1, dtype=torch.long))
    frozen = StrictCapture()(lambda x, s, p: m.decode(x, s, p, kv, 64, kv.scratch), inputs)
    gen = torch.Generator().manual_seed(1)
    for layer in kv.k + kv.v:
        layer.copy_(torch.randn(layer.shape, generator=gen))
    x, s, p = torch.randn(1, m.shape.hidden, generator=gen), torch.tensor([1]), torch.tensor([20])
    saved = _clone_cache(kv)
    want = m.decode(x, s, p, kv, 64)
    _restore(kv.k + kv.v, saved)
    for dst, src in zip(frozen.inputs, (x, s, p)):
        dst.copy_(src)
    frozen.graph.replay()
    assert not torch.allclose(frozen.output, want, atol=1e-3)


def test_a_new_graphs_output_is_poisoned_until_replayed(graph_runner):
    entry = graph_runner.graphs.prefill_graphs[(1, 32)]
    runner = graph_runner
    cache = GraphCache(runner.model, runner.cache, runner.step, StrictCapture())
    cache.capture_decode(1, 64)
    assert cache.decode_graphs[(1, 64)].output.all()  # every row "finished"
    del entry


def _capture(fn, *inputs):
    return StrictCapture()(fn, inputs)


PLANTED = {
    "item": lambda x: x * x.sum().item(),
    "tolist": lambda x: x * len([v for v in x.tolist() if v > 0]),
    "bool": lambda x: x if bool((x > 0).any()) else -x,
    "nonzero": lambda x: x.index_select(0, torch.nonzero(x > 0).flatten()),
    "mask": lambda x: x.masked_fill(x > 0, 0.0)[x != 0].sum() + x,
    "host data": lambda x: x + torch.tensor([1.0, 2.0, 3.0]),
    "random": lambda x: x + torch.rand(3),
    "equal": lambda x: x * float(torch.equal(x, x)),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_guard_refuses_what_a_capture_cannot_hold(name):
    with pytest.raises((CaptureViolation, RuntimeError)) as info:
        _capture(PLANTED[name], torch.tensor([1.0, -2.0, 3.0]))
    assert "CaptureViolation" in repr(info.value) or "_local_scalar_dense" in str(info.value) \
        or isinstance(info.value, CaptureViolation)


def test_guard_lets_the_real_step_through():
    m = fidelity_runner(**SHAPES)
    x, slots, pos = torch.zeros(2, m.shape.hidden), torch.tensor([0, 1]), torch.tensor([3, 4])
    with CaptureGuard("cpu") as guard:
        m.model.decode(x, slots, pos, m.cache, 64)
    assert guard.ops > 50 and guard.violations == 0
    with pytest.raises(CaptureViolation), CaptureGuard("cpu"):
        m.model.decode(x, slots, torch.tensor([3, 4]), m.cache, 64)


# --- meta device, bf16 ---------------------------------------------------------------


def test_model_step_on_meta_in_bf16_is_device_and_dtype_clean():
    r = meta_runner()
    m, kv = r.model, r.cache
    d = m.shape.hidden
    assert kv.k[0].dtype == torch.bfloat16 and kv.k[0].device.type == "meta"
    meta, bf16 = dict(device="meta"), dict(device="meta", dtype=torch.bfloat16)
    x_pre, x_dec = torch.zeros(2, 32, d, **bf16), torch.zeros(4, d, **bf16)
    slots = torch.tensor([1, 0, kv.scratch, kv.scratch], **meta)
    pos = torch.zeros(4, dtype=torch.long, **meta)
    with CaptureGuard("meta", what="meta prefill"):
        hidden = m.prefill(x_pre, slots[1:3], kv)
    assert hidden.dtype == torch.float32 and hidden.shape == (2, 32, d)
    with CaptureGuard("meta", what="meta decode"):
        out = m.decode(x_dec, slots, pos, kv, 64)
        view = m.decode(x_dec[:2], slots[:2], pos[:2], kv, 64, 0)
        logits = m.logits(out)
    assert out.dtype == view.dtype == torch.float32 and out.shape == (4, d)
    assert logits.dtype == torch.float32 and logits.shape == (4, m.shape.num_vq, m.shape.num_audio_tokens)
    params = RowParams.build([request("x").params] * 4, [1, 2, 3, 4], m.shape.num_audio_tokens, "meta")
    history = torch.zeros(4, m.shape.num_vq, 16, dtype=torch.long, **meta)
    with CaptureGuard("meta", what="meta sampling"):
        codes = sample(logits, history, pos, params)
    assert codes.dtype == torch.int64 and codes.shape == (4, m.shape.num_vq)
