"""HTTP routes on the WebSocket port, and auth/origin at the handshake."""

from __future__ import annotations

import asyncio
import threading

import orjson
import pytest
from conftest import async_http_get
from websockets.exceptions import InvalidStatus

from realtime.engine.tone import ToneRunner
from realtime.server.app import Server
from realtime.server.config import ServerConfig


async def test_health_voices_and_metrics(tone_server, ws_connect):
    status, _, body = await async_http_get(tone_server.port, "/healthz")
    assert status == 200 and body == b"ok\n"
    status, headers, body = await async_http_get(tone_server.port, "/v1/voices")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert orjson.loads(body) == {"voices": ["default", "alice", "bob"]}
    client = await ws_connect(tone_server)
    await client.speak_and_collect("m", "Count this.")
    await client.send({"type": "sing"})
    await client.next_message(object)
    status, headers, body = await async_http_get(tone_server.port, "/metrics")
    text = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    for name in ("chattts_first_audio_seconds_bucket{", "chattts_queue_depth{lane=\"interactive\"}",
                 "chattts_active_utterances", "chattts_batch_size_bucket",
                 "chattts_step_seconds_bucket", "chattts_deadline_misses_total",
                 "chattts_audio_seconds_total", 'chattts_errors_total{code="unknown_type"} 1.0'):
        assert name in text
    assert 'chattts_first_audio_seconds_count{lane="interactive"} 1.0' in text


async def test_readyz_is_503_until_warm_and_while_draining():
    release = threading.Event()

    def slow_runner():
        release.wait(10)
        return ToneRunner()

    server = Server(ServerConfig(port=0, weights="tone"), slow_runner)
    await server.start()
    try:
        status, _, body = await async_http_get(server.port, "/readyz")
        assert status == 503 and orjson.loads(body)["warm"] is False
        status, _, _ = await async_http_get(server.port, "/healthz")
        assert status == 200
        release.set()
        await server.wait_ready()
        status, _, body = await async_http_get(server.port, "/readyz")
        assert status == 200 and orjson.loads(body)["ready"] is True
        server.state.draining = True  # what drain() sets first
        status, _, body = await async_http_get(server.port, "/readyz")
        assert status == 503 and orjson.loads(body)["draining"] is True
    finally:
        release.set()
        await server.close()


async def test_static_files_types_and_traversal(server_factory, tmp_path):
    (tmp_path / "index.html").write_text("<h1>demo</h1>")
    (tmp_path / "app.js").write_text("console.log(1)")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "style.css").write_text("body{}")
    (tmp_path.parent / "secret.txt").write_text("do not serve")
    server = await server_factory(web_root=str(tmp_path))
    port = server.port
    status, headers, body = await async_http_get(port, "/")
    assert status == 200 and body == b"<h1>demo</h1>" and headers["Content-Type"].startswith("text/html")
    status, headers, _ = await async_http_get(port, "/app.js")
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    status, headers, _ = await async_http_get(port, "/sub/style.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/sub/../../secret.txt",
                 "/nope.html", "/sub/%2e%2e%2f%2e%2e%2fsecret.txt"):
        status, _, body = await async_http_get(port, path)
        assert status == 404, path
        assert b"do not serve" not in body
    assert server.http.static.resolve("/..%5csecret.txt") is None


async def test_auth_token_header_or_query_else_401(server_factory, ws_connect):
    server = await server_factory(auth_tokens=("s3cret", "other"))
    with pytest.raises(InvalidStatus) as info:
        await ws_connect(server)
    assert info.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as info:
        await ws_connect(server, token="wrong")
    assert info.value.response.status_code == 401
    client = await ws_connect(server, token="s3cret")
    assert client.hello is not None
    client = await ws_connect(f"ws://127.0.0.1:{server.port}/v1/stream?token=other")
    assert client.hello is not None
    # plain routes stay open
    status, _, _ = await async_http_get(server.port, "/healthz")
    assert status == 200


async def test_origin_allow_list_else_403(server_factory, ws_connect):
    server = await server_factory(allowed_origins=("https://ok.example",))
    with pytest.raises(InvalidStatus) as info:
        await ws_connect(server, headers={"Origin": "https://evil.example"})
    assert info.value.response.status_code == 403
    assert (await ws_connect(server, headers={"Origin": "https://ok.example"})).hello
    assert (await ws_connect(server)).hello  # no Origin: judged by the token alone


async def test_connection_limit_is_503(server_factory, ws_connect):
    server = await server_factory(max_connections=1)
    await ws_connect(server)
    with pytest.raises(InvalidStatus) as info:
        await ws_connect(server)
    assert info.value.response.status_code == 503


async def test_tokens_are_never_logged(server_factory, ws_connect, caplog):
    caplog.set_level("DEBUG")
    server = await server_factory(auth_tokens=("tok-123456",))
    with pytest.raises(InvalidStatus):
        await ws_connect(server, token="wrong-987654")
    await ws_connect(server, token="tok-123456")

    def server_side() -> str:
        return "\n".join(r.getMessage() for r in caplog.records
                         if not r.name.startswith("websockets.client"))

    loop = asyncio.get_running_loop()
    end = loop.time() + 5
    while "GET /v1/stream" not in server_side() and loop.time() < end:
        await asyncio.sleep(0.01)
    server_side = server_side()
    assert "GET /v1/stream" in server_side  # the handshake was logged, minus the token
    assert "tok-123456" not in server_side and "wrong-987654" not in server_side
    assert "tok-123456" not in repr(server.config) and "tok-123456" not in str(server.config.summary())


async def test_metrics_values_follow_the_traffic(server_factory, ws_connect):
    from prometheus_client.parser import text_string_to_metric_families

    server = await server_factory(runner=ToneRunner())
    client = await ws_connect(server)
    fast = await client.speak_and_collect("i", "One short sentence. And a second one.")
    slow = await client.speak_and_collect("b", "Narrate this for later.", lane="background",
                                          deadline_ms=60000)
    await client.send({"type": "cancel", "id": "nope"})
    await client.next_message(object)
    for _ in range(50):  # the last utterance's bookkeeping follows its done message
        if server.active_utterances == 0:
            break
        await asyncio.sleep(0.01)

    _, _, body = await async_http_get(server.port, "/metrics")
    samples = {}
    for family in text_string_to_metric_families(body.decode()):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def value(name, **labels):
        return samples[(name, tuple(sorted(labels.items())))]

    heard = (fast.check_done().audio_ms + slow.check_done().audio_ms) / 1000
    assert value("chattts_audio_seconds_total") == pytest.approx(heard, rel=1e-9)
    assert value("chattts_first_audio_seconds_count", lane="interactive") == 1
    assert value("chattts_first_audio_seconds_count", lane="background") == 1
    assert value("chattts_utterances_total", outcome="done") == 2
    assert value("chattts_errors_total", code="unknown_id") == 1
    assert value("chattts_deadline_misses_total") == 0
    assert value("chattts_active_utterances") == 0
    assert value("chattts_queue_depth", lane="interactive") == 0
    assert value("chattts_queue_depth", lane="background") == 0
    assert value("chattts_step_seconds_count") >= 1
    assert value("chattts_batch_size_count") == value("chattts_step_seconds_count")
