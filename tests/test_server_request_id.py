"""Every HTTP response carries an ``X-Request-Id``: the routes, refusals and
errors of both parsers (websockets' GETs, h11's other methods), and the
WebSocket upgrade itself."""

from __future__ import annotations

import json

import pytest
from raw_http import raw_post
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

_EMPTY: bytes = b""


@pytest.mark.parametrize("method,path,body,status", [
    ("GET", "/healthz", _EMPTY, 200),
    ("GET", "/readyz", _EMPTY, 200),
    ("GET", "/metrics", _EMPTY, 200),
    ("GET", "/v1/stream", _EMPTY, 400),  # not an upgrade
    ("POST", "/v1/audio/speech", b"{not json", 401),
    ("DELETE", "/v1/voices", _EMPTY, 404),
])
async def test_refusals_carry_a_request_id(server_factory, method, path, body, status):
    server = await server_factory(auth_tokens=("s3cret",))
    got, headers, _ = await raw_post(server.port, body, path=path, method=method)
    assert got == status
    assert headers["x-request-id"].startswith("req-")


@pytest.mark.parametrize("method,path,body,status", [
    ("GET", "/no/such/page", _EMPTY, 404),
    ("POST", "/v1/audio/speech", b"{not json", 400),
    ("POST", "/v1/audio/speech", json.dumps({"model": "tts-1", "voice": "alice", "input": "Hi.",
                                             "response_format": "mp4"}).encode(), 400),
    ("PUT", "/v1/audio/speech", _EMPTY, 405),
    ("GET", "/v1/audio/speech", _EMPTY, 405),
])
async def test_errors_carry_a_request_id_each_its_own(tone_server, method, path, body, status):
    got, headers, payload = await raw_post(tone_server.port, body, path=path, method=method)
    again = (await raw_post(tone_server.port, body, path=path, method=method))[1]
    assert got == status
    assert headers["x-request-id"].startswith("req-")
    assert again["x-request-id"] != headers["x-request-id"]
    if path == "/v1/audio/speech" and method == "POST" and b"mp4" in body:
        error = json.loads(payload)["error"]  # the status docs/server.md states
        assert (error["code"], error["param"]) == ("unsupported", "response_format")


async def test_the_websocket_upgrade_carries_a_request_id(tone_server):
    async with connect(f"ws://127.0.0.1:{tone_server.port}/v1/stream") as ws:
        assert ws.response is not None
        assert ws.response.headers["X-Request-Id"].startswith("req-")


async def test_a_refused_upgrade_carries_a_request_id(server_factory):
    server = await server_factory(auth_tokens=("s3cret",))
    with pytest.raises(InvalidStatus) as refused:
        async with connect(f"ws://127.0.0.1:{server.port}/v1/stream"):
            pass
    response = refused.value.response
    assert response.status_code == 401
    assert response.headers["X-Request-Id"].startswith("req-")
