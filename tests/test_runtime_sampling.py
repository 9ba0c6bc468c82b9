"""Sampling: our batched logit pipeline equals upstream's ``gen_logits``
processors row by row, on inputs chosen so that every stage decides
something, and our draw follows upstream's distribution."""

from __future__ import annotations

import math

import pytest
import torch

import realtime.engine.compat  # noqa: F401  (before ChatTTS)
from realtime.engine.api import SamplingParams
from realtime.engine.model.shapes import EOS_CODE
from realtime.engine.sampling import (
    MIN_KEEP,
    PENALTY_WINDOW,
    RowParams,
    counter_uniform,
    draw,
    process_logits,
    sample,
    unit_interval,
)

V = 626
Q = 4


def _upstream(logits, history, step, p: SamplingParams):
    """ChatTTS GPT.generate's logit steps for one job: logits [Q, V], history [Q, n]."""
    from ChatTTS.model import gen_logits
    warpers, processors = gen_logits(num_code=EOS_CODE, top_P=p.top_p, top_K=p.top_k,
                                     repetition_penalty=p.repetition_penalty)
    x = logits / torch.tensor([p.temperature] * Q).view(-1, 1)
    for proc in (*processors, *warpers):
        x = proc(history, x)
    if step < p.min_new_tokens:
        x[:, EOS_CODE] = -torch.inf
    return x


def _our_history(rows: list[torch.Tensor]) -> torch.Tensor:
    """Upstream histories [Q, n] -> ours [B, Q, W] (V marks an empty place)."""
    hist = torch.full((len(rows), Q, PENALTY_WINDOW), V)
    for b, h in enumerate(rows):
        last = h[:, -PENALTY_WINDOW:]
        hist[b, :, PENALTY_WINDOW - last.shape[1]:] = last
    return hist


def _compare(logits, histories, steps, params) -> torch.Tensor:
    """Run both pipelines; assert the same survivors and values; return ours."""
    rp = RowParams.build(params, list(range(len(params))), V, "cpu")
    ours = process_logits(logits, _our_history(histories), torch.tensor(steps), rp)
    for b in range(len(params)):
        ref = _upstream(logits[b], histories[b], steps[b], params[b])
        assert torch.equal(ours[b].isfinite(), ref.isfinite()), b
        finite = ref.isfinite()
        assert torch.allclose(ours[b][finite], ref[finite], rtol=1e-6, atol=1e-6), b
    return ours


def _survivors(x: torch.Tensor) -> list[int]:
    return x.isfinite().sum(-1).flatten().tolist()


def test_pipeline_equals_upstream_per_row():
    gen = torch.Generator().manual_seed(0)
    params = [SamplingParams(), SamplingParams(temperature=0.9, top_p=0.5, top_k=3, repetition_penalty=1.3,
                                               min_new_tokens=4),
              SamplingParams(temperature=0.5, top_p=1.0, top_k=100, repetition_penalty=1.0)]
    steps = [20, 2, 0]
    logits = torch.randn(3, Q, V, generator=gen) * 4
    hist = [torch.randint(0, 40, (Q, s), generator=gen) for s in steps]  # few ids: repeats likely
    ours = _compare(logits, hist, steps, params)
    assert (ours[1, :, EOS_CODE] == -torch.inf).all()


def test_penalty_reaches_the_top_ranked_codes_positive_and_negative():
    # The history holds each codebook's best codes, so the penalty acts on
    # logits that survive top-p/top-k and changes which ones do; one row has
    # only negative logits (multiplied, not divided).
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(2, Q, V, generator=gen)
    logits[1] = -logits[1].abs() - 0.5  # all negative
    top = logits.argsort(dim=-1, descending=True)[..., :6]  # [B, Q, 6]
    hist = [torch.cat([top[b], top[b][:, :3], top[b][:, :1]], dim=1) for b in range(2)]  # 10 long
    params = [SamplingParams(temperature=1.0, top_p=0.9, top_k=8, repetition_penalty=1.8),
              SamplingParams(temperature=0.7, top_p=0.9, top_k=8, repetition_penalty=1.8)]
    ours = _compare(logits, hist, [10, 10], params)
    plain = _compare(logits, hist, [10, 10], [SamplingParams(temperature=p.temperature, top_p=0.9,
                                                             top_k=8, repetition_penalty=1.0)
                                              for p in params])
    # The penalty changed the surviving set: the test would notice it missing.
    assert not torch.equal(ours.isfinite(), plain.isfinite())
    assert (logits[1] < 0).all() and ours[1][ours[1].isfinite()].max() < 0


