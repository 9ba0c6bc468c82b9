"""Fidelity of our static-KV decoder against upstream ChatTTS's GPT.generate.

Tiny-random weights on CPU, for every fp32 GEMM backend this torch offers
(``mm``, ``mkl``, ``onednn``; each forced; unavailable ones are skipped with
the reason). Greedy decoding (temperature 1e-5 on both sides:
upstream always keeps >= 3 candidates, so top_k=1 is not greedy there) must
give identical codes and near-identical hidden states at batch 1, at batch 4
with mixed prompt lengths, and when jobs join and leave a running batch.
Seeded sampling must not depend on batch mates; cancelled jobs and reused
slots must leave no stale KV state behind.
"""

from __future__ import annotations

import pytest
import torch
from runtime_fixtures import GREEDY, TEXTS, Driver, request, tiny_assets, tiny_runner

from realtime.runtime.cpu_gemm import FP32_BACKENDS, backend_available
from tools.upstream import UpstreamGPT

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CPU = torch.device("cpu")
GEMMS = [pytest.param(b, marks=pytest.mark.skipif(
    not backend_available(b, CPU, torch.float32), reason=f"this torch cannot run the {b} backend"))
    for b in FP32_BACKENDS]


@pytest.fixture(scope="module", params=GEMMS)
def runner(request):
    return tiny_runner(cpu_gemm=request.param)


@pytest.fixture(scope="module")
def upstream():
    return UpstreamGPT(tiny_assets())


@pytest.fixture(scope="module")
def references(upstream):
    """Upstream greedy codes and hidden states for each text, at batch 1."""
    prompts = tiny_runner(cpu_gemm="mm")
    refs = {}
    for i, text in enumerate(TEXTS):
        prompts.prepare(900 + i, request(text, **GREEDY))
        prompt = prompts.jobs[900 + i].prompt
        prompts.forget(900 + i)
        refs[text] = upstream.generate([prompt], **GREEDY)[0]
    return refs


def test_runner_uses_the_backend_it_was_given(runner):
    forced = runner.options.cpu_gemm
    assert set(runner.model.backends(2)) == {forced}
    assert set(runner.model.backends(1)) == {forced}


@pytest.mark.parametrize("gemm", GEMMS)
def test_model_prefill_and_decode_match_plain_mm(gemm):
    from realtime.runtime.gemm_plan import GemmPolicy
    from realtime.runtime.model import KVCache, StaticGPT
    from realtime.runtime.shapes import TINY

    assets = tiny_assets()
    models = [StaticGPT(TINY, assets.gpt_state, assets.embed, CPU, torch.float32, GemmPolicy(g))
              for g in (gemm, "mm")]
    b = 4
    gen = torch.Generator().manual_seed(2)
    prompt = torch.randn(2, 12, TINY.hidden, generator=gen)
    x = torch.randn(b, TINY.hidden, generator=gen)
    slots, pos = torch.arange(b), torch.tensor([12, 15, 13, 14])
    outs = []
    for model in models:
        cache = KVCache(TINY, b, 32, torch.float32, CPU)
        pre = model.prefill(prompt, torch.tensor([0, 1]), cache)
        dec = model.decode(x, slots, pos, cache, 16, first_slot=0)
        outs.append((pre, dec, model.logits(dec), cache.k[0].clone()))
    for ours, plain in zip(*outs):
        torch.testing.assert_close(ours, plain, rtol=1e-5, atol=1e-5)


def test_greedy_batch1_equals_upstream(runner, references):
    ref = references[TEXTS[0]]
    assert len(ref.codes) >= GREEDY["min_new_tokens"]
    d = Driver(runner)
    d.add(1, request(TEXTS[0], **GREEDY))
    d.run()
    assert torch.equal(d.codes[1], ref.codes)
    assert d.tokens[1] == len(ref.codes)


def test_hidden_states_match_upstream(runner, references):
    ref = references[TEXTS[2]]
    runner.record_codes = True
    runner.prepare(2, request(TEXTS[2], **GREEDY))
    from scheduler.plan import Lane, StepPlan
    runner.execute(StepPlan(Lane.INTERACTIVE, prefill=(2,)))
    slot = runner.jobs[2].slot
    for _ in range(5):
        runner.execute(StepPlan(Lane.INTERACTIVE, decode=(2,)))
    n = runner.jobs[2].n_codes
    ours = runner.hidden[slot, :n]
    assert n == 6
    assert torch.allclose(ours, ref.hidden[:n], atol=1e-4, rtol=1e-4)
    runner.forget(2)


def test_greedy_batch4_mixed_lengths(runner, references):
    d = Driver(runner)
    for i, text in enumerate(TEXTS):
        d.add(10 + i, request(text, **GREEDY))
    d.run()
    for i, text in enumerate(TEXTS):
        assert torch.equal(d.codes[10 + i], references[text].codes), text


def test_jobs_join_and_leave_mid_run(runner, references):
    d = Driver(runner)
    d.add(20, request(TEXTS[0], **GREEDY))
    d.add(21, request(TEXTS[1], **GREEDY))
    for _ in range(3):
        d.step()
    d.add(22, request(TEXTS[2], **GREEDY))  # joins a running batch at a step boundary
    for _ in range(5):
        d.step()
    d.add(23, request(TEXTS[3], **GREEDY))
    d.run()
    for job, text in zip((20, 21, 22, 23), TEXTS):
        assert torch.equal(d.codes[job], references[text].codes), text
    assert sorted(d.finished) == [20, 21, 22, 23]


def test_seeded_sampling_is_independent_of_batch_mates(runner):
    params = dict(seed=1234, min_new_tokens=20, max_new_tokens=30)
    alone = Driver(runner)
    alone.add(30, request(TEXTS[0], **params))
    alone.run()
    crowd = Driver(runner)
    crowd.add(31, request(TEXTS[2], seed=7, min_new_tokens=5, max_new_tokens=40))
    crowd.step()
    crowd.add(32, request(TEXTS[0], **params))
    crowd.add(33, request(TEXTS[1], temperature=0.9, top_k=50, seed=99, min_new_tokens=3))
    crowd.run()
    assert len(alone.codes[30]) >= 20
    assert torch.equal(alone.codes[30], crowd.codes[32])


def test_different_seeds_give_different_codes(runner):
    d = Driver(runner)
    d.add(40, request(TEXTS[0], seed=1, min_new_tokens=20, max_new_tokens=20))
    d.add(41, request(TEXTS[0], seed=2, min_new_tokens=20, max_new_tokens=20))
    d.run()
    assert not torch.equal(d.codes[40], d.codes[41])


def test_cancel_and_slot_reuse_leave_no_stale_state(runner, references):
    # A long job fills slot 0 far past the next prompt's length, then is
    # cancelled; a new job reusing that slot must decode exactly as upstream.
    d = Driver(runner)
    d.add(50, request(TEXTS[2], seed=5, min_new_tokens=40, max_new_tokens=60))
    for _ in range(30):
        d.step()
    slot = runner.jobs[50].slot
    d.live.remove(50)
    d.step(release=(50,))
    assert slot in runner.free_slots
    d.add(51, request(TEXTS[1], **GREEDY))
    d.step()
    assert runner.jobs[51].slot == slot
    d.run()
    assert torch.equal(d.codes[51], references[TEXTS[1]].codes)
