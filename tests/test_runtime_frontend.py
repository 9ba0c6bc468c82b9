"""Text front end: numbers, speakers, prompts built as upstream builds them."""

from __future__ import annotations

import json

import pytest
import torch
from runtime_fixtures import tiny_assets

from realtime.engine.api import (
    EmbeddingVoice,
    NamedVoice,
    RequestError,
    SamplingParams,
    SeedVoice,
    VoiceError,
)
from realtime.engine.model.shapes import FULL
from realtime.engine.text.frontend import Speakers, TextFrontEnd, validate_params
from realtime.server.voices.file import read_voices_file


@pytest.fixture(scope="module")
def front():
    a = tiny_assets()
    return TextFrontEnd(a.tokenizer, Speakers(a.shape.hidden, a.spk_stat))


def test_numbers_are_spoken(front):
    assert front.normalize("I have 3 cats and 1205 dogs") == \
        "I have three cats and one thousand two hundred five dogs"
    assert front.normalize("pi is 3.14") == "pi is three point one four"
    assert front.normalize("call 007") == "call zero zero seven"
    assert front.normalize("有3只") == "有三只"
    assert front.normalize("123", lang="zh") == "一百二十三"


def test_digits_survive_normalization(front):
    assert front.normalize("I have 3 cats!") == "I have three cats."


def test_prompt_matches_upstream_tokenizer(front):
    from ChatTTS.model.speaker import Speaker
    from ChatTTS.model.tokenizer import Tokenizer
    up = Tokenizer.__new__(Tokenizer)
    up._tokenizer = front.tokenizer
    text = front.normalize("Hello world, this is a test.")
    decorated = Speaker.decorate_code_prompts([text], "[speed_5]", None, "spk")
    ids, mask, text_mask = up.encode(decorated, 4)
    prompt = front.build("Hello world, this is a test.", SeedVoice(1))
    assert torch.equal(ids[0, :, 0], prompt.ids)
    assert prompt.ids[1] == front.spk_emb_id


@pytest.mark.parametrize("speed", range(10))
def test_the_prompt_carries_the_speed_level_as_upstream_writes_it(front, speed):
    from ChatTTS.core import Chat
    from ChatTTS.model.speaker import Speaker
    from ChatTTS.model.tokenizer import Tokenizer
    up = Tokenizer.__new__(Tokenizer)
    up._tokenizer = front.tokenizer
    upstream_prompt = Chat.InferCodeParams(prompt=f"[speed_{speed}]").prompt
    text = front.normalize("Speak at this pace, please.")
    ids, _, _ = up.encode(Speaker.decorate_code_prompts([text], upstream_prompt, None, "spk"), 4)
    prompt = front.build("Speak at this pace, please.", SeedVoice(1), speed=speed)
    assert torch.equal(ids[0, :, 0], prompt.ids)
    assert prompt.ids[2] == front.tokenizer.convert_tokens_to_ids(f"[speed_{speed}]")


def test_each_speed_level_is_its_own_token_and_five_is_the_default(front):
    by_level = [int(front.build("Same words.", SeedVoice(1), speed=n).ids[2]) for n in range(10)]
    assert len(set(by_level)) == 10
    assert torch.equal(front.build("Same words.", SeedVoice(1)).ids,
                       front.build("Same words.", SeedVoice(1), speed=5).ids)


@pytest.mark.parametrize("speed", [-1, 10, 5.0])
def test_a_speed_outside_the_levels_is_a_request_error(front, speed):
    with pytest.raises(RequestError, match="speed"):
        front.build("Hello.", SeedVoice(1), speed=speed)


def test_empty_text(front):
    assert front.build("  ... [uv_break] ", NamedVoice("default")) is None
    assert front.build("ok", NamedVoice("default")) is not None


def test_seed_voice_matches_upstream_sampling():
    from ChatTTS.config import Config
    from ChatTTS.model.speaker import Speaker
    spk = Speakers(FULL.hidden, Config().spk_stat)
    upstream = Speaker(FULL.hidden, Config().spk_stat)
    torch.manual_seed(42)
    expected = upstream._sample_random()
    assert torch.equal(spk.resolve(SeedVoice(42)), expected)
    assert not torch.equal(spk.resolve(SeedVoice(43)), expected)


def test_voice_encoded_by_upstream_resolves_to_its_vector():
    from ChatTTS.model.speaker import Speaker
    a = tiny_assets()
    spk = Speakers(a.shape.hidden, a.spk_stat)
    vec = spk.from_seed(9)
    assert torch.equal(spk.resolve(EmbeddingVoice(Speaker._encode(vec))), vec)
    with pytest.raises(VoiceError):
        spk.resolve(EmbeddingVoice("\u4e00" * 40))  # the syntax, but no encoding
    with pytest.raises(VoiceError):
        spk.resolve(NamedVoice("no-such-voice"))
    assert torch.equal(spk.resolve(NamedVoice("ash")), spk.from_seed(2))


def test_voices_file(tmp_path):
    a = tiny_assets()
    path = tmp_path / "voices.json"
    path.write_text(json.dumps({"narrator": "seed:11", "host": {"seed": 12}}))
    spk = Speakers(a.shape.hidden, a.spk_stat, read_voices_file(str(path)))
    assert "narrator" in spk.names and "default" in spk.names
    assert torch.equal(spk.resolve(NamedVoice("host")), spk.from_seed(12))
    assert torch.equal(spk.resolve(NamedVoice("narrator")), spk.from_seed(11))
    for bad in ("[1, 2]", '{"x": "seed:abc"}', '{"x": 3}'):
        path.write_text(bad)
        with pytest.raises(ValueError, match="voices.json"):
            read_voices_file(str(path))


@pytest.mark.parametrize("bad", [dict(temperature=0), dict(top_p=0), dict(top_p=1.5), dict(top_k=0),
                                 dict(repetition_penalty=0), dict(max_new_tokens=0),
                                 dict(min_new_tokens=5, max_new_tokens=4)])
def test_params_validated(bad):
    with pytest.raises(RequestError):
        validate_params(SamplingParams(**bad))
    validate_params(SamplingParams())


def test_normalized_text_is_not_normalized_again(front):
    # The server's text thread already made the text the model reads.
    assert front.build("3 cats", NamedVoice("default")).text == "three cats"
    prompt = front.build("3 cats", NamedVoice("default"), normalized=True)
    assert prompt.text == "3 cats"
    assert torch.equal(prompt.ids, front.tokenizer("[Stts][spk_emb][speed_5]3 cats[Ptts]",
                                                   add_special_tokens=False,
                                                   return_tensors="pt")["input_ids"][0])
    assert front.build("", NamedVoice("default"), normalized=True) is None