def test_history_beyond_the_window_is_forgotten():
    gen = torch.Generator().manual_seed(2)
    logits = torch.randn(1, Q, V, generator=gen)
    best = logits.argmax(-1, keepdim=True)  # [1, Q, 1]
    other = (best + 1) % EOS_CODE
    # The best code 8 times, then 16 other codes: only the last 16 count.
    hist = [torch.cat([best[0].expand(Q, 8), other[0].expand(Q, PENALTY_WINDOW)], dim=1)]
    p = [SamplingParams(temperature=1.0, top_p=1.0, top_k=V, repetition_penalty=3.0)]
    ours = _compare(logits, hist, [24], p)
    assert torch.equal(ours.argmax(-1), best[..., 0])


def test_top_p_decides_on_a_flat_distribution():
    # Nearly flat logits: top-p keeps hundreds of codes, far beyond the
    # 3-code floor, so its cut (and nothing else) sets the survivor count.
    gen = torch.Generator().manual_seed(3)
    logits = torch.randn(3, Q, V, generator=gen) * 0.05
    params = [SamplingParams(temperature=1.0, top_p=p, top_k=V, repetition_penalty=1.0)
              for p in (0.7, 0.3, 0.95)]
    ours = _compare(logits, [torch.zeros(Q, 0, dtype=torch.long)] * 3, [5, 5, 5], params)
    counts = _survivors(ours)
    for b, p in enumerate((0.7, 0.3, 0.95)):
        for n in counts[b * Q:(b + 1) * Q]:
            assert abs(n - p * V) < 0.1 * V, (p, n)  # hundreds kept, near p * V


def test_top_k_boundary_and_ties():
    # Row 0: the k-th value is tied three ways: all ties stay (upstream's rule).
    # Rows 1-2: top_k below the floor keeps MIN_KEEP; top_k == the survivors
    # of top-p keeps exactly those.
    logits = torch.full((3, Q, V), -2.0)
    logits[0, :, :5] = torch.tensor([5.0, 4.0, 3.0, 3.0, 3.0])
    logits[1, :, :6] = torch.tensor([6.0, 5.0, 4.0, 3.0, 2.0, 1.0])
    logits[2, :, :6] = torch.tensor([9.0, 8.9, 8.8, 8.7, 2.0, 1.0])
    params = [SamplingParams(temperature=1.0, top_p=1.0, top_k=3, repetition_penalty=1.0),
              SamplingParams(temperature=1.0, top_p=1.0, top_k=1, repetition_penalty=1.0),
              SamplingParams(temperature=1.0, top_p=0.99, top_k=4, repetition_penalty=1.0)]
    ours = _compare(logits, [torch.zeros(Q, 0, dtype=torch.long)] * 3, [5, 5, 5], params)
    assert _survivors(ours) == [5] * Q + [MIN_KEEP] * Q + [4] * Q


@pytest.mark.parametrize("offset", [-1, 0])
def test_eos_mask_ends_exactly_at_min_new_tokens(offset):
    # EOS is every codebook's best code: masked at step min_new - 1, allowed at min_new.
    gen = torch.Generator().manual_seed(4)
    logits = torch.randn(2, Q, V, generator=gen)
    logits[..., EOS_CODE] = 10.0
    params = [SamplingParams(temperature=1.0, min_new_tokens=m, repetition_penalty=1.0) for m in (7, 1)]
    steps = [m + offset for m in (7, 1)]
    ours = _compare(logits, [torch.zeros(Q, s, dtype=torch.long) + 3 for s in steps], steps, params)
    masked = (ours[..., EOS_CODE] == -torch.inf).all()
    assert masked if offset < 0 else not (ours[..., EOS_CODE] == -torch.inf).any()


def test_noise_is_a_function_of_seed_and_step():
    seed, step = torch.tensor([5, 5, 6]), torch.tensor([0, 1, 0])
    u = counter_uniform(seed, step, (Q, V))
    again = counter_uniform(seed[:1], step[:1], (Q, V))
    assert torch.equal(u[0], again[0])
    assert not torch.equal(u[0], u[1]) and not torch.equal(u[0], u[2])
    assert u.min() > 0 and u.max() < 1
    assert abs(u.mean().item() - 0.5) < 0.01


def test_noise_extremes_stay_strictly_inside_the_unit_interval():
    # The largest and smallest hash values: a uniform of exactly 1.0 would
    # make the Gumbel noise +inf and let argmax pick a masked (-inf) code.
    u = unit_interval(torch.tensor([0, 1, 2**31, 2**32 - 2, 2**32 - 1]))
    assert u.dtype == torch.float32
    assert (u > 0).all() and (u < 1).all()
    logits = torch.full((5, 1, 4), -torch.inf)
    logits[:, 0, 2] = 0.0
    gumbel = -torch.log(-torch.log(u))
    assert gumbel.isfinite().all()
    assert (torch.argmax(logits + gumbel.view(5, 1, 1), dim=-1) == 2).all()


