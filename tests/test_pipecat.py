"""ChatTTSRealtimeTTSService in a real Pipecat pipeline against a real server."""

from __future__ import annotations

from clients_fixtures import run_example

from examples.llm_script import REPLY, llm_tokens
from examples.pipecat_example import run_pipeline


def test_llm_tokens_rebuild_the_text():
    tokens = llm_tokens(REPLY)
    assert "".join(tokens) == REPLY
    assert len(tokens) > len(REPLY.split())  # long words are split, like an LLM's tokens


async def test_one_turn_is_one_utterance_with_all_its_audio(server):
    collector = await run_pipeline(server.ws, None, REPLY, token_delay_s=0.005)
    tts = collector.tts
    assert len(tts.turns_opened) == 1, "a turn must map to exactly one utterance"
    assert tts.turns_done == tts.turns_opened and tts.turns_cancelled == []
    assert collector.started == 1 and collector.stopped == 1
    assert len(collector.audio) > 5
    assert all(f.sample_rate == 24000 and f.num_channels == 1 for f in collector.audio)
    # The tone runner's audio length follows the text: all of it came back, not a prefix.
    seconds = len(collector.pcm) / 2 / 24000
    assert seconds > 1.5


async def test_interruption_cancels_the_turn(server):
    collector = await run_pipeline(server.ws, None, REPLY * 3, token_delay_s=0.02,
                                   interrupt_after_s=0.1, settle_s=0.5)
    tts = collector.tts
    assert len(tts.turns_opened) == 1
    assert tts.turns_cancelled == tts.turns_opened and tts.turns_done == []
    assert collector.interrupted
    assert collector.frames_after_interruption == 0
    # Cut short: the tone runner makes about 8.5 s of audio for this whole text.
    seconds = len(collector.pcm) / 2 / 24000
    assert 0 < seconds < 4.0


def test_example_writes_wav(server, tmp_path):
    samples, rate = run_example("examples.pipecat_example", server, tmp_path / "turn.wav",
                                "--token-delay-ms", "5")
    assert rate == 24000 and len(samples) / rate > 1.5
