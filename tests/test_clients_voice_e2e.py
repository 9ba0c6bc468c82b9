"""Idle connections against the real server (in-process, tone runner, a short
--idle-timeout): the Python client, the Pipecat service and the LiveKit plugin keep their
socket alive between turns with `ping`, and reconnect transparently when the server
closed an idle one."""

from __future__ import annotations

import asyncio

from clients import RealtimeClient
from clients.livekit_tts import ChatTTSRealtimeTTS
from examples.livekit_example import speak_turn
from examples.pipecat_example import run_pipeline
from realtime.runtime.tone import ToneRunner

IDLE = 0.4  # the server's idle timeout in these tests


def url(server) -> str:
    return f"ws://127.0.0.1:{server.port}/v1/stream"


async def idle_server(server_factory):
    return await server_factory(runner=ToneRunner(step_seconds=0.005), idle_timeout=IDLE)


async def test_keepalive_holds_the_connection_across_idle_timeouts(server_factory):
    server = await idle_server(server_factory)
    async with RealtimeClient(url(server)) as client:
        assert client.idle_timeout_s == IDLE
        await asyncio.sleep(4 * IDLE)
        assert client.connected and client.pings >= 3
        assert 0 <= await client.ping() < 1000
        pcm, done = await (await client.speak("Still here.")).collect()
    assert client.reconnects == 0 and done.segments == 1 and pcm


async def test_the_next_speak_reconnects_after_the_server_closed_an_idle_socket(server_factory):
    server = await idle_server(server_factory)
    async with RealtimeClient(url(server), keepalive=False) as client:
        await asyncio.sleep(IDLE + 0.6)
        assert not client.connected and client.close_code == 1000
        pcm, done = await (await client.speak("Back again.")).collect()
    assert client.reconnects == 1 and done.segments == 1 and pcm


async def test_pipecat_keeps_its_socket_between_turns(server_factory):
    server = await idle_server(server_factory)
    collector = await run_pipeline(url(server), None, ["First turn.", "Second turn."],
                                   token_delay_s=0.002, pause_s=4 * IDLE)
    client = collector.tts.last_client  # closed at the end of the pipeline
    assert collector.tts.turns_done == collector.tts.turns_opened and len(collector.tts.turns_done) == 2
    assert client.reconnects == 0 and client.pings >= 2


async def test_pipecat_reconnects_when_the_server_closed_its_idle_socket(server_factory):
    server = await idle_server(server_factory)
    collector = await run_pipeline(url(server), None, ["First turn.", "Second turn."],
                                   token_delay_s=0.002, pause_s=IDLE + 0.6, keepalive=False)
    tts_done = collector.tts.turns_done
    assert len(tts_done) == 2 and collector.stopped == 2
    assert collector.tts.last_client.reconnects == 1


async def test_livekit_keeps_its_socket_and_reconnects_after_an_idle_close(server_factory):
    server = await idle_server(server_factory)
    for keepalive, reconnects in ((True, 0), (False, 1)):
        tts = ChatTTSRealtimeTTS(url=url(server), keepalive=keepalive)
        try:
            first = await speak_turn(tts, "First turn.", token_delay_s=0.002)
            await asyncio.sleep(IDLE + 0.6)
            second = await speak_turn(tts, "Second turn.", token_delay_s=0.002)
            client = await tts.connection()
        finally:
            await tts.aclose()
        assert first.seconds > 0 and second.seconds > 0
        assert client.reconnects == reconnects, keepalive
