"""Shared fixtures: real servers on 127.0.0.1 and a protocol-aware test client.

Servers
- ``server_factory`` (async, per test): ``await server_factory(runner=..., **config)``
  starts an in-process ``Server`` on a free port on the test's own event loop and
  waits until it is ready. ``runner`` (a Runner instance, default a fresh
  ``ToneRunner()``) and ``scheduler_options`` (extra ``SchedulerConfig`` fields)
  are optional; every other keyword is a ``ServerConfig`` field
  (``auth_tokens=("t",)``, ``send_queue_bytes=...``). All servers are closed
  after the test. The ``Server`` object is returned: ``server.port``,
  ``server.worker`` (``.stats``, ``.runner``), ``server.drain()``.
- ``tone_server``: ``await server_factory()`` with the defaults.
- ``tiny_server`` (session scope): the real model runtime with
  ``--weights tiny-random --device cpu``, in a background thread
  (``realtime.server.embedded.ServerThread``) shared by the whole test session;
  ``tiny_server.url``, ``tiny_server.port``, ``tiny_server.server``.

Client
- ``ws_connect``: ``client = await ws_connect(server_or_url, token=None,
  headers=None, path="/v1/stream")`` returns a ``WsTestClient`` that has
  already read ``hello`` (``client.hello``). ``await client.send({...})``;
  ``await client.recv()`` gives the next decoded server message or a
  ``Frame`` (header + payload); ``await client.speak_and_collect(id, text,
  **fields)`` and ``await client.collect(ids)`` return ``Transcript``s; every
  item received is checked against PROTOCOL.md's ordering rules by
  ``protocol.stream.ClientConnection`` (a violation fails the test).
All clients are closed after the test.
"""

from __future__ import annotations

import os
import tempfile

# Triton's CPU interpreter must be on before anything imports triton (torch
# may, early): tests/test_live_attention.py runs the kernels in it.
os.environ.setdefault("TRITON_INTERPRET", "1")
# Servers the tests start keep their prepared cache (--cache-dir's default) in a
# directory of this session's own, never the developer's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="realtime-test-cache-")

import asyncio
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import settings
from websockets.asyncio.client import ClientConnection, connect

from protocol import (
    Cancelled,
    Done,
    Error,
    Flushed,
    FrameHeader,
    Hello,
    Segment,
    Started,
    Words,
    is_valid_id,
)
from protocol.pcm import BYTES_PER_SAMPLE
from protocol.stream import ClientConnection as WireConnection
from protocol.stream import Kind, StreamViolation
from realtime.engine.tone import ToneRunner
from realtime.server.app import Server
from realtime.server.config import ServerConfig

# Fixtures shared by several modules live in these modules (plain imports there
# would shadow the fixture names in each test module).
pytest_plugins = ("clients_fixtures", "runtime_fixtures")

# Under CI every property test draws the same examples on every run: a red build
# then always reproduces, and nothing passes or fails by the luck of the draw.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

