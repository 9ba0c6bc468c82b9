"""Fidelity of our static-KV decoder against upstream ChatTTS's GPT.generate.

Tiny fidelity weights on CPU (``runtime_fixtures.fidelity_assets``: the
prompt and speaker decide the codes), for every fp32 GEMM backend this torch
offers (``mm``, ``mkl``, ``onednn``; each forced; unavailable ones are skipped
with the reason). Greedy decoding (temperature 1e-5 on
both sides: upstream always keeps >= 3 candidates, so top_k=1 is not greedy
there) must give identical codes and hidden states within 1e-4 per job, at
batch 1, at batch 4 with mixed prompt lengths, when jobs join and leave a
running batch, when a slot is reused, and on the padded shapes CUDA graphs
run. Every test first checks that its references differ pairwise, so a
swapped row, slot or prompt cannot pass unnoticed. Seeded sampling must not
depend on batch mates.
"""

from __future__ import annotations

import pytest
import torch
from runtime_fixtures import (
    GREEDY,
    TEXTS,
    VOICES,
    Driver,
    assert_distinct,
    fidelity_runner,
    request,
    upstream_reference,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HIDDEN_ATOL = 1e-4
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def runner():
    return fidelity_runner()


@pytest.fixture(scope="module")
def padded():
    """Eager, but with every batch padded to the graph shapes (the rows and
    slots a CUDA graph replay sees), padding rows writing the scratch slot."""
    r = fidelity_runner(max_slots=6, batch_sizes=(1, 2, 4, 8), kv_buckets=(64, 128))
    r.pad_batches = True
    return r


@pytest.fixture(scope="module")
def voice_references():
    """The first text in each voice."""
    refs = {voice: upstream_reference(TEXTS[0], voice) for voice in VOICES}
    assert_distinct({v: r.codes for v, r in refs.items()})
    return refs


def assert_job_matches(d: Driver, job: int, ref) -> None:
    assert torch.equal(d.codes[job], ref.codes), job
    assert d.tokens[job] == len(ref.codes)
    diff = (d.hidden[job] - ref.hidden).abs().max().item()
    assert diff <= HIDDEN_ATOL, (job, diff)


def test_references_differ_in_length_and_codes(references):
    # Some jobs end by EOS and some by max_new_tokens: batches see rows leave.
    lengths = {len(r.codes) for r in references.values()}
    assert len(lengths) >= 2 and min(lengths) >= GREEDY["min_new_tokens"]


def test_greedy_batch1_equals_upstream(runner, references):
    for i, text in enumerate(TEXTS):
        d = Driver(runner)
        d.add(i, request(text, **GREEDY))
        d.run()
        assert_job_matches(d, i, references[text])


def test_each_voice_equals_upstream(runner, voice_references):
    d = Driver(runner)
    for i, voice in enumerate(VOICES):
        d.add(i, request(TEXTS[0], voice=voice, **GREEDY))
    d.run()
    for i, voice in enumerate(VOICES):
        assert_job_matches(d, i, voice_references[voice])


def test_hidden_states_mid_run_and_release(runner, references):
    ref = references[TEXTS[2]]
    d = Driver(runner)
    d.add(2, request(TEXTS[2], **GREEDY))
    for _ in range(6):
        d.step()
    slot, n = runner.jobs[2].slot, runner.jobs[2].n_codes
    assert n == 6
    assert (runner.hidden[slot, :n] - ref.hidden[:n]).abs().max().item() <= HIDDEN_ATOL
    d.step(release=(2,))
    assert not runner.jobs


@pytest.mark.parametrize("shape", ["eager", "padded"])
def test_greedy_batch4_mixed_lengths(runner, padded, references, shape):
    r = runner if shape == "eager" else padded
    d = Driver(r)
    for i, text in enumerate(TEXTS):
        d.add(10 + i, request(text, **GREEDY))
    d.run()
    for i, text in enumerate(TEXTS):
        assert_job_matches(d, 10 + i, references[text])


@pytest.mark.parametrize("shape", ["eager", "padded"])
def test_jobs_join_and_leave_mid_run(runner, padded, references, shape):
    r = runner if shape == "eager" else padded
    d = Driver(r)
    d.add(20, request(TEXTS[0], **GREEDY))
    d.add(21, request(TEXTS[1], **GREEDY))
    for _ in range(3):
        d.step()
    d.add(22, request(TEXTS[2], **GREEDY))  # joins a running batch: 3 rows, padded to 4
    for _ in range(5):
        d.step()
    d.add(23, request(TEXTS[3], **GREEDY))
    d.run()
    for job, text in zip((20, 21, 22, 23), TEXTS):
        assert_job_matches(d, job, references[text])
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
    assert_distinct({j: crowd.codes[j] for j in (31, 32, 33)})
    assert torch.equal(alone.codes[30], crowd.codes[32])
    assert (alone.hidden[30] - crowd.hidden[32]).abs().max().item() <= HIDDEN_ATOL


def test_different_seeds_give_different_codes(runner):
    d = Driver(runner)
    d.add(40, request(TEXTS[0], seed=1, min_new_tokens=20, max_new_tokens=20))
    d.add(41, request(TEXTS[0], seed=2, min_new_tokens=20, max_new_tokens=20))
    d.run()
    assert not torch.equal(d.codes[40], d.codes[41])


@pytest.mark.parametrize("shape", ["eager", "padded"])
def test_cancel_and_slot_reuse_leave_no_stale_state(runner, padded, references, shape):
    # A long job fills slot 0 far past the next prompt's length, then is
    # cancelled; a new job reusing that slot must decode exactly as upstream,
    # beside a job in another slot that keeps running.
    r = runner if shape == "eager" else padded
    d = Driver(r)
    d.add(50, request(TEXTS[2], seed=5, min_new_tokens=40, max_new_tokens=60))
    d.add(52, request(TEXTS[3], **GREEDY))
    for _ in range(30):
        d.step()
    slot = r.jobs[50].slot
    d.step(release=(50,))
    assert 50 not in r.jobs
    d.add(51, request(TEXTS[1], **GREEDY))
    d.step()
    assert r.jobs[51].slot == slot
    d.run()
    assert_job_matches(d, 51, references[TEXTS[1]])
    assert_job_matches(d, 52, references[TEXTS[3]])
