"""Security checks: auth, origins, limits, timeouts, error hygiene, static files, logs.

Unit tests for ``realtime.server.ratelimit`` run on a fake
clock; the rest talks to a live in-process server over 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import socket
from pathlib import Path

import pytest
from conftest import async_http_get
from websockets.exceptions import ConnectionClosed, InvalidStatus

from protocol import Done, Error, ErrorCode, Started
from realtime.engine.tone import ToneRunner
from realtime.server import app as rt_server
from realtime.server.http import auth
from realtime.server.http.auth import principal_of, token_allowed
from realtime.server.http.static import StaticFiles
from realtime.server.ratelimit import QuotaBook, QuotaLimits, TextRateLimiter

TOKEN = "s3cr3t-Token-value-0123456789"
OTHER = "another-valid-token-abcdef"

# Anything that looks like a traceback or a file path on this machine.
_LEAK = re.compile(r"Traceback|File \"|\.py\b|/work/|/home/|/usr/|/tmp/|site-packages")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# -- TextRateLimiter / QuotaBook ---------------------------------------------------------


def test_text_rate_limiter_spends_a_minute_then_refills_continuously():
    clock = FakeClock()
    bucket = TextRateLimiter(600, clock)  # 10 characters per second
    assert bucket.try_take(600)
    assert not bucket.try_take(1)
    assert bucket.retry_after(50) == pytest.approx(5.0)
    clock.now += 5.0
    assert not bucket.try_take(51)  # a refusal takes nothing
    assert bucket.try_take(50)
    clock.now += 3600.0
    assert bucket.available == pytest.approx(600)  # never above one minute's allowance
    assert bucket.retry_after(601) == float("inf")


def test_text_rate_limiter_zero_is_unlimited():
    bucket = TextRateLimiter(0, FakeClock())
    assert bucket.try_take(10**9)
    assert bucket.retry_after(10**9) == 0.0
    with pytest.raises(ValueError):
        TextRateLimiter(-1)


def test_token_quota_is_shared_by_all_connections_of_a_token():
    book = QuotaBook(QuotaLimits(chars_per_minute=0, token_chars_per_minute=0,
                                 token_max_active=2), FakeClock())
    principal = principal_of(TOKEN)
    a, b = book.open(principal), book.open(principal)
    assert a.admit_speak(5) is None
    assert b.admit_speak(5) is None
    refusal = a.admit_speak(5)
    assert refusal is not None and refusal.code is ErrorCode.TOO_MANY_ACTIVE
    other = book.open(principal_of(OTHER))  # another token is not affected
    assert other.admit_speak(5) is None
    b.utterance_ended()
    assert a.admit_speak(5) is None
    assert book.active(principal) == 2
    a.close()  # a vanished connection releases what it held
    assert book.active(principal) == 0
    b.close()
    other.close()
    assert book.principals == 0


def test_text_rate_is_limited_per_connection_and_per_token():
    clock = FakeClock()
    book = QuotaBook(QuotaLimits(chars_per_minute=100, token_chars_per_minute=150,
                                 token_max_active=0), clock)
    principal = principal_of(TOKEN)
    a, b = book.open(principal), book.open(principal)
    assert a.admit_speak(100) is None
    per_conn = a.take_text(1)
    assert per_conn is not None and per_conn.code is ErrorCode.OVERLOADED
    assert "per connection" in per_conn.message
    assert b.admit_speak(50) is None
    per_token = b.take_text(1)
    assert per_token is not None and "per token" in per_token.message
    assert a.active == 1 and b.active == 1  # refusals leave the counts alone
    clock.now += 60.0
    assert b.take_text(100) is None
    # A token whose budget is still recovering is remembered across reconnects.
    a.close()
    b.close()
    assert book.principals == 1
    c = book.open(principal)
    assert c.take_text(100) is not None


def test_principal_never_contains_the_token():
    principal = principal_of(TOKEN)
    assert principal is not None and TOKEN not in principal
    assert principal == principal_of(TOKEN) != principal_of(OTHER)
    assert principal_of(None) is None and principal_of("") is None


# -- token auth and origins ------------------------------------------------------------------


def test_token_comparison_is_constant_time_over_every_token(monkeypatch):
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    tokens = (OTHER, TOKEN, "third")
    assert token_allowed(TOKEN, tokens)
    assert len(calls) == 3  # no early exit on the first match
    calls.clear()
    assert not token_allowed("wrong", tokens)
    assert len(calls) == 3
    assert not token_allowed(None, tokens)
    assert not token_allowed(TOKEN[:-1], tokens)


async def _status(server, **kwargs) -> int:
    """HTTP status of a refused handshake, or 101 when it opened."""
    from websockets.asyncio.client import connect

    headers = kwargs.pop("headers", {})
    path = kwargs.pop("path", "/v1/stream")
    try:
        async with connect(f"ws://127.0.0.1:{server.port}{path}", additional_headers=headers,
                           open_timeout=5, **kwargs):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


async def test_auth_and_origin_at_the_handshake(server_factory):
    server = await server_factory(auth_tokens=(TOKEN, OTHER),
                                  allowed_origins=("https://app.example",))
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert await _status(server) == 401
    assert await _status(server, headers={"Authorization": "Bearer nope"}) == 401
    assert await _status(server, headers={"Authorization": f"Basic {TOKEN}"}) == 401
    assert await _status(server, path="/v1/stream?token=") == 401
    assert await _status(server, headers=bearer) == 101
    assert await _status(server, headers={"Authorization": f"Bearer {OTHER}"}) == 101
    assert await _status(server, path=f"/v1/stream?token={TOKEN}") == 101
    # Origin is judged only when present; a wrong token is still 401 first.
    assert await _status(server, headers=bearer, origin="https://evil.example") == 403
    assert await _status(server, headers=bearer, origin="https://app.example") == 101
    assert await _status(server, origin="https://app.example") == 401


async def _auth_traffic(server, ws_connect) -> None:
    """A refused and an accepted handshake, by header and by query, and one utterance."""
    assert await _status(server, headers={"Authorization": f"Bearer {TOKEN}x"}) == 401
    assert await _status(server, path=f"/v1/stream?token={TOKEN}x") == 401
    client = await ws_connect(server, token=TOKEN)
    (await client.speak_and_collect("a", "Hello there.")).check_done()
    await client.close()
    by_query = await ws_connect(f"ws://127.0.0.1:{server.port}/v1/stream?token={TOKEN}")
    await by_query.close()
    await asyncio.sleep(0.05)


def _server_log_text(caplog) -> str:
    # websockets.client records are this test's own client, not the server.
    records = [r for r in caplog.records if not r.name.startswith("websockets.client")]
    # The capture really saw the handshakes (websockets logs request lines at DEBUG).
    assert any(r.name.startswith("websockets.server") for r in records)
    return "\n".join(r.getMessage() for r in records)


async def test_server_modules_never_log_tokens(server_factory, ws_connect, caplog):
    caplog.set_level(logging.DEBUG)
    server = await server_factory(auth_tokens=(TOKEN,))
    await _auth_traffic(server, ws_connect)
    ours = [r.getMessage() for r in caplog.records if not r.name.startswith("websockets")]
    assert ours and all(TOKEN not in line for line in ours)
    assert TOKEN not in repr(server.config) and TOKEN not in str(server.config.summary())


async def test_tokens_never_reach_the_logs(server_factory, ws_connect, caplog):
    caplog.set_level(logging.DEBUG)  # the most talkative setting, websockets included
    server = await server_factory(auth_tokens=(TOKEN,))
    await _auth_traffic(server, ws_connect)
    assert TOKEN not in _server_log_text(caplog)


# -- limits -------------------------------------------------------------------------------------


async def test_oversize_message_closes_with_1009(server_factory, ws_connect):
    server = await server_factory(max_message_bytes=1024)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "big", "text": "a" * 2000})
    with pytest.raises(ConnectionClosed) as info:
        for _ in range(10):
            await client.recv(timeout=5)
    assert info.value.rcvd is not None and info.value.rcvd.code == 1009
    other = await ws_connect(server)  # the server itself carries on
    (await other.speak_and_collect("ok", "Still serving.")).check_done()


async def test_active_utterances_per_connection_are_limited(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01), max_active=2)
    client = await ws_connect(server)
    for i in range(3):
        await client.send({"type": "speak", "id": f"u{i}", "text": "A long sentence " * 5})
    done = await client.collect(["u0", "u1", "u2"])
    assert isinstance(done["u2"].terminal, Error) and done["u2"].terminal.code == "too_many_active"
    assert done["u2"].started is None
    assert all(isinstance(done[i].terminal, Done) for i in ("u0", "u1"))


async def test_active_utterances_per_token_across_connections(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01), auth_tokens=(TOKEN,),
                                  token_max_active=2)
    a = await ws_connect(server, token=TOKEN)
    b = await ws_connect(server, token=TOKEN)
    await a.send({"type": "speak", "id": "a1", "text": "A long sentence " * 5})
    await b.send({"type": "speak", "id": "b1", "text": "A long sentence " * 5})
    await a.next_message(Started)
    await b.next_message(Started)
    await b.send({"type": "speak", "id": "b2", "text": "Refused."})
    t = (await b.collect(["b1", "b2"]))["b2"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "too_many_active"
    assert "per token" in t.terminal.message
    assert t.terminal.retry_after_ms > 0  # load refusals say when to come back


async def test_text_characters_per_minute_per_connection(server_factory, ws_connect):
    server = await server_factory(text_chars_per_minute=40, max_text_chars=40)
    client = await ws_connect(server)
    (await client.speak_and_collect("a", "Thirty characters of text here.")).check_done()
    t = await client.speak_and_collect("b", "Twenty more characters.")
    assert isinstance(t.terminal, Error) and t.terminal.code == "overloaded"
    assert t.started is None and "per minute" in t.terminal.message
    # The bucket holds 9 of the 23 characters: 14 more come in 21 s (less
    # what refilled while "a" ran).
    assert 20_000 <= t.terminal.retry_after_ms <= 21_000
    # Streaming text counts too: an append over the rate ends its utterance.
    await client.send({"type": "speak", "id": "c", "text": "Hi", "final": False})
    await client.send({"type": "append", "id": "c", "text": "x" * 30, "final": True})
    t = (await client.collect(["c"]))["c"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "overloaded"


async def test_idle_connection_is_closed(server_factory, ws_connect):
    server = await server_factory(idle_timeout=0.3, runner=ToneRunner(step_seconds=0.02))
    busy = await ws_connect(server)
    idle = await ws_connect(server)
    # An utterance longer than the timeout keeps its connection open.
    t = await busy.speak_and_collect("long", "A sentence that takes a while. " * 2)
    t.check_done()
    with pytest.raises(ConnectionClosed) as info:
        await idle.recv(timeout=5)
    assert info.value.rcvd is not None and info.value.rcvd.code == 1000


async def test_unresponsive_peer_is_dropped_by_ping_timeout(server_factory, monkeypatch):
    """A peer that completes the handshake and then never reads or answers pings."""
    seen: dict[str, object] = {}
    real_serve = rt_server.serve

    def short_pings(*args, **kwargs):
        seen.update(kwargs)
        kwargs.update(ping_interval=0.2, ping_timeout=0.2, close_timeout=0.5)
        return real_serve(*args, **kwargs)

    monkeypatch.setattr(rt_server, "serve", short_pings)
    server = await server_factory()
    # The production settings keep pings on, with a finite timeout.
    assert isinstance(seen["ping_interval"], (int, float)) and seen["ping_interval"] > 0
    assert isinstance(seen["ping_timeout"], (int, float)) and seen["ping_timeout"] > 0
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(
        b"GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
        b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        b"Sec-WebSocket-Version: 13\r\n\r\n")
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    assert head.startswith(b"HTTP/1.1 101")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while server.connection_count and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert server.connection_count == 0
    writer.close()


# -- error hygiene ---------------------------------------------------------------------------------


class LeakyRunner(ToneRunner):
    """prepare() fails with an exception whose text names internal paths."""

    def prepare(self, request):
        if "LEAK" in request.text:
            raise RuntimeError("cannot open /work/secret/model.py line 12")
        return super().prepare(request)


async def test_model_failures_reach_clients_without_internals(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner())
    client = await ws_connect(server)
    for msg_id, text in (("fail", "Please FAIL now."), ("crash", "Please CRASH now.")):
        t = await client.speak_and_collect(msg_id, text)
        assert isinstance(t.terminal, Error) and t.terminal.code == "internal"
        assert not _LEAK.search(t.terminal.message), t.terminal.message
    for raw in ("{", "[]", '{"type":"speak","id":"x","text":5}', '{"type":"nope"}'):
        await client.send(raw)
        reply = await client.next_message(Error)
        assert not _LEAK.search(reply.message), reply.message
    (await client.speak_and_collect("after", "Still fine.")).check_done()


async def test_front_end_exception_text_is_not_sent(server_factory, ws_connect):
    server = await server_factory(runner=LeakyRunner())
    client = await ws_connect(server)
    t = await client.speak_and_collect("x", "This will LEAK.")
    assert isinstance(t.terminal, Error) and t.terminal.code == "internal"
    assert not _LEAK.search(t.terminal.message), t.terminal.message
    (await client.speak_and_collect("y", "This will not.")).check_done()  # only the leak fails


# -- static files ----------------------------------------------------------------------------------


@pytest.fixture
def web_root(tmp_path: Path) -> Path:
    root = tmp_path / "web"
    root.mkdir()
    (root / "index.html").write_text("<h1>demo</h1>")
    (root / "app.js").write_text("console.log(1)")
    (root / "sub").mkdir()
    (root / "sub" / "style.css").write_text("body{}")
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    (root / "link.txt").symlink_to(tmp_path / "secret.txt")
    (root / "linkdir").symlink_to(tmp_path)
    return root


def _raw_get(port: int, target: str) -> tuple[int, bytes]:
    """Send the request target byte for byte (no client-side normalisation)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status_line, _, rest = data.partition(b"\r\n")
    parts = status_line.split()
    return (int(parts[1]) if len(parts) > 1 else 0), rest


