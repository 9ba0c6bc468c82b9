"""ChatTTS's controls on POST /v1/audio/speech: OpenAI's speed mapped to a
level, OpenAI's voice names, instructions and the sampling extensions; the
parser directly, then the official ``openai`` package against the real
runtime on tiny random weights."""

from __future__ import annotations

import json

import numpy as np
import openai
import pytest

from protocol import Params, RefineLevels
from protocol.pcm import decode_samples
from realtime.engine.api import NamedVoice, SeedVoice
from realtime.engine.text.frontend import Speakers
from realtime.engine.text.voice_table import DEFAULT_VOICES, OPENAI_VOICE_NAMES
from realtime.server.http.api_error import ApiError
from realtime.server.openai.instructions import refine_from_instructions, speed_from_instructions
from realtime.server.openai.request import parse_request
from realtime.server.voices.file import read_voices_file
from realtime.speech.speed import level_for_tempo

VOICES = tuple(DEFAULT_VOICES)


def parsed(offered: bool = True, **fields):
    body = {"model": "tts-1", "input": "Hi there.", "voice": "alloy", **fields}
    return parse_request(json.dumps(body).encode(), VOICES, 1000, refine_offered=offered)


def refused(offered: bool = True, **fields) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parsed(offered, **fields)
    return caught.value


# -- speed -------------------------------------------------------------------------------

# The documented table (docs/server.md): OpenAI speed -> ChatTTS level.
SPEED_TABLE = [(0.25, 0), (0.53, 0), (0.54, 1), (0.61, 1), (0.62, 2), (0.70, 2), (0.71, 3),
               (0.81, 3), (0.82, 4), (0.93, 4), (0.94, 5), (1.0, 5), (1.07, 5), (1.08, 6),
               (1.23, 6), (1.24, 7), (1.41, 7), (1.42, 8), (1.63, 8), (1.64, 9), (4.0, 9)]


@pytest.mark.parametrize(("speed", "level"), SPEED_TABLE)
def test_openai_speed_maps_to_the_documented_level(speed, level):
    assert level_for_tempo(speed) == level
    assert parsed(speed=speed).params.speed == level


def test_the_speed_map_is_monotonic_over_openai_whole_range():
    speeds = [0.25 + i * 0.01 for i in range(376)]
    levels = [parsed(speed=s).params.speed for s in speeds]  # never a 400 inside the range
    assert levels == sorted(levels) and levels[0] == 0 and levels[-1] == 9
    assert set(levels) == set(range(10))


@pytest.mark.parametrize("speed", [0.2499, 4.0001, 0, -1, "1.0", True, 1e300])
def test_speed_outside_openai_range_is_a_400(speed):
    err = refused(speed=speed)
    assert (err.status, err.code, err.param) == (400, "bad_message", "speed")


def test_no_speed_means_the_default_level():
    assert parsed().params.speed is None and parsed().speed == 1.0


# -- instructions -------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "level"), [
    ("Speak slowly and calmly.", 3), ("very slowly please", 1), ("Talk FAST!", 7),
    ("a bit quicker", 7), ("very quick", 9), ("Use [speed_2] throughout", 2),
    ("[speed_8] but slowly", 8), ("Cheerful, British accent.", None), ("", None),
    ("[oral_2][laugh_0][break_6]", None), ("breakfast", None), ("slowness", None),
])
def test_instructions_give_a_speed_only_when_they_name_one(text, level):
    assert speed_from_instructions(text) == level
    assert parsed(instructions=text).params.speed == level


def test_an_explicit_speed_wins_over_instructions():
    assert parsed(speed=1.0, instructions="very slowly").params.speed == 5


# -- extensions and voices ---------------------------------------------------------------------


def test_sampling_extensions_are_read_as_the_websocket_reads_them():
    got = parsed(seed=7, temperature=0.5, top_p=0.9, top_k=12, refine=False,
                 repetition_penalty=1.9, reference="first").params
    # repetition_penalty and reference are not OpenAI-endpoint extensions: ignored.
    assert got == Params(temperature=0.5, top_p=0.9, top_k=12, seed=7, refine=False)


@pytest.mark.parametrize(("field", "value", "code"), [
    ("seed", -1, "bad_message"), ("seed", 1.0, "bad_message"), ("temperature", 0, "bad_message"),
    ("top_p", 1.5, "bad_message"), ("top_k", True, "bad_message"),
    ("refine", 1, "bad_message"), ("refine", {"oral": 10}, "bad_message"),
])
def test_bad_extensions_are_400_naming_the_field(field, value, code):
    err = refused(**{field: value})
    assert (err.status, err.code, err.param.split(".")[0]) == (400, code, field)


