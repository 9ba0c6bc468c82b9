"""The ONNX Runtime decoder (realtime/engine/ort/) against our torch decoder and upstream.

Tiny fidelity weights (``runtime_fixtures.fidelity_assets``). The fp32 graph
must give the torch decoder's hidden states within float tolerance (prefill,
decodes of rows at different positions, batches in any slot order, rows
moved when the batch changes) and upstream's greedy codes exactly; int8 and
int4 stay within the errors docs/runtime.md states for them (on these
unit-gain weights: int8 ~2%, int4 ~14% of the hidden state's norm).
The int8 graph quantizes each row's activations on its own and sums in
int32, so a job's codes do not depend on its batch mates.
"""

from __future__ import annotations

import gc
import weakref

import pytest
import torch
from runtime_fixtures import (
    GREEDY,
    TEXTS,
    Driver,
    fidelity_assets,
    fidelity_runner,
    request,
    upstream_reference,
)

from realtime.engine.model.gpt import StaticGPT
from realtime.engine.ort.model import OrtGPT

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CPU = torch.device("cpu")
TOLERANCE = {"fp32": 1e-5, "int8": 3e-2, "int4": 0.25}  # relative error of hidden states


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a - b).norm() / b.norm()).item()


@pytest.fixture(scope="module")
def torch_model():
    a = fidelity_assets()
    return StaticGPT(a.shape, a.gpt_state, a.embed, CPU, torch.float32)


@pytest.fixture(scope="module", params=["fp32", "int8", "int4"])
def ort_model(request):
    return OrtGPT(fidelity_assets(), request.param, 1, False, None)


def test_prefill_and_decodes_match_the_torch_decoder(torch_model, ort_model):
    """Prompts into slots 2, 0, 3; then decodes of subsets in other orders,
    rows at different positions, a slot idle for a while, a batch that
    forces rows to move: every step's hidden states against torch's."""
    d, tol = torch_model.shape.hidden, TOLERANCE[ort_model.form]
    ours, ref = ort_model.new_cache(5, 64, 4), torch_model.new_cache(5, 64, 4)
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 9, d, generator=gen)
    slots = torch.tensor([2, 0, 3])
    assert _rel(ort_model.prefill(x, slots, ours), torch_model.prefill(x, slots, ref)) < tol
    pos = {2: 9, 0: 9, 3: 9}
    want_logits_shape = (torch_model.shape.num_vq, torch_model.shape.num_audio_tokens)
    for batch in ([0, 2, 3], [3, 0], [3], [3, 2], [2, 3, 0], [0, 3], [3, 0, 2]):
        xs = torch.randn(len(batch), d, generator=gen)
        p = torch.tensor([pos[s] for s in batch])
        s = torch.tensor(batch)
        got = ort_model.decode(xs, s, p, ours, int(p.max()) + 1)
        want = torch_model.decode(xs, s, p, ref, int(p.max()) + 1)
        assert _rel(got, want) < tol, (batch, p.tolist())
        # The step's logits come from the graph's run (the same object each
        # call), in the caller's row order: torch's heads on the same rows.
        logits = ort_model.logits(got)
        assert logits is ort_model.logits(got) and logits.shape == (len(batch), *want_logits_shape)
        assert _rel(logits, ort_model.logits(got.clone())) < 1e-5, batch
        assert _rel(logits, torch_model.logits(want)) < 2 * tol, batch
        for slot in batch:
            pos[slot] += 1
    assert len(set(pos.values())) == 3  # rows of different lengths shared batches
    assert ours.moved_positions > 0  # [0, 3] after [3, 2]: rows were moved


@pytest.mark.parametrize("form, prompt_graph", [("int8", True), ("int4", True), ("int8", False)])
def test_a_prompt_does_not_depend_on_its_batch_mates(torch_model, form, prompt_graph):
    """The int forms' prompts run on the int8-dynamic graph, each alone (one
    activation scale per call: padding would move it); on the int8 graph
    itself (each row scaled alone) they run batched, the zero padding rows
    staying finite. Either way a prompt batched beside a longer one gives
    what it gives alone, bit for bit, within the int8 tolerance of torch's
    fp32, and its K/V serve the decode graph."""
    model = OrtGPT(fidelity_assets(), form, 1, False, None, prompts=prompt_graph)
    assert (model.prompts is not None) == prompt_graph
    d = torch_model.shape.hidden
    gen = torch.Generator().manual_seed(4)
    short, long_ = torch.randn(1, 5, d, generator=gen), torch.randn(1, 11, d, generator=gen)
    alone = model.prefill(short, torch.tensor([0]), model.new_cache(3, 32, 2))
    batch = torch.zeros(2, 11, d)
    batch[0], batch[1, :5] = long_[0], short[0]
    cache = model.new_cache(3, 32, 2)
    both = model.prefill(batch, torch.tensor([2, 1]), cache, [11, 5])
    assert torch.isfinite(both).all() and torch.equal(both[1, :5], alone[0])
    ref = torch_model.new_cache(3, 32, 2)
    want = torch_model.prefill(batch, torch.tensor([2, 1]), ref)
    assert _rel(both[0], want[0]) < TOLERANCE["int8"] and _rel(both[1, :5], want[1, :5]) < TOLERANCE["int8"]
    x = torch.randn(2, d, generator=gen)
    got = model.decode(x, torch.tensor([1, 2]), torch.tensor([5, 11]), cache, 12)
    assert _rel(got, torch_model.decode(x, torch.tensor([1, 2]), torch.tensor([5, 11]), ref, 12)) \
        < TOLERANCE[form]


