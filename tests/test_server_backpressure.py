"""Slow consumers and abrupt disconnects: memory stays bounded, slots come back."""

from __future__ import annotations

import asyncio
import socket

from protocol import Done, Error
from realtime.synthetic import ToneRunner


async def _wait_for(predicate, timeout: float = 5.0) -> bool:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while loop.time() < end:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def test_slow_consumer_is_stopped_and_memory_stays_bounded(server_factory, ws_connect):
    limit = 256 * 1024
    runner = ToneRunner(codes_per_char=40, max_codes=4000)
    server = await server_factory(runner=runner, send_queue_bytes=limit)
    # The client stops reading after a few messages: tiny receive queue and buffer.
    client = await ws_connect(server, max_queue=1)
    client.ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    text = "A very long stream of audio for nobody. " * 40
    await client.send({"type": "speak", "id": "slow", "text": text, "format": "pcm_f32le",
                       "sample_rate": 48000, "frame_ms": 1000})
    session = next(iter(server.sessions))
    assert await _wait_for(lambda: "slow" not in session.utterances, timeout=20)
    assert session.outbox.audio_bytes <= limit
    # now read: frames that were already queued, then the terminal error
    t = (await client.collect(["slow"], timeout=20))["slow"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "slow_consumer"
    assert await _wait_for(lambda: server.worker.stats.active_slots == 0)
    # the connection still works
    ok = await client.speak_and_collect("next", "Ok.")  # one burst below the bound
    assert isinstance(ok.terminal, Done)


async def test_abrupt_disconnect_frees_the_model_slots(server_factory, ws_connect):
    runner = ToneRunner(step_seconds=0.005)
    server = await server_factory(runner=runner)
    client = await ws_connect(server)
    for i in range(4):
        await client.send({"type": "speak", "id": f"d{i}", "text": "Long enough to be running. " * 5,
                           "lane": "background" if i % 2 else "interactive"})
    await client.recv()
    assert await _wait_for(lambda: server.worker.stats.active_slots > 0)
    client.ws.transport.abort()  # no close frame
    assert await _wait_for(lambda: server.active_utterances == 0)
    assert await _wait_for(lambda: server.worker.stats.active_slots == 0
                           and server.worker.stats.in_flight == 0)
    assert await _wait_for(lambda: runner.slots_in_use == 0 and runner.prepared_jobs == 0)
    assert server.worker.scheduler.idle
    assert not server.sessions
