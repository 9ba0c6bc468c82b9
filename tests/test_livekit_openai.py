"""LiveKit Agents' own OpenAI TTS plugin (livekit-plugins-openai), pointed at our
server: it asks for server-sent events for most models and raw bytes for tts-1."""

from __future__ import annotations

import pytest
from livekit.plugins import openai as lk_openai

from realtime.engine.tone import ToneRunner

TEXT = "Hello there. This is LiveKit speaking through the OpenAI plugin."


async def reference_ms(server, ws_connect) -> float:
    client = await ws_connect(server)
    return (await client.speak_and_collect("ref", TEXT, voice="alice")).check_done().audio_ms


@pytest.mark.parametrize(("model", "response_format"), [
    ("gpt-4o-mini-tts", "pcm"),  # stream_format "sse"
    ("gpt-4o-mini-tts", "mp3"),
    ("tts-1", "pcm"),  # stream_format "audio"
    ("tts-1", "opus"),
])
async def test_livekit_openai_plugin_gets_all_the_audio(tone_server, ws_connect, model,
                                                        response_format):
    expected_s = await reference_ms(tone_server, ws_connect) / 1000
    tts = lk_openai.TTS(model=model, voice="alice", response_format=response_format,
                        base_url=f"http://127.0.0.1:{tone_server.port}/v1", api_key="unused")
    try:
        frame = await tts.synthesize(TEXT).collect()
    finally:
        await tts.aclose()
    assert frame.sample_rate == 24000 and frame.num_channels == 1
    # LiveKit pads its last 10 ms frame; compressed formats lose or gain a codec
    # frame at the edges; never a sentence (each is ~0.6 s here)
    tolerance = 0.011 if response_format == "pcm" else 0.1
    assert frame.duration == pytest.approx(expected_s, abs=tolerance)


async def test_livekit_openai_plugin_surfaces_a_refusal(server_factory):
    from livekit.agents import APIStatusError

    server = await server_factory(runner=ToneRunner())
    tts = lk_openai.TTS(model="tts-1", voice="nova", response_format="pcm",
                        base_url=f"http://127.0.0.1:{server.port}/v1", api_key="unused")
    try:
        with pytest.raises(APIStatusError) as refused:
            await tts.synthesize(TEXT).collect()
    finally:
        await tts.aclose()
    assert refused.value.status_code == 400