def test_a_padding_row_changes_no_other_row(torch_model):
    model = OrtGPT(fidelity_assets(), "fp32", 1, False, None)
    cache = model.new_cache(3, 32, 4)
    gen = torch.Generator().manual_seed(3)
    prompt = torch.randn(1, 6, torch_model.shape.hidden, generator=gen)
    model.prefill(prompt, torch.tensor([1]), cache)
    x = torch.randn(2, torch_model.shape.hidden, generator=gen)
    alone = model.decode(x[:1], torch.tensor([1]), torch.tensor([6]), cache, 7)
    model.prefill(prompt, torch.tensor([1]), cache)
    scratch = torch.tensor([1, cache.scratch])
    padded = model.decode(x, scratch, torch.tensor([6, 0]), cache, 7)
    torch.testing.assert_close(padded[:1], alone, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("form", ["fp32"])
def test_greedy_codes_equal_upstream_batched_with_joins_and_leaves(form):
    """Four jobs of different lengths decoded together (some end by EOS,
    some at max_new_tokens, so the batch shrinks), then a job in a freed slot."""
    refs = {t: upstream_reference(t) for t in TEXTS}
    runner = fidelity_runner(cpu_engine="ort", precision=form)
    d = Driver(runner)
    for i, text in enumerate(TEXTS):
        d.add(i, request(text, **GREEDY))
    d.run()
    d.add(9, request(TEXTS[1], **GREEDY))
    d.run()
    for i, text in [*enumerate(TEXTS), (9, TEXTS[1])]:
        assert torch.equal(d.codes[i], refs[text].codes), i
        assert (d.hidden[i] - refs[text].hidden).abs().max().item() < 1e-4


def test_int8_codes_do_not_depend_on_batch_mates():
    sampled = dict(temperature=0.3, min_new_tokens=8, max_new_tokens=32, seed=5)
    alone = Driver(fidelity_runner(cpu_engine="ort", precision="int8"))
    alone.add(0, request(TEXTS[2], **sampled))
    alone.run()
    mates = Driver(fidelity_runner(cpu_engine="ort", precision="int8"))
    for i, text in enumerate(TEXTS):
        mates.add(i, request(text, **{**sampled, "seed": 5 if i == 2 else i}))
    mates.run()
    assert torch.equal(mates.codes[2], alone.codes[0])
    assert torch.equal(mates.hidden[2], alone.hidden[0])  # its prompt ran alone: bit for bit


@pytest.mark.parametrize("form", ["int4"])
def test_a_short_prompt_prefilled_beside_a_long_one_is_what_it_is_alone(form):
    """The runner gives the prompt graph each prompt's length: run padded
    to its long mate's, a short prompt's activations would share a scale
    with the padding (planted, its hidden states moved by 2e-2)."""
    sampled = dict(temperature=0.3, min_new_tokens=8, max_new_tokens=16, seed=5)
    alone = Driver(fidelity_runner(cpu_engine="ort", precision=form))
    alone.add(0, request("To be.", **sampled))
    alone.run()
    mates = Driver(fidelity_runner(cpu_engine="ort", precision=form))
    mates.add(0, request("To be.", **sampled))
    mates.add(1, request(" ".join([TEXTS[2]] * 4), **{**sampled, "seed": 1}))
    mates.run()
    assert torch.equal(mates.hidden[0], alone.hidden[0])


def test_the_cache_a_session_writes_into_lives_until_another_is_bound(torch_model):
    # The session keeps its K/V bindings between steps. Were a bound cache
    # freed, a new one could take its address (Python reuses ids) and be taken
    # for it: the graph would write into freed memory (a segfault seen once in
    # the suite). So the bound cache lives until another is bound, and a new
    # cache gives what a fresh model gives.
    model = OrtGPT(fidelity_assets(), "fp32", 1, False, None)
    gen = torch.Generator().manual_seed(5)
    prompt = torch.randn(1, 6, torch_model.shape.hidden, generator=gen)
    x = torch.randn(1, torch_model.shape.hidden, generator=gen)
    first = model.new_cache(2, 32, 2)
    model.prefill(prompt * 3, torch.tensor([0]), first)
    bound = weakref.ref(first)
    del first
    gc.collect()
    assert bound() is not None
    second = model.new_cache(2, 32, 2)
    model.prefill(prompt, torch.tensor([0]), second)
    got = model.decode(x, torch.tensor([0]), torch.tensor([6]), second, 7)
    gc.collect()
    assert bound() is None  # rebound to the second: the first is free now
    fresh = OrtGPT(fidelity_assets(), "fp32", 1, False, None)
    cache = fresh.new_cache(2, 32, 2)
    fresh.prefill(prompt, torch.tensor([0]), cache)
    want = fresh.decode(x, torch.tensor([0]), torch.tensor([6]), cache, 7)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
