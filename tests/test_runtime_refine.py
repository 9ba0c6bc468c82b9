"""The refine-text pass (realtime/engine/refine.py) against upstream ChatTTS.

On the fidelity assets (their text head scaled like the code heads, so the
prompt decides the tokens), greedy refine tokens (temperature 1e-5 on both
sides) equal upstream ``Chat._refine_text``'s for every text, alone and
batched beside other refine and audio jobs; every test first checks its
references differ pairwise. The refined text is upstream's (tokens at or
above ``[break_0]`` dropped, decoded, stripped as ``decorate_code_prompts``
strips), the audio after the pass is what a fresh job of that text draws,
and seeded sampling follows upstream's processors and no batch mate.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from runtime_fixtures import (
    TEXTS,
    Driver,
    assert_distinct,
    fidelity_assets,
    fidelity_runner,
)

from realtime.engine.api import REFINE_SAMPLING, NamedVoice, RefineRequest, SamplingParams, SegmentRequest
from realtime.engine.refine import RefineWork
from realtime.engine.sampling import PENALTY_WINDOW, RowParams, process_logits
from scheduler import StepOutput

pytestmark = pytest.mark.usefixtures("one_torch_thread")

MAX_NEW = 40  # refine tokens per job (upstream's 384 would make the test slow)
GREEDY_REFINE = dataclasses.replace(REFINE_SAMPLING, temperature=1e-5, max_new_tokens=MAX_NEW)
AUDIO = SamplingParams(temperature=1e-5, min_new_tokens=8, max_new_tokens=24, seed=3)
PROMPTS = ("", "[oral_2][laugh_0][break_6]")
ASH = NamedVoice("ash")


def refine_request(text: str, prompt: str = "", params: SamplingParams = GREEDY_REFINE,
                   audio: SamplingParams = AUDIO) -> SegmentRequest:
    return SegmentRequest(text, voice=ASH, params=audio, refine=RefineRequest(prompt, params))


@pytest.fixture(scope="module")
def runner():
    r = fidelity_runner(max_slots=6, batch_sizes=(1, 2, 4, 8), kv_buckets=(128,))
    r.refine.record = True
    return r


@pytest.fixture(autouse=True)
def fresh(runner):
    """Each test starts with no job held (some stop theirs half way)."""
    runner.reset()


@pytest.fixture(scope="module")
def chat():
    from bench.upstream import upstream_chat
    return upstream_chat(fidelity_assets())


def normalized(runner, text: str) -> str:
    work = runner.prepare(refine_request(text)).work
    assert isinstance(work, RefineWork)
    return work.audio.text


def upstream_refine(chat, text: str, prompt: str) -> torch.Tensor:
    """Upstream's greedy ``_refine_text`` token ids for a normalized text."""
    from ChatTTS import Chat
    params = Chat.RefineTextParams(prompt=prompt, temperature=1e-5, max_new_token=MAX_NEW,
                                   show_tqdm=False, manual_seed=0)
    return chat._refine_text([text], chat.device, params).ids[0].cpu()


@pytest.fixture(scope="module")
def references(runner, chat) -> dict:
    refs = {(t, p): upstream_refine(chat, normalized(runner, t), p) for t in TEXTS for p in PROMPTS}
    assert_distinct(refs)
    return refs


def run(runner, requests: dict) -> Driver:
    d = Driver(runner)
    for job_id, req in requests.items():
        d.add(job_id, req)
    d.run(max_steps=600)
    return d


def test_greedy_refine_alone_equals_upstream(runner, references):
    for (text, prompt), ref in references.items():
        d = run(runner, {0: refine_request(text, prompt)})
        assert runner.refine.finished_tokens[0] == ref.tolist(), (text, prompt)
        assert d.tokens[0] > 0  # the audio followed


def test_greedy_refine_batched_beside_audio_jobs_equals_upstream(runner, references):
    keys = list(references)[:4]
    jobs = {i: refine_request(t, p) for i, (t, p) in enumerate(keys)}
    jobs[9] = SegmentRequest(TEXTS[0], voice=ASH, params=AUDIO)  # no pass: rides along
    d = run(runner, jobs)
    for i, key in enumerate(keys):
        assert runner.refine.finished_tokens[i] == references[key].tolist(), key
    assert d.tokens[9] > 0 and 9 not in d.refined


def test_refined_text_is_upstreams(runner, chat, references):
    for (text, prompt), ref in list(references.items())[:3]:
        d = run(runner, {0: refine_request(text, prompt)})
        kept = ref[ref.less(chat.tokenizer.break_0_ids)]
        up = chat.tokenizer.decode([kept])[0]
        up = up.replace("[Stts]", "").replace("[spk_emb]", "").replace("[empty_spk]", "").strip()
        assert d.refined[0] == up


def test_audio_after_the_pass_equals_a_fresh_job_of_the_refined_text(runner):
    d = run(runner, {0: refine_request(TEXTS[2], PROMPTS[1])})
    fresh = run(runner, {1: SegmentRequest(d.refined[0], voice=ASH, params=AUDIO, normalized=True)})
    other = run(runner, {2: SegmentRequest(TEXTS[3], voice=ASH, params=AUDIO)})
    assert not torch.equal(fresh.codes[1], other.codes[2])  # the text decides the codes
    assert torch.equal(d.codes[0], fresh.codes[1])
    assert d.prompt_len[0] == fresh.prompt_len[1]


