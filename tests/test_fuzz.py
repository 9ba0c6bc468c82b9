"""Protocol fuzzing against a live server (hypothesis, bounded).

A module-scoped server (``ToneRunner``, its own thread and event loop) gets
random interleavings of speak/append/flush/cancel over a few ids on two
connections, mixed with garbage: random text frames, valid messages with one
field mutated to a random JSON value, binary frames. After every example:

- the server still answers a new connection and ``/healthz``;
- every speak of the valid id pool got exactly one terminal message (done,
  cancelled or error), ``started`` at most once and before any audio;
- frames only for started streams, ``seq`` contiguous from 0, none after the
  terminal message;
- once the clients leave, the server holds no utterance, job or slot;
- across the module, resident memory stays bounded.

Every item is checked by ``protocol.stream.ClientConnection``, which knows
which errors end an utterance; mutated messages use their own id pool, so the
terminal count of the valid pool's speaks stays exact.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import orjson
import psutil
import pytest
from conftest import http_get
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from protocol import is_valid_id
from protocol.stream import ClientConnection, Kind, StreamViolation
from realtime.engine.tone import ToneRunner
from realtime.server.config import ServerConfig
from realtime.server.embedded import ServerThread

IDS = ("a", "b", "c")
MUTANT_IDS = ("m1", "m2")
MAX_EXAMPLES = 40


@pytest.fixture(scope="module")
def live():
    thread = ServerThread(ServerConfig(port=0, weights="tone", max_active=4, max_text_chars=400),
                          lambda: ToneRunner(step_seconds=0.0005, codes_per_char=0.3))
    thread.start(timeout=60)
    rss: list[int] = []  # sampled after every example
    yield thread, rss
    thread.stop()


RSS_WARMUP = 5  # examples before the baseline: imports, first allocations, caches


# -- strategies -------------------------------------------------------------------------------

words = st.sampled_from(["hello", "world", "FAIL", "OOM", "one", "two.", "three!", "ok?",
                         "你好。", "", " ", "\n", "...", "x" * 40])
texts = st.lists(words, max_size=6).map(" ".join)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**40, 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=6)


@st.composite
def speak(draw, msg_id: str) -> dict[str, Any]:
    message: dict[str, Any] = {"type": "speak", "id": msg_id, "text": draw(texts)}
    optional = {
        "final": st.booleans(),
        "lane": st.sampled_from(["interactive", "background"]),
        "format": st.sampled_from(["pcm_s16le", "pcm_f32le", "pcm_mulaw"]),
        "sample_rate": st.sampled_from([8000, 16000, 24000, 48000]),
        "frame_ms": st.integers(10, 1000),
        "chunking": st.sampled_from(["sentence", "token"]),
        "voice": st.sampled_from(["default", "alice", "seed:7"]),
        "params": st.fixed_dictionaries({}, optional={"seed": st.integers(0, 100),
                                                      "temperature": st.floats(0.1, 1.0)}),
    }
    for name, strategy in optional.items():
        if draw(st.booleans()):
            message[name] = draw(strategy)
    if message.get("lane") == "background" and draw(st.booleans()):
        message["deadline_ms"] = draw(st.integers(1, 120_000))
    return message


@st.composite
def valid_message(draw, pool=IDS) -> dict[str, Any]:
    msg_id = draw(st.sampled_from(pool))
    kind = draw(st.sampled_from(["speak", "speak", "append", "flush", "cancel"]))
    if kind == "speak":
        return draw(speak(msg_id))
    if kind == "append":
        return {"type": "append", "id": msg_id, "text": draw(texts), "final": draw(st.booleans())}
    return {"type": kind, "id": msg_id}


@st.composite
def mutant(draw) -> dict[str, Any]:
    message = dict(draw(valid_message(MUTANT_IDS)))
    key = draw(st.sampled_from(sorted(message) + ["extra", "type"]))
    if key != "id":
        message[key] = draw(json_values)
    return message


garbage = st.one_of(
    st.text(max_size=40),
    st.binary(max_size=20),
    st.just("{"), st.just("[]"), st.just("null"), st.just('{"type":"speak"}'),
    json_values.map(lambda v: orjson.dumps(v).decode()),
)

action = st.one_of(
    st.tuples(st.integers(0, 1), valid_message(), st.sampled_from([0.0, 0.0, 0.002])),
    st.tuples(st.integers(0, 1), mutant(), st.just(0.0)),
    st.tuples(st.integers(0, 1), garbage, st.just(0.0)),
)


# -- one client's bookkeeping ------------------------------------------------------------------


@dataclass
class Utt:
    id: str
    terminals: int = 0


class Tracker:
    """Client-side model of one connection. ``protocol.stream.ClientConnection``
    checks every item against the ordering rules (mutant utterances too);
    this counts the terminal messages of the valid id pool's speaks."""

    def __init__(self) -> None:
        self.wire = ClientConnection()
        self.active: dict[str, Utt] = {}  # id -> its utterance still waiting for a terminal
        self.all: list[Utt] = []
        self.mutants: set[str] = set()  # mutant ids open on the wire
        self.problems: list[str] = []

    def sent(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("type") != "speak":
            return
        msg_id = message.get("id")
        if not is_valid_id(msg_id) or self.wire.active(msg_id):
            return  # the server refuses it without ending anything: a duplicate or no id
        self.wire.opened(msg_id)
        if msg_id in IDS:
            utt = Utt(msg_id)
            self.active[msg_id] = utt
            self.all.append(utt)
        else:
            self.mutants.add(msg_id)

    def received(self, raw: str | bytes) -> None:
        try:
            item = self.wire.receive(raw)
        except StreamViolation as exc:
            self.problems.append(str(exc))
            self.active.pop(exc.id, None)
            self.mutants.discard(exc.id)
            return
        if item.kind is Kind.END:
            utt = self.active.pop(item.id, None)
            if utt is not None:
                utt.terminals += 1
            self.mutants.discard(item.id)
        elif item.kind is Kind.UNKNOWN and item.id in IDS:
            self.problems.append(f"{type(item.message).__name__} for {item.id}, which is not active")

    def check(self) -> None:
        assert not self.problems, self.problems
        for utt in self.all:
            assert utt.terminals == 1, f"{utt.id}: {utt.terminals} terminal messages"


# -- the property ---------------------------------------------------------------------------------


async def _drive(url: str, actions: list[tuple[int, Any, float]]) -> list[Tracker]:
    sockets = [await connect(url, max_size=None, open_timeout=5) for _ in range(2)]
    trackers = [Tracker(), Tracker()]
    for ws, tracker in zip(sockets, trackers):
        tracker.received(await ws.recv())  # hello

    async def read(i: int) -> None:
        try:
            async for raw in sockets[i]:
                trackers[i].received(raw)
        except ConnectionClosed:
            pass

    readers = [asyncio.create_task(read(i)) for i in range(2)]
    for conn, message, pause in actions:
        if isinstance(message, dict):
            trackers[conn].sent(message)
            payload: str | bytes = orjson.dumps(message).decode()
        else:
            payload = message
        await sockets[conn].send(payload)
        if pause:
            await asyncio.sleep(pause)
    # End whatever is still running: close streamed input, then cancel.
    for i, ws in enumerate(sockets):
        for msg_id in [*trackers[i].active, *trackers[i].mutants]:
            await ws.send(orjson.dumps({"type": "cancel", "id": msg_id}).decode())
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while any(t.active or t.mutants for t in trackers) and loop.time() < end:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.02)  # anything that would (wrongly) follow a terminal
    for ws in sockets:
        await ws.close()
    for task in readers:
        await task
    return trackers


