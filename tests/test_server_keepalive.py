"""Idle connections and the ping keepalive, over a real socket (tone runner)."""

from __future__ import annotations

import asyncio
import time

import pytest
from websockets.exceptions import ConnectionClosed

from protocol import Error, Pong
from realtime.engine.tone import ToneRunner
from realtime.server.config import ServerConfig

IDLE = 0.4


async def closed_after(client, timeout: float = 5.0) -> tuple[float, ConnectionClosed]:
    """Read until the server closes; (when, the close)."""
    with pytest.raises(ConnectionClosed) as info:
        while True:
            await client.recv(timeout=timeout)
    return time.monotonic(), info.value


def test_the_default_is_on_and_minutes_long():
    assert ServerConfig().idle_timeout == 300.0


async def test_idle_close_is_1000_with_a_reason_and_hello_states_it(server_factory, ws_connect):
    server = await server_factory(idle_timeout=IDLE)
    start = time.monotonic()
    client = await ws_connect(server)
    assert client.hello.limits.idle_timeout_s == IDLE
    when, closed = await closed_after(client)
    assert closed.rcvd is not None and closed.rcvd.code == 1000
    assert "idle" in closed.rcvd.reason and "ping" in closed.rcvd.reason
    assert IDLE <= when - start < IDLE + 1.5


async def test_ping_keeps_the_connection_open_and_pong_echoes(server_factory, ws_connect):
    server = await server_factory(idle_timeout=IDLE)
    client = await ws_connect(server)
    for n in range(8):  # 8 x 0.15 s = three timeouts' worth
        await client.send({"type": "ping", "data": str(n)})
        assert await client.next_message(Pong) == Pong(str(n))
        await asyncio.sleep(0.15)
    await client.send({"type": "ping"})
    assert await client.next_message(Pong) == Pong()
    last = time.monotonic()
    when, closed = await closed_after(client)
    assert closed.rcvd.code == 1000 and when - last >= IDLE


async def test_a_bad_ping_is_a_connection_level_error_and_ends_nothing(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "u", "text": "Keep speaking, please."})
    await client.send({"type": "ping", "id": "u", "data": 5})
    t = (await client.collect(["u"]))["u"]
    t.check_done()
    assert [(e.code, e.field, e.id) for e in client.connection_errors] == [("bad_message", "data", None)]


async def test_idle_counts_from_the_end_of_the_last_utterance(server_factory, ws_connect):
    server = await server_factory(idle_timeout=IDLE, runner=ToneRunner(step_seconds=0.02))
    client = await ws_connect(server)
    # The utterance outlasts the timeout: no client message meanwhile, yet open.
    t = await client.speak_and_collect("long", "A sentence that takes a while to say. " * 2)
    t.check_done()
    ended = time.monotonic()
    when, closed = await closed_after(client)
    assert closed.rcvd.code == 1000
    assert when - ended >= IDLE - 0.05  # a full timeout after done, not after the speak


async def test_zero_disables_the_idle_close(server_factory, ws_connect):
    server = await server_factory(idle_timeout=0)
    client = await ws_connect(server)
    assert client.hello.limits.idle_timeout_s == 0
    await asyncio.sleep(IDLE * 2)
    await client.send({"type": "ping", "data": "still"})
    assert await client.next_message(Pong) == Pong("still")
    assert not [e for e in client.connection_errors if isinstance(e, Error)]