TIMEOUT = 10.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port: int, path: str, headers: dict[str, str] | None = None,
             timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """A plain blocking GET (run it in a thread from async tests)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


ROOT = Path(__file__).resolve().parent.parent


def start_server_process(port: int, *flags: str, log_level: str = "info") -> subprocess.Popen:
    """``python -m realtime serve --weights tone`` on ``port``, output on a pipe."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "realtime", "serve", "--weights", "tone", "--port", str(port),
         "--log-level", log_level, *flags],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def wait_ready(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until ``/readyz`` answers 200; fails with the process output if it exits."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
        try:
            if http_get(port, "/readyz", timeout=1)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise AssertionError("the server process never became ready")


async def wait_until(predicate: Any, timeout: float = 10.0) -> None:
    """Poll ``predicate()`` until it holds; fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not predicate():
        assert loop.time() < end, "condition not reached in time"
        await asyncio.sleep(0.01)


async def async_http_get(port: int, path: str, headers: dict[str, str] | None = None
                         ) -> tuple[int, dict[str, str], bytes]:
    return await asyncio.to_thread(http_get, port, path, headers)


@dataclass(frozen=True)
class Frame:
    header: FrameHeader
    payload: bytes


@dataclass
class Transcript:
    """Everything one utterance received. The ordering rules are checked by
    ``protocol.stream.ClientConnection`` as the items arrive; this keeps them."""

    id: str
    started: Started | None = None
    frames: list[Frame] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    notices: list[Error] = field(default_factory=list)  # non-terminal errors naming this id
    words: list[Words] = field(default_factory=list)  # speak.timestamps
    flushed: list[Flushed] = field(default_factory=list)
    # (kind, item) of everything received for this utterance, in order
    events: list[tuple[Kind, Any]] = field(default_factory=list)
    terminal: Done | Cancelled | Error | None = None
    after_terminal: list[Any] = field(default_factory=list)

    @property
    def audio(self) -> bytes:
        return b"".join(f.payload for f in self.frames)

    @property
    def kind(self) -> str | None:
        return None if self.terminal is None else type(self.terminal).__name__.lower()

    def audio_ms(self, fmt: str = "pcm_s16le", rate: int = 24000) -> float:
        return len(self.audio) / BYTES_PER_SAMPLE[fmt] * 1000 / rate

    def record(self, kind: Kind, item: Any) -> None:
        self.events.append((kind, item))
        if self.terminal is not None and kind is not Kind.NOTICE:
            self.after_terminal.append(item)
        elif kind is Kind.AUDIO:
            self.frames.append(item)
        elif kind is Kind.STARTED:
            self.started = item
        elif kind is Kind.SEGMENT:
            self.segments.append(item)
        elif kind is Kind.NOTICE:
            self.notices.append(item)
        elif kind is Kind.WORDS:
            self.words.append(item)
        elif kind is Kind.FLUSHED:
            self.flushed.append(item)
        elif kind is Kind.END:
            self.terminal = item
        else:
            raise AssertionError(f"unexpected {kind.value} for {self.id}: {item!r}")

    def check_done(self, fmt: str = "pcm_s16le", rate: int = 24000) -> Done:
        """Assert a complete, consistent ``done`` and return it."""
        assert isinstance(self.terminal, Done), f"expected done, got {self.terminal!r}"
        done = self.terminal
        assert done.segments == len(self.segments)
        assert done.audio_ms == pytest.approx(self.audio_ms(fmt, rate), abs=1e-6)
        assert sum(s.audio_ms for s in self.segments) == pytest.approx(done.audio_ms, abs=1e-6)
        if self.frames:
            assert self.frames[-1].header.segment_end
        return done


class WsTestClient:
    """A thin protocol-aware client over ``websockets`` for tests: every item
    received passes ``protocol.stream.ClientConnection``'s checks (a broken
    ordering rule fails the test) and lands in its utterance's transcript."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.wire = WireConnection()
        self.hello: Hello | None = None
        self.transcripts: dict[str, Transcript] = {}
        self.connection_errors: list[Error] = []

    async def send(self, message: dict[str, Any] | str | bytes) -> None:
        if isinstance(message, dict):
            msg_id = message.get("id")
            if message.get("type") == "speak" and is_valid_id(msg_id) \
                    and not self.wire.active(msg_id):
                self.wire.opened(msg_id)
                self.transcripts.pop(msg_id, None)
            await self.ws.send(orjson.dumps(message).decode())
        else:
            await self.ws.send(message)

    async def recv(self, timeout: float = TIMEOUT) -> Any:
        """The next server message (decoded) or ``Frame``; records it too."""
        raw = await asyncio.wait_for(self.ws.recv(), timeout)
        try:
            received = self.wire.receive(raw)
        except StreamViolation as exc:
            raise AssertionError(f"protocol violation: {exc}") from None
        item: Any = received.message
        if received.kind is Kind.AUDIO:
            item = Frame(item.header, bytes(item.payload))
        if received.kind is Kind.HELLO:
            self.hello = item
        elif received.kind is Kind.CONNECTION_ERROR:
            self.connection_errors.append(item)
        elif received.id is not None and (received.kind is not Kind.UNKNOWN
                                          or received.id in self.transcripts):
            self.transcript(received.id).record(received.kind, item)
        return item

    def transcript(self, msg_id: str) -> Transcript:
        if msg_id not in self.transcripts:
            self.transcripts[msg_id] = Transcript(msg_id)
        return self.transcripts[msg_id]

    async def collect(self, ids: Iterable[str], timeout: float = TIMEOUT) -> dict[str, Transcript]:
        """Receive until every id in ``ids`` has its terminal message."""
        wanted = list(ids)
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while any(self.transcript(i).terminal is None for i in wanted):
            await self.recv(timeout=max(end - loop.time(), 0.01))
        return {i: self.transcripts[i] for i in wanted}

    async def speak_and_collect(self, msg_id: str, text: str, timeout: float = TIMEOUT,
                                **fields: Any) -> Transcript:
        await self.send({"type": "speak", "id": msg_id, "text": text, **fields})
        return (await self.collect([msg_id], timeout))[msg_id]

    async def cancel_once_started(self, msg_id: str, text: str, timeout: float = 60,
                                  **fields: Any) -> Transcript:
        """Speak ``text``, cancel it as soon as it has started; its transcript."""
        await self.send({"type": "speak", "id": msg_id, "text": text, **fields})
        await self.next_message(Started, timeout=timeout)
        await self.send({"type": "cancel", "id": msg_id})
        return (await self.collect([msg_id], timeout))[msg_id]

    async def next_message(self, kind: type, timeout: float = TIMEOUT) -> Any:
        """Receive until a message of ``kind`` arrives; return it."""
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while True:
            item = await self.recv(timeout=max(end - loop.time(), 0.01))
            if isinstance(item, kind):
                return item

    async def close(self) -> None:
        await self.ws.close()