@pytest.mark.parametrize("value", [True, {"oral": 2}, "[oral_2]"])
def test_refine_extension_is_read_or_unsupported_without_the_pass(value):
    kept = parsed(refine=value).params.refine
    assert kept == (RefineLevels(oral=2) if isinstance(value, dict) else value)
    err = refused(offered=False, refine=value)
    assert (err.status, err.code, err.param) == (400, "unsupported", "refine")


def test_openai_voice_names_each_name_a_fixed_distinct_voice():
    assert len(OPENAI_VOICE_NAMES) == 13 and set(OPENAI_VOICE_NAMES) <= set(DEFAULT_VOICES)
    seeds = list(DEFAULT_VOICES.values())
    assert len(set(seeds)) == len(seeds)
    # the names that existed before keep their voices
    assert {k: DEFAULT_VOICES[k] for k in ("default", "ash", "birch", "cedar", "dune")} == \
        {"default": SeedVoice(0), "ash": SeedVoice(2), "birch": SeedVoice(3), "cedar": SeedVoice(5),
         "dune": SeedVoice(7)}
    for name in OPENAI_VOICE_NAMES:
        assert parsed(voice=name).voice == name
    err = refused(voice="nobody")
    assert (err.status, err.code, err.param) == (400, "unsupported", "voice")


def test_a_voices_file_remaps_an_openai_name(tmp_path):
    from runtime_fixtures import tiny_assets
    a = tiny_assets()
    path = tmp_path / "voices.json"
    path.write_text(json.dumps({"alloy": {"seed": 99}, "mine": "seed:4"}))
    speakers = Speakers(a.shape.hidden, a.spk_stat, read_voices_file(str(path)))
    assert speakers.registry["alloy"] == SeedVoice(99) and "mine" in speakers.names
    assert set(OPENAI_VOICE_NAMES) <= set(speakers.names)
    import torch
    assert torch.equal(speakers.resolve(NamedVoice("alloy")), speakers.from_seed(99))


# -- the official client against the real runtime ----------------------------------------------


def client_for(server) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused",
                              max_retries=0, timeout=240)


async def test_openai_package_default_voice_and_speeds_return_audio(tiny_server):
    pcm: dict[float, list[bytes]] = {}
    async with client_for(tiny_server) as client:
        for speed in (0.25, 1.0, 4.0, 0.25):
            response = await client.audio.speech.create(
                model="tts-1", voice="alloy", input="Hello there.", response_format="pcm",
                speed=speed, extra_body={"seed": 3})
            samples = decode_samples(response.content, "pcm_s16le")
            assert samples.size > 0 and np.all(np.isfinite(samples))
            pcm.setdefault(speed, []).append(response.content)
        # the seed extension reaches the runtime: the same request, the same audio;
        # and so does the level: same seed and text, another [speed_N], other codes
        assert pcm[0.25][0] == pcm[0.25][1]
        assert pcm[0.25][0] != pcm[4.0][0]
        with pytest.raises(openai.BadRequestError) as outside:
            await client.audio.speech.create(model="tts-1", voice="nobody", input="Hi.")
        assert outside.value.body["code"] == "unsupported"
        assert outside.value.body["param"] == "voice"


async def test_voices_lists_openai_names_on_the_websocket_and_http(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    assert set(OPENAI_VOICE_NAMES) <= set(client.hello.voices)
    async with client_for(tiny_server) as api:
        listed = await api.get("/voices", cast_to=object)
    assert isinstance(listed, dict) and set(OPENAI_VOICE_NAMES) <= set(listed["voices"])


@pytest.mark.parametrize(("text", "prompt"), [
    ("[oral_2][laugh_0][break_6]", "[oral_2][laugh_0][break_6]"),
    ("Be chatty: [break_4] and [oral_3], then [oral_7]", "[oral_3][break_4]"),
    ("[laugh_5][laugh_1] [speed_2]", "[laugh_1]"),  # out of range: skipped
    ("Cheerful and chatty, please.", None), ("[oral_x]", None), ("", None),
])
def test_instructions_naming_refine_levels_turn_the_pass_on(text, prompt):
    assert refine_from_instructions(text) == prompt
    assert parsed(instructions=text).params.refine == prompt
    assert parsed(offered=False, instructions=text).params.refine is None  # no pass: ignored
    assert parsed(instructions=text, refine=False).params.refine is False  # explicit wins