def _holdings(thread: ServerThread) -> dict[str, int]:
    async def snapshot() -> dict[str, int]:
        s = thread.server
        return {"utterances": s.active_utterances, "connections": s.connection_count,
                "jobs": len(s.worker._jobs), "slots": s.worker.scheduler.active_slots,
                "runner_slots": s.worker.runner.slots_in_use}

    for _ in range(100):
        held = thread.call(snapshot)
        if not any(held.values()):
            return held
        asyncio.run(asyncio.sleep(0.02))
    return held


@settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(actions=st.lists(action, min_size=1, max_size=25))
def test_live_server_survives_random_sessions(live, actions):
    thread, rss = live
    trackers = asyncio.run(_drive(thread.url, actions))
    for tracker in trackers:
        tracker.check()
    held = _holdings(thread)
    assert not any(held.values()), held
    assert http_get(thread.port, "/healthz")[0] == 200
    rss.append(psutil.Process().memory_info().rss)
    if len(rss) > RSS_WARMUP:
        growth_mb = (rss[-1] - rss[RSS_WARMUP - 1]) / 2**20
        assert growth_mb < 64, f"resident memory grew {growth_mb:.1f} MB since example {RSS_WARMUP}"


def test_many_connections_interleaving_utterances(live):
    """A fixed heavy interleaving: 6 connections x 4 streamed utterances each."""
    thread, _ = live

    async def one(k: int) -> Tracker:
        async with connect(thread.url, max_size=None) as ws:
            tracker = Tracker()
            tracker.received(await ws.recv())  # hello
            reader = asyncio.create_task(_read_into(ws, tracker))
            for msg_id in IDS:
                message = {"type": "speak", "id": msg_id, "text": "Hello there", "final": False,
                           "chunking": "token" if k % 2 else "sentence"}
                tracker.sent(message)
                await ws.send(orjson.dumps(message).decode())
            for n in range(5):
                for msg_id in IDS:
                    await ws.send(orjson.dumps({"type": "append", "id": msg_id,
                                                "text": f" part {n}.", "final": n == 4}).decode())
                if k % 3 == 0:
                    await ws.send(orjson.dumps({"type": "cancel", "id": "b"}).decode())
            end = asyncio.get_running_loop().time() + 10
            while tracker.active and asyncio.get_running_loop().time() < end:
                await asyncio.sleep(0.01)
            await ws.close()
            await reader
            return tracker

    async def all_of() -> list[Tracker]:
        return await asyncio.gather(*(one(k) for k in range(6)))

    for tracker in asyncio.run(all_of()):
        tracker.check()
        assert len(tracker.all) == 3
    assert not any(_holdings(thread).values())


async def _read_into(ws, tracker: Tracker) -> None:
    try:
        async for raw in ws:
            tracker.received(raw)
    except ConnectionClosed:
        pass