@pytest.fixture
async def server_factory():
    servers: list[Server] = []

    async def start(runner: Any = None, scheduler_options: dict[str, Any] | None = None,
                    **config: Any) -> Server:
        config.setdefault("port", 0)
        config.setdefault("weights", "tone")
        cfg = ServerConfig(**config)
        if runner is None and cfg.weights == "tone":
            runner = ToneRunner()
        factory = (lambda: runner) if runner is not None else None
        server = Server(cfg, factory, scheduler_options=scheduler_options)
        servers.append(server)
        await server.start()
        await asyncio.wait_for(server.wait_ready(), 120)
        return server

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def tone_server(server_factory):
    return await server_factory()


@pytest.fixture(scope="session")
def tiny_server():
    from realtime.server.embedded import ServerThread

    # Tests of the runtime's audio path, not of admission: queue-only, so that
    # concurrent test utterances are not refused on a CPU that cannot keep
    # even one stream in real time (capacity admission would take one).
    thread = ServerThread(ServerConfig(port=0, weights="tiny-random", device="cpu",
                                       batch_sizes=(1, 2, 4), kv_buckets=(256, 512),
                                       max_slots=8, admission="queue-only"))
    thread.start(timeout=180)
    yield thread
    thread.stop()


@pytest.fixture
async def ws_connect():
    clients: list[WsTestClient] = []

    async def open_client(target: Any, token: str | None = None,
                          headers: dict[str, str] | None = None, path: str = "/v1/stream",
                          read_hello: bool = True, **kwargs: Any) -> WsTestClient:
        url = target if isinstance(target, str) else f"ws://127.0.0.1:{target.port}{path}"
        extra = dict(headers or {})
        if token is not None:
            extra["Authorization"] = f"Bearer {token}"
        ws = await connect(url, additional_headers=extra, open_timeout=TIMEOUT,
                           max_size=None, **kwargs)
        client = WsTestClient(ws)
        clients.append(client)
        if read_hello:
            hello = await client.recv()
            assert isinstance(hello, Hello)
        return client

    yield open_client
    for client in clients:
        try:
            await asyncio.wait_for(client.ws.close(), 2)
        except (TimeoutError, OSError):
            pass


@pytest.fixture(scope="session")
def tiny_vocoder_models():
    """A tiny random ChatTTS Decoder and Vocos of the real depth (bench.vocoder)."""
    import torch

    from bench.vocoder import random_models
    torch.manual_seed(0)
    return random_models(tiny=True, seed=0)


@pytest.fixture(scope="session")
def vocoder_hidden(tiny_vocoder_models):
    """300 steps of unit-normal hidden states for those models."""
    import torch

    from bench.vocoder import hidden_dim
    return torch.randn(300, hidden_dim(tiny_vocoder_models[0]), generator=torch.Generator().manual_seed(1))