def test_tokens_at_or_above_break_0_are_dropped(runner):
    tok = runner.front.tokenizer
    ids = tok("hello [uv_break] world", add_special_tokens=False)["input_ids"]
    controls = [tok.convert_tokens_to_ids(t) for t in ("[break_0]", "[speed_5]", "[oral_9]")]
    assert runner.refine.text_of(ids + controls + [runner.shape.num_text_tokens - 1]) \
        == "hello [uv_break] world"


def test_pass_ends_at_ebreak_which_is_not_kept(runner, monkeypatch):
    stage = runner.refine
    drawn = iter([[11], [12], [stage.eos]])
    monkeypatch.setattr(stage, "_draw", lambda new, running: next(drawn))
    d = Driver(runner)
    d.add(0, refine_request(TEXTS[0]))
    outs = [d.step() for _ in range(3)]
    assert [o.refining for o in outs] == [{0: 1}, {0: 2}, {0: 2}]
    assert stage.finished_tokens[0] == [11, 12] and 0 in outs[2].refined
    assert outs[2].tokens[0] == 1  # the audio prompt was prefilled in the same step


def test_out_of_memory_in_the_audio_part_undoes_the_text_step(runner, monkeypatch):
    d = Driver(runner)
    d.add(0, refine_request(TEXTS[0]))
    d.add(1, SegmentRequest(TEXTS[1], voice=ASH, params=AUDIO))
    d.step()
    before = list(runner.refine.passes[0].tokens)
    real = runner.refine.execute_audio
    monkeypatch.setattr(runner.refine, "execute_audio", lambda plan: StepOutput(oom=True))
    out = d.step(check=False)
    assert out.oom and runner.refine.passes[0].tokens == before
    monkeypatch.setattr(runner.refine, "execute_audio", real)
    d.run(max_steps=600)
    assert 0 in d.refined


def test_seeded_refine_repeats_and_ignores_batch_mates(runner):
    sampled = dataclasses.replace(REFINE_SAMPLING, max_new_tokens=MAX_NEW, seed=42)
    alone = run(runner, {0: refine_request(TEXTS[0], params=sampled)})
    tokens = runner.refine.finished_tokens[0]
    mates = {i: refine_request(TEXTS[i], params=dataclasses.replace(sampled, seed=i)) for i in (1, 2)}
    run(runner, {0: refine_request(TEXTS[0], params=sampled), **mates})
    assert runner.refine.finished_tokens[0] == tokens
    other = run(runner, {0: refine_request(TEXTS[0], params=dataclasses.replace(sampled, seed=43))})
    assert runner.refine.finished_tokens[0] != tokens
    assert alone.refined[0] != other.refined[0]


def test_text_pipeline_equals_upstream_processors():
    """``process_logits`` on the text head's shape against ``_refine_text``'s
    processors (penalty on, so every stage decides), with [Ebreak] masked.
    The drawn ids go in as [B, n]: upstream's own text path passes [B, n, 1],
    which makes its penalty return [B, 1, V] and the top-p warper fail, so it
    only runs at its default penalty 1.0, where no processor is added."""
    from ChatTTS.model import gen_logits

    vocab, eos = 768, 700
    gen = torch.Generator().manual_seed(1)
    p = SamplingParams(temperature=0.7, top_p=0.7, top_k=20, repetition_penalty=1.3, min_new_tokens=3)
    for step in (0, 2, 5, 30):
        logits = torch.randn(1, vocab, generator=gen) * 4
        drawn = torch.randint(0, 30, (1, step), generator=gen)
        warpers, processors = gen_logits(num_code=vocab, top_P=p.top_p, top_K=p.top_k,
                                         repetition_penalty=p.repetition_penalty)
        ref = logits / p.temperature
        for proc in (*processors, *warpers):
            ref = proc(drawn, ref)
        if step < p.min_new_tokens:
            ref[:, eos] = -torch.inf
        last = drawn[0, -PENALTY_WINDOW:].tolist()
        history = torch.tensor([[[vocab] * (PENALTY_WINDOW - len(last)) + last]])
        ours = process_logits(logits.view(1, 1, vocab), history, torch.tensor([step]),
                              RowParams.build([p], [0], vocab, "cpu"), eos)[:, 0]
        assert torch.equal(ours.isfinite(), ref.isfinite()), step
        finite = ref.isfinite()
        assert torch.allclose(ours[finite], ref[finite], rtol=1e-6, atol=1e-6), step


def test_a_refine_prompt_beside_a_long_one_is_what_it_is_alone(monkeypatch):
    """On ORT's int4 the refine pass's prompts run on the prompt graph, each
    at its own length (ort/prompts.py): beside a long mate a short prompt's
    last hidden state is bit for bit what it is alone."""
    r = fidelity_runner(cpu_engine="ort", precision="int4", max_slots=6, batch_sizes=(1, 2, 4),
                        kv_buckets=(256,))
    assert r.model.prompts is not None
    seen: list[dict[int, torch.Tensor]] = []
    prefill = type(r.refine)._prefill

    def spy(self, passes):
        out = prefill(self, passes)
        seen.append({len(p.work.ids): out[i].clone() for i, p in enumerate(passes)})
        return out

    monkeypatch.setattr(type(r.refine), "_prefill", spy)
    run(r, {0: refine_request("To be.")})
    run(r, {0: refine_request("To be."), 1: refine_request(" ".join([TEXTS[2]] * 2))})
    (short, alone), = seen[0].items()
    assert len(seen[1]) == 2  # one prefill of both
    assert torch.equal(seen[1][short], alone)