def test_noise_stream_is_pinned():
    # Seeded requests reproduce across versions only while this stream stays
    # the same: change the hash (constants, shifts, index layout) on purpose only.
    u = counter_uniform(torch.tensor([5, 123456789]), torch.tensor([0, 77]), (Q, V))
    assert u[0, 0, :3].tolist() == [0.9119583964347839, 0.8752092719078064, 0.05606812238693237]
    assert u[1, 3, -3:].tolist() == [0.9567260146141052, 0.06004601716995239, 0.8845121264457703]
    assert u[0, 2, 100].item() == 0.955314576625824


def test_sampling_runs_on_the_device_of_its_inputs():
    # On ``meta`` every tensor the pipeline makes must follow its inputs'
    # device (on CPU a forgotten ``device=`` goes unnoticed; on CUDA it fails).
    meta = dict(device="meta")
    params = RowParams.build([SamplingParams(), SamplingParams(top_k=3)], [1, 2], V, "meta")
    assert all(t.device.type == "meta" for t in (params.temperature, params.top_p_cut, params.top_k,
                                                  params.penalty, params.min_new, params.seed))
    assert params.temperature.dtype == params.top_p_cut.dtype == params.penalty.dtype == torch.float32
    assert params.top_k.dtype == params.min_new.dtype == params.seed.dtype == torch.int64
    logits = torch.zeros(2, Q, V, **meta)
    history = torch.zeros(2, Q, PENALTY_WINDOW, dtype=torch.long, **meta)
    step = torch.zeros(2, dtype=torch.long, **meta)
    processed = process_logits(logits, history, step, params)
    assert processed.device.type == "meta" and processed.dtype == torch.float32
    codes = sample(logits, history, step, params)
    assert codes.device.type == "meta" and codes.shape == (2, Q) and codes.dtype == torch.int64
    u = counter_uniform(params.seed, step, (Q, V))
    assert u.device.type == "meta" and u.dtype == torch.float32


DRAWS = 20000
SIGMAS = 5.0  # per-code bound on |frequency - probability|, in binomial standard deviations


def _draws(logits_row: torch.Tensor, hist: torch.Tensor, params: SamplingParams, step: int) -> torch.Tensor:
    """``DRAWS`` seeded samples of one job's codes: the same logits at
    ``DRAWS`` different seeds -> counts per code [Q, V]."""
    counts = torch.zeros(Q, V)
    for start in range(0, DRAWS, 2500):
        n = min(2500, DRAWS - start)
        rp = RowParams.build([params] * n, list(range(start, start + n)), V, "cpu")
        codes = sample(logits_row.expand(n, Q, V), hist.expand(n, Q, PENALTY_WINDOW),
                       torch.full((n,), step), rp)  # [n, Q]
        counts.scatter_add_(1, codes.T, torch.ones(Q, n))
    return counts


def test_seeded_draws_follow_upstreams_probabilities():
    # Upstream draws with multinomial(softmax(processed logits)). Over DRAWS
    # seeds, every code's frequency must be within SIGMAS binomial standard
    # deviations of upstream's probability (for a correct sampler each code
    # breaks this bound with probability < 1e-6), and no code outside
    # upstream's survivors may ever be drawn.
    gen = torch.Generator().manual_seed(5)
    logits = torch.randn(1, Q, V, generator=gen) * 2
    history = torch.randint(0, 30, (Q, 12), generator=gen)
    logits[0, :, history[:, -1]] += 3.0  # the penalized codes matter
    params = SamplingParams(temperature=0.7, top_p=0.8, top_k=12, repetition_penalty=1.3, min_new_tokens=50)
    probs = torch.softmax(_upstream(logits[0], history, 10, params), dim=-1)  # [Q, V]
    assert ((probs > 0.02).sum(-1) >= 5).all()  # several codes really compete
    freq = _draws(logits, _our_history([history]), params, 10) / DRAWS
    assert (freq[probs == 0] == 0).all()
    bound = SIGMAS * torch.sqrt(probs * (1 - probs) / DRAWS) + 1.0 / DRAWS
    worst = ((freq - probs).abs() / bound).max().item()
    assert worst <= 1.0, worst
    # Sanity of the bound itself: a flattened distribution breaks it.
    flat = torch.softmax(_upstream(logits[0] * 0.8, history, 10, params), dim=-1)
    assert ((freq - flat).abs() > SIGMAS * torch.sqrt(flat * (1 - flat) / DRAWS) + 1 / DRAWS).any()


def test_draw_picks_only_allowed_codes():
    logits = torch.full((64, 1, V), -torch.inf)
    logits[:, 0, 3], logits[:, 0, 7] = math.log(0.8), math.log(0.2)
    picks = draw(logits, torch.full((64,), 9), torch.arange(64))
    assert set(picks.flatten().tolist()) == {3, 7}
