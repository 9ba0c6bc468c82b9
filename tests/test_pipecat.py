"""ChatTTSRealtimeTTSService in a real Pipecat pipeline against a real server."""

from __future__ import annotations

import re

from clients_fixtures import run_example

from clients.events import WordCursor, caller_word
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


def words_of(text: str) -> list[str]:
    """Words without case or punctuation, for comparing transcripts."""
    return [w for w in (re.sub(r"[^\w$%']", "", t).lower() for t in text.split()) if w]


async def test_an_interrupted_turn_keeps_only_the_words_spoken(server):
    """The assistant's message in the context is the spoken prefix, within one word."""
    # The collector plays the audio in real time, as a transport does: the interruption
    # falls inside a sentence whose words (and audio) all came before it started.
    collector = await run_pipeline(server.ws, None, REPLY * 3, token_delay_s=0.002,
                                   interrupt_after_s=0.1, settle_s=0.5, realtime=True)
    tts = collector.tts
    assert tts.turns_cancelled == tts.turns_opened, "the turn was cut short"
    [utt] = tts.utterances
    heard_ms = 1000 * collector.audio_at_interruption
    cursor = WordCursor()
    cursor.add(utt.words)
    expected = words_of(" ".join(caller_word(w) for w in cursor.take(heard_ms)))
    kept = words_of(collector.assistant_message or "")
    assert 0 < len(expected) < len(words_of(REPLY * 3))
    assert abs(len(kept) - len(expected)) <= 1, (kept, expected)
    n = min(len(kept), len(expected))
    assert kept[:n] == expected[:n]


async def test_a_whole_turn_keeps_all_its_words(server):
    collector = await run_pipeline(server.ws, None, REPLY, token_delay_s=0.005)
    assert words_of(collector.assistant_message or "") == words_of(REPLY)
