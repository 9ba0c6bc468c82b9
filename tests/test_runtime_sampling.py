"""Sampling: our batched logit pipeline equals upstream's processors, row by row."""

from __future__ import annotations

import torch

from realtime.runtime.api import SamplingParams
from realtime.runtime.sampling import RowParams, counter_uniform, draw, process_logits
from realtime.runtime.shapes import EOS_CODE

V = 626


def _upstream(logits, history, step, p: SamplingParams):
    """ChatTTS GPT.generate's logit steps for one job: logits [Q, V], history [Q, n]."""
    from ChatTTS.model import gen_logits
    warpers, processors = gen_logits(num_code=EOS_CODE, top_P=p.top_p, top_K=p.top_k,
                                     repetition_penalty=p.repetition_penalty)
    x = logits / torch.tensor([p.temperature] * 4).view(-1, 1)
    for proc in (*processors, *warpers):
        x = proc(history, x)
    if step < p.min_new_tokens:
        x[:, EOS_CODE] = -torch.inf
    return x


def test_pipeline_equals_upstream_per_row():
    gen = torch.Generator().manual_seed(0)
    params = [SamplingParams(), SamplingParams(temperature=0.9, top_p=0.5, top_k=3, repetition_penalty=1.3,
                                               min_new_tokens=4),
              SamplingParams(temperature=0.5, top_p=1.0, top_k=100, repetition_penalty=1.0)]
    steps = [20, 2, 0]
    logits = torch.randn(3, 4, V, generator=gen) * 4
    hist_rows, ours_hist = [], torch.full((3, 4, 16), V)
    for b, step in enumerate(steps):
        h = torch.randint(0, 40, (4, step), generator=gen)  # few ids: repeats are likely
        hist_rows.append(h)
        last = h[:, -16:]
        ours_hist[b, :, 16 - last.shape[1]:] = last
    rp = RowParams.build(params, [1, 2, 3], V, "cpu")
    ours = process_logits(logits, ours_hist, torch.tensor(steps), rp)
    for b in range(3):
        ref = _upstream(logits[b], hist_rows[b], steps[b], params[b])
        assert torch.equal(ours[b].isfinite(), ref.isfinite()), b
        finite = ref.isfinite()
        assert torch.allclose(ours[b][finite], ref[finite], rtol=1e-6, atol=1e-6)
    assert (ours[1, :, EOS_CODE] == -torch.inf).all()


def test_noise_is_a_function_of_seed_and_step():
    seed, step = torch.tensor([5, 5, 6]), torch.tensor([0, 1, 0])
    u = counter_uniform(seed, step, (4, V))
    again = counter_uniform(seed[:1], step[:1], (4, V))
    assert torch.equal(u[0], again[0])
    assert not torch.equal(u[0], u[1]) and not torch.equal(u[0], u[2])
    assert u.min() > 0 and u.max() < 1
    assert abs(u.mean().item() - 0.5) < 0.01


def test_draw_follows_the_distribution():
    # Two allowed codes with probabilities 0.8/0.2: over many steps the draw
    # frequency must follow them.
    logits = torch.full((1, 1, V), -torch.inf)
    logits[0, 0, 3], logits[0, 0, 7] = torch.log(torch.tensor(0.8)), torch.log(torch.tensor(0.2))
    n = 4000
    picks = torch.stack([draw(logits, torch.tensor([9]), torch.tensor([s]))[0, 0] for s in range(n)])
    assert set(picks.tolist()) <= {3, 7}
    assert abs((picks == 3).float().mean().item() - 0.8) < 0.03