TRAVERSALS = [
    "/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt",
    "/sub/../../secret.txt", "/sub/%2e%2e/%2e%2e/secret.txt", "/%252e%252e/secret.txt",
    "/..\\secret.txt", "/..%5csecret.txt", "//etc/passwd", "/%2fetc%2fpasswd",
    "/link.txt", "/linkdir/secret.txt", "/index.html%00.js", "/./../secret.txt",
    "/sub//../../secret.txt",
]


async def test_static_files_are_served_with_types(server_factory, web_root):
    server = await server_factory(web_root=str(web_root))
    status, headers, body = await async_http_get(server.port, "/")
    assert status == 200 and body == b"<h1>demo</h1>"
    assert headers["Content-Type"].startswith("text/html")
    status, headers, _ = await async_http_get(server.port, "/sub/style.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")


async def test_a_default_server_serves_the_checkouts_demo_page(server_factory):
    """No --web-root: / is clients/web/index.html and its scripts load."""
    server = await server_factory()
    status, headers, body = await async_http_get(server.port, "/")
    page = (Path(__file__).resolve().parents[1] / "clients" / "web" / "index.html").read_bytes()
    assert status == 200 and body == page
    assert headers["Content-Type"].startswith("text/html")
    for script in re.findall(rb'src="([^"]+\.js)"', page):
        status, headers, _ = await async_http_get(server.port, "/" + script.decode())
        assert status == 200 and headers["Content-Type"].startswith("text/javascript"), script


@pytest.mark.parametrize("target", TRAVERSALS)
async def test_static_files_refuse_traversal(server_factory, web_root, target):
    server = await server_factory(web_root=str(web_root))
    status, rest = await asyncio.to_thread(_raw_get, server.port, target)
    assert status in (400, 404), (target, status)
    assert b"TOP-SECRET" not in rest and b"root:" not in rest


def test_resolve_static_stays_inside_the_root(web_root):
    routes = StaticFiles(web_root)
    assert routes.resolve("/sub/style.css") == (web_root / "sub" / "style.css").resolve()
    for target in TRAVERSALS + ["/" + str(web_root.parent / "secret.txt")]:
        resolved = routes.resolve(target.split("?")[0])
        assert resolved is None or resolved.is_relative_to(web_root.resolve()), target
