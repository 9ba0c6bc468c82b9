"""Voices from a sample: the DVAE encoder and prompts carrying ``spk_smp``/``txt_smp``,
against upstream ChatTTS 0.2.5's own ``Chat`` on the tiny fidelity weights.

- ``SampleEncoder.encode`` gives the string ``Chat.sample_audio_speaker`` gives;
- the prompt's ids and trailing code rows equal what upstream's
  ``Tokenizer.encode`` builds from ``decorate_code_prompts`` and
  ``decode_prompt(spk_smp)``;
- greedy codes and hidden states equal upstream's ``Chat._infer_code`` (what
  ``Chat.infer`` runs) with ``InferCodeParams(spk_smp=..., txt_smp=...)``,
  with and without a speaker embedding, alone and batched with a plain job.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import GREEDY, TEXTS, Driver, assert_distinct, fidelity_assets, fidelity_runner, request

from bench.upstream import upstream_chat, upstream_infer_codes
from realtime.engine.api import NamedVoice, VoiceError, VoiceSample
from realtime.engine.vocoder.encoder import SampleEncoder, decode_codes, encode_codes

pytestmark = pytest.mark.usefixtures("one_torch_thread")

HIDDEN_ATOL = 1e-4


def _wav(seed: int, seconds: float) -> np.ndarray:
    gen = np.random.default_rng(seed)
    t = np.arange(int(24000 * seconds)) / 24000
    tone = 0.2 * np.sin(2 * np.pi * (180 + 40 * seed) * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t))
    return (tone + 0.02 * gen.standard_normal(t.shape)).astype(np.float32)


@pytest.fixture(scope="module")
def chat():
    return upstream_chat(fidelity_assets())


@pytest.fixture(scope="module")
def runner():
    return fidelity_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(256,))


@pytest.fixture(scope="module")
def samples(chat, runner):
    """Two samples, their transcripts normalized as the runner normalizes them."""
    out = {}
    for seed, text in ((1, TEXTS[1]), (2, TEXTS[3])):
        spk_smp = chat.sample_audio_speaker(torch.from_numpy(_wav(seed, 0.8)))
        out[seed] = VoiceSample(spk_smp, runner.front.normalize(text))
    return out


def _upstream(chat, runner, text: str, voice: str | None, sample: VoiceSample | None):
    from ChatTTS.model.speaker import Speaker
    spk_emb = None if voice is None else Speaker._encode(runner.front.speakers.resolve(NamedVoice(voice)))
    params = chat.InferCodeParams(
        prompt="[speed_5]", spk_emb=spk_emb, spk_smp=sample and sample.spk_smp,
        txt_smp=sample and sample.txt_smp, temperature=GREEDY["temperature"],
        min_new_token=GREEDY["min_new_tokens"], max_new_token=GREEDY["max_new_tokens"],
        show_tqdm=False, ensure_non_empty=False)
    return upstream_infer_codes(chat, runner.front.normalize(text), params)


def test_encoder_gives_upstreams_string(chat):
    wav = _wav(3, 1.5)
    ours = SampleEncoder(fidelity_assets().dvae).encode(wav)
    assert ours == chat.sample_audio_speaker(torch.from_numpy(wav.copy()))
    codes = decode_codes(ours)
    assert codes.shape[0] == 4 and abs(codes.shape[1] - 1.5 * 46.875) <= 2
    assert len(set(codes.flatten().tolist())) > 20  # a real spread of codes, not a constant


def test_prompt_matches_upstream_tokenizer(chat, runner, samples):
    sample = samples[1]
    text = runner.front.normalize(TEXTS[0])
    for voice, tag in (("ash", "[spk_emb]"), (None, "[empty_spk]")):
        decorated = chat.speaker.decorate_code_prompts([text], "[speed_5]", sample.txt_smp,
                                                       None if voice is None else "x")
        ids, _, text_mask = chat.tokenizer.encode(decorated, 4,
                                                  prompt=chat.speaker.decode_prompt(sample.spk_smp))
        prompt = runner.prepare(request(TEXTS[0], voice=voice, sample=sample)).work.prompt
        n = prompt.text_length
        assert prompt.length == ids.shape[1] and prompt.codes is not None
        assert torch.equal(ids[0, :n, 0], prompt.ids)
        assert torch.equal(ids[0, n:], prompt.codes)
        assert not text_mask[0, n:].any() and text_mask[0, :n].all()
        assert runner.front.tokenizer.convert_ids_to_tokens(int(prompt.ids[1])) == tag


def test_greedy_codes_equal_upstream_infer(chat, runner, samples):
    cases = {"plain": ("ash", None), "ash+1": ("ash", samples[1]), "none+1": (None, samples[1]),
             "ash+2": ("ash", samples[2])}
    refs = {k: _upstream(chat, runner, TEXTS[2], v, s) for k, (v, s) in cases.items()}
    assert_distinct({k: r.codes for k, r in refs.items()})
    d = Driver(runner)
    for i, (voice, sample) in enumerate(cases.values()):  # batched: rows of every kind
        d.add(i, request(TEXTS[2], voice=voice, sample=sample, **GREEDY))
    d.run()
    for i, key in enumerate(cases):
        assert torch.equal(d.codes[i], refs[key].codes), key
        assert (d.hidden[i] - refs[key].hidden).abs().max().item() <= HIDDEN_ATOL, key


def test_bad_samples_are_voice_errors(runner, samples):
    good = samples[1].spk_smp
    with pytest.raises(VoiceError, match="voice sample"):
        runner.prepare(request("Hello.", sample=VoiceSample("\u4e00" * 40, "hi")))
    with pytest.raises(VoiceError, match=r"\[4, T\]"):
        runner.prepare(request("Hello.", sample=VoiceSample(encode_codes(torch.zeros(3, 5)), "hi")))
    with pytest.raises(VoiceError, match="outside"):
        runner.prepare(request("Hello.", sample=VoiceSample(encode_codes(torch.full((4, 5), 700)), "hi")))
    with pytest.raises(VoiceError):
        runner.prepare(request("Hello.", voice=None))
    assert runner.prepare(request("Hello.", voice=None, sample=VoiceSample(good, "hi"))).prompt_len > 40
