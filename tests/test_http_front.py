"""The one HTTP front over raw sockets: slow clients are closed within the
handshake bound on both halves of the port, others are served meanwhile,
and the speech endpoint answers wrong methods with 405."""

from __future__ import annotations

import asyncio
import json
import time

from raw_http import raw_post

from realtime.engine.tone import ToneRunner

BOUND_S = 0.6
SPEECH = json.dumps({"model": "tts-1", "voice": "alice", "input": "Hello there.",
                     "response_format": "pcm"}).encode()


async def closed_after(port: int, sent: bytes, trickle: bytes = b"") -> float:
    """Seconds until the server closes a client that sent ``sent`` (then
    ``trickle`` a byte every 50 ms) and never the rest."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    writer.write(sent)
    for byte in trickle:
        await asyncio.sleep(0.05)
        if reader.at_eof():
            break
        writer.write(bytes([byte]))
    while await asyncio.wait_for(reader.read(1024), 5 * BOUND_S):
        pass  # whatever it says before closing
    writer.close()
    return time.monotonic() - started


async def test_stalled_requests_are_closed_within_the_handshake_bound(server_factory):
    server = await server_factory(handshake_timeout=BOUND_S)
    port = server.port
    partial_head = b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Type: app"
    stalled_body = (b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
                    + b'{"input": ')
    partial_handshake = b"GET /v1/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
    slow_head = b"POST /v1/audio/speech HTTP/1.1\r\n"
    times = await asyncio.gather(
        closed_after(port, partial_head), closed_after(port, stalled_body),
        closed_after(port, partial_handshake), closed_after(port, b""),
        # a byte at a time never earns more time: the bound runs from the start
        closed_after(port, slow_head, trickle=b"Host: x\r\nX-Slow: " + b"y" * 60))
    for took in times:
        assert BOUND_S * 0.8 <= took <= BOUND_S + 1.0, times


async def test_other_clients_are_served_while_slow_ones_stall(server_factory, ws_connect):
    server = await server_factory(handshake_timeout=5.0, runner=ToneRunner(step_seconds=0.002))
    stalled = []
    for _ in range(20):
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\n{")
        stalled.append(writer)
    started = time.monotonic()
    status, _, audio = await raw_post(server.port, SPEECH)
    assert status == 200 and audio
    client = await ws_connect(server)
    (await client.speak_and_collect("u", "Hello there.")).check_done()
    assert time.monotonic() - started < 4.0  # not behind the stalled ones' bound
    for writer in stalled:
        assert not writer.is_closing()  # still within theirs
        writer.close()


async def test_the_speech_endpoint_takes_only_post(server_factory):
    server = await server_factory()
    for method in ("GET", "PUT", "DELETE"):
        status, headers, payload = await raw_post(server.port, b"", method=method)
        assert status == 405, method
        assert headers["allow"] == "POST"
        assert json.loads(payload)["error"]["code"] == "bad_message"
    # a GET kept alive after a POST is answered by the same routes
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(SPEECH), SPEECH) + b"GET /v1/audio/speech HTTP/1.1\r\nHost: x\r\n"
                 b"Connection: close\r\n\r\n")
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 200") and b"HTTP/1.1 405" in raw
    assert b"allow: post" in raw.lower()


async def test_a_body_over_the_limit_is_a_413_before_it_is_read(server_factory):
    server = await server_factory(max_message_bytes=1000)
    status, _, payload = await raw_post(server.port, b"x" * 1001)
    assert status == 413 and json.loads(payload)["error"]["code"] == "bad_message"


async def test_a_client_that_asks_is_told_to_continue_and_head_gets_no_body(server_factory):
    server = await server_factory()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(SPEECH))
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)).startswith(
        b"HTTP/1.1 100 ")
    writer.write(SPEECH + b"HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert raw.startswith(b"HTTP/1.1 200")
    head = raw[raw.index(b"HTTP/1.1 200", 1):]
    assert b"content-length: 3" in head.lower() and head.endswith(b"\r\n\r\n")  # no body


UPGRADE = (b"GET /v1/stream HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


async def _exchange(port: int, *requests: bytes) -> bytes:
    """Send ``requests`` one after the other on one connection; everything
    the server said until it closed or went quiet for a second."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    said = b""
    for request in requests:
        writer.write(request)
        try:
            while b"\r\n\r\n" not in said or said.count(b"HTTP/1.1 ") < requests.index(request) + 1:
                chunk = await asyncio.wait_for(reader.read(65536), 1.0)
                if not chunk:
                    break
                said += chunk
        except TimeoutError:
            pass
    writer.close()
    return said


async def test_an_upgrade_is_handed_to_websockets_with_every_byte(server_factory):
    server = await server_factory()
    said = await _exchange(server.port, UPGRADE)
    # websockets' own handshake answer, computed from the key h11 read first.
    assert said.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
    assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in said


async def test_an_upgrade_after_another_request_is_refused_with_a_reason(server_factory):
    server = await server_factory()
    said = await _exchange(server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", UPGRADE)
    assert said.startswith(b"HTTP/1.1 200 ")
    second = said[said.index(b"HTTP/1.1 ", 1):]
    assert second.startswith(b"HTTP/1.1 400 ") and b"a WebSocket opens on a connection of its own" in second


async def test_a_gate_refusal_of_an_upgrade_is_an_http_answer(server_factory):
    server = await server_factory(auth_tokens=("secret",))
    said = await _exchange(server.port, UPGRADE)
    assert said.startswith(b"HTTP/1.1 401 ") and b"missing or invalid token" in said
    # A plain GET of the stream path asks no upgrade: told how, not handed over.
    said = await _exchange(server.port, b"GET /v1/stream HTTP/1.1\r\nHost: x\r\n\r\n")
    assert said.startswith(b"HTTP/1.1 400 ") and b"WebSocket upgrade" in said
