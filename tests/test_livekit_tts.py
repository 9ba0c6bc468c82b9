"""clients.livekit_tts.ChatTTSRealtimeTTS, a LiveKit Agents TTS plugin, against a real
server (in-process, tone runner): a streamed turn, a one-shot synthesis, an
interruption, refusals. No LiveKit server is involved: the plugin's streams are
driven directly, as an AgentSession drives them."""

from __future__ import annotations

import re

import pytest
from clients_fixtures import run_example
from conftest import wait_until
from livekit.agents import APIConnectOptions, APIError, APIStatusError
from livekit.agents.types import TimedString

from clients.errors import UtteranceCancelled
from clients.livekit_tts import ChatTTSRealtimeTTS
from examples.livekit_example import speak_turn
from examples.llm_script import REPLY
from realtime.engine.tone import ToneRunner

NO_RETRY = APIConnectOptions(max_retry=0)


def url(server) -> str:
    return f"ws://127.0.0.1:{server.port}/v1/stream"


async def reference_ms(server, ws_connect, text: str) -> float:
    client = await ws_connect(server)
    return (await client.speak_and_collect("ref", text)).check_done().audio_ms


async def test_a_streamed_turn_is_one_utterance_with_all_its_audio(tone_server, ws_connect):
    expected_s = await reference_ms(tone_server, ws_connect, REPLY) / 1000
    tts = ChatTTSRealtimeTTS(url=url(tone_server))
    try:
        turn = await speak_turn(tts, REPLY, token_delay_s=0.002)
    finally:
        await tts.aclose()
    assert turn.seconds == pytest.approx(expected_s, abs=0.011)  # LiveKit pads its last frame
    assert len(turn.segment_ids) == 1 and turn.frames > 5
    assert tone_server.metrics.render().decode().count('outcome="done"} 2.0') == 1


async def test_synthesize_streams_one_utterance(tone_server, ws_connect):
    text = "One shot. Two sentences."
    expected_s = await reference_ms(tone_server, ws_connect, text) / 1000
    tts = ChatTTSRealtimeTTS(url=url(tone_server), voice="alice")
    try:
        frame = await tts.synthesize(text).collect()
    finally:
        await tts.aclose()
    assert frame.sample_rate == 24000 and frame.num_channels == 1
    assert frame.duration == pytest.approx(expected_s, abs=0.011)


async def test_an_interruption_cancels_the_utterance(server_factory):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01))
    tts = ChatTTSRealtimeTTS(url=url(server), chunking="token")
    try:
        turn = await speak_turn(tts, REPLY * 3, token_delay_s=0.002, interrupt_after_s=0.1)
        assert turn.interrupted and 0 < turn.seconds < 4.0
        client = await tts.connection()
        await wait_until(lambda: not client.active)  # the utterance ends ...
    finally:
        await tts.aclose()
    metrics = server.metrics.render().decode()
    assert 'chattts_utterances_total{outcome="cancelled"} 1.0' in metrics  # ... by our cancel
    assert server.accounting.active_utterances == 0


async def test_the_stream_records_its_cancelled_utterance(server_factory):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01))
    tts = ChatTTSRealtimeTTS(url=url(server))
    stream = tts.stream()
    try:
        stream.push_text("A long first sentence that takes a while to speak. " * 4)
        async for _ in stream:
            break  # the first audio: now the user barges in
        await stream.aclose()
        [utt] = stream.utterances
        with pytest.raises(UtteranceCancelled):
            await utt.result()
    finally:
        await tts.aclose()


async def test_refusals_map_to_livekit_errors(server_factory):
    server = await server_factory(runner=ToneRunner(step_seconds=0.02),
                                  scheduler_options={"max_queue_interactive": 1,
                                                     "admission": "queue-only"})
    tts = ChatTTSRealtimeTTS(url=url(server), voice="nobody")
    try:
        with pytest.raises(APIError) as unsupported:
            await tts.synthesize("Hello there.", conn_options=NO_RETRY).collect()
        assert not unsupported.value.retryable
        tts.voice = "alice"
        with pytest.raises(APIStatusError) as overloaded:
            await tts.synthesize("One. Two. Three.", conn_options=NO_RETRY).collect()
        assert overloaded.value.status_code == 429 and overloaded.value.retryable
    finally:
        await tts.aclose()


def test_example_writes_wav(server, tmp_path):
    samples, rate = run_example("examples.livekit_example", server, tmp_path / "turn.wav",
                                "--token-delay-ms", "2")
    assert rate == 24000 and len(samples) / rate > 1.5


def words_of(text: str) -> list[str]:
    return [w for w in (re.sub(r"[^\w$%']", "", t).lower() for t in text.split()) if w]


async def test_an_interrupted_turn_has_an_aligned_transcript_of_the_words_played(server_factory):
    """aligned_transcript=True: TimedStrings come with the audio, each before the audio in
    which its word starts; cut short, the transcript is the spoken prefix within a word."""
    server = await server_factory(runner=ToneRunner(step_seconds=0.01))
    tts = ChatTTSRealtimeTTS(url=url(server))
    assert tts.capabilities.aligned_transcript
    try:
        # Taken at playback pace, the interruption falls inside the first sentence.
        turn = await speak_turn(tts, REPLY * 3, token_delay_s=0.002, interrupt_after_s=0.15,
                                realtime=True)
        client = await tts.connection()
        await wait_until(lambda: not client.active)
    finally:
        await tts.aclose()
    assert turn.interrupted
    assert all(isinstance(t, TimedString) and t.start_time <= t.end_time for t in turn.transcript)
    starts = [t.start_time for t in turn.transcript]
    assert starts == sorted(starts)
    kept = words_of("".join(turn.transcript))
    assert 0 < len(kept) < len(words_of(REPLY * 3))
    # The spoken prefix within one word: the words that started in the audio taken,
    # and at most one more (LiveKit attaches a transcript to the frame it is filling).
    [utt] = turn.utterances
    heard = [w for w in utt.words if w.start_ms < 1000 * turn.seconds]
    assert len(heard) <= len(kept) <= len(heard) + 1, (turn.seconds, kept)


async def test_a_whole_turn_has_the_whole_aligned_transcript(tone_server):
    tts = ChatTTSRealtimeTTS(url=url(tone_server))
    try:
        turn = await speak_turn(tts, REPLY, token_delay_s=0.002)
    finally:
        await tts.aclose()
    assert words_of("".join(turn.transcript)) == words_of(REPLY)
