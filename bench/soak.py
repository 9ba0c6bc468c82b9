"""``python -m bench soak``: a bounded loopback soak of the whole server.

It starts its own server in a background thread (the synthetic ``ToneRunner``
by default, ``--weights tiny-random`` for the real runtime on CPU), then
drives it from several WebSocket connections with a Poisson stream of
utterances sized to ``--load`` of the model's capacity: both lanes, streamed
input (speak + append + flush), cancellations, and connections that vanish
mid-stream. Every message is checked as it arrives.

It reports, and the last stdout line is one JSON object with:

- ``lost``: utterances sent on a connection that stayed open that never got a
  terminal message (must be 0);
- ``terminal_violations``: two terminals, audio before ``started`` or after the
  terminal, a ``seq`` gap or repeat, an unexpected error code (must be 0);
- ``leaked_slots``: anything the server still holds once every client has
  gone: active utterances, worker jobs, scheduler and runner slots (must be 0);
- ``rss_growth_mb``: resident memory growth from after warm-up to the end.

The exit status is 0 when the three counts are zero, else 1.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson
import psutil
from websockets.asyncio.client import ClientConnection as WsConnection
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from clients.probe_report import percentile
from protocol import Cancelled, Done, Error
from protocol.stream import ClientConnection, Kind, StreamViolation
from realtime.server.config import ServerConfig
from realtime.server.embedded import ServerThread
from realtime.speech.script import estimate_tokens

log = logging.getLogger(__name__)

CORPUS = Path(__file__).resolve().parent.parent / "examples" / "corpus.txt"
_FALLBACK_SENTENCES = (
    "Good morning, how can I help you today?",
    "Your order has shipped and should arrive on Thursday.",
    "Please hold the line while I check that for you.",
    "The meeting moved to three o'clock in the small room.",
)
# Errors a well-behaved client can legitimately get under load.
_EXPECTED_ERRORS = frozenset({"overloaded", "deadline_unmeetable", "too_many_active"})
# The tone runner's codes per character (the soak builds it, so it knows).
_TONE_CODES_PER_CHAR = 0.25


@dataclass
class SoakOptions:
    utterances: int = 1000
    load: float = 0.8
    weights: str = "tone"
    connections: int = 16
    background_share: float = 0.3
    stream_share: float = 0.2
    cancel_share: float = 0.1
    disconnect_share: float = 0.02
    tone_step_ms: float = 2.0
    seed: int = 0
    grace_s: float = 30.0


@dataclass
class Record:
    """What one utterance received, checked as it arrives."""

    id: str
    lane: str
    sent_at: float
    started: bool = False
    frames: int = 0
    terminals: int = 0
    outcome: str | None = None  # done | cancelled | <error code>
    vanished: bool = False  # its connection was dropped on purpose
    violations: list[str] = field(default_factory=list)
    started_event: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def open(self) -> bool:
        return self.terminals == 0 and not self.vanished


@dataclass
class SoakReport:
    utterances: int
    load: float
    weights: str
    wall_s: float
    done: int
    cancelled: int
    refused: int
    errors: dict[str, int]
    vanished: int
    lost: int
    terminal_violations: int
    leaked_slots: int
    rss_growth_mb: float
    model_busy: float  # share of wall time the model spent in steps
    first_audio_p50_ms: float | None
    first_audio_p95_ms: float | None
    violation_examples: list[str]

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.terminal_violations == 0 and self.leaked_slots == 0


# -- one client connection -----------------------------------------------------------------


class Client:
    """A WebSocket connection that records every utterance it carries."""

    def __init__(self, ws: WsConnection) -> None:
        self.ws = ws
        self.wire = ClientConnection()  # the ordering rules, checked as items arrive
        self.gone = False  # dropped on purpose (vanish)
        self.records: dict[str, Record] = {}
        self.connection_errors: list[str] = []
        self.first_audio_ms: list[float] = []
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def open(cls, url: str) -> Client:
        ws = await connect(url, max_size=None, open_timeout=10)
        client = cls(ws)  # its reader takes the hello
        return client

    @property
    def active(self) -> int:
        return sum(1 for r in self.records.values() if r.open)

    async def send(self, message: dict) -> bool:
        """Send one message; False when the connection is gone (a speak that
        never left counts as vanished with its connection, not as lost)."""
        if message["type"] == "speak":
            self.wire.opened(message["id"])
        try:
            await self.ws.send(orjson.dumps(message).decode())
            return True
        except ConnectionClosed:
            record = self.records.get(message["id"])
            if message["type"] == "speak" and record is not None and record.terminals == 0:
                record.vanished = True
            return False

    def vanish(self) -> None:
        """Drop the TCP connection without a close handshake. Utterances begun
        on it later (their task picked it just before) vanish with it."""
        self.gone = True
        for record in self.records.values():
            if record.terminals == 0:
                record.vanished = True
        self.ws.transport.abort()

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                self._receive(raw)
        except ConnectionClosed:
            pass

    def _receive(self, raw: str | bytes) -> None:
        try:
            item = self.wire.receive(raw)
        except StreamViolation as exc:
            record = self.records.get(exc.id) if exc.id is not None else None
            if record is None:
                self.connection_errors.append(str(exc))
            else:
                record.violations.append(str(exc))
            return
        record = self.records.get(item.id) if item.id is not None else None
        if item.kind is Kind.CONNECTION_ERROR:
            self.connection_errors.append(f"connection-level {item.message.code}")  # type: ignore[union-attr]
        elif record is None or item.kind is Kind.UNKNOWN:
            if item.kind is not Kind.HELLO:
                self.connection_errors.append(f"{item.kind.value} item for unknown id {item.id}")
        elif item.kind is Kind.STARTED:
            record.started = True
            record.started_event.set()
        elif item.kind is Kind.AUDIO:
            if record.frames == 0:
                self.first_audio_ms.append((time.monotonic() - record.sent_at) * 1000)
            record.frames += 1
        elif item.kind is Kind.NOTICE:
            code = item.message.code  # type: ignore[union-attr]
            if code != "unknown_id":  # a cancel racing the end is fine
                record.violations.append(f"unexpected {code}")
        elif item.kind is Kind.END:
            record.terminals += 1
            message = item.message
            if isinstance(message, Done):
                record.outcome = "done"
            elif isinstance(message, Cancelled):
                record.outcome = "cancelled"
            elif isinstance(message, Error):
                record.outcome = message.code
                if message.code not in _EXPECTED_ERRORS:
                    record.violations.append(f"error {message.code}: {message.message}")


# -- the load ------------------------------------------------------------------------------------


def sentences() -> list[str]:
    try:
        lines = [s.strip() for s in CORPUS.read_text(encoding="utf-8").splitlines()]
        return [s for s in lines if s] or list(_FALLBACK_SENTENCES)
    except OSError:
        return list(_FALLBACK_SENTENCES)


def expected_codes(text: str, weights: str) -> float:
    if weights == "tone":
        return max(4.0, len(text) * _TONE_CODES_PER_CHAR)
    return float(estimate_tokens(text))


def arrival_rate(options: SoakOptions, warmup: dict[tuple[int, int], float],
                 mean_codes: float) -> float:
    """Utterances per second that keep the model ``options.load`` busy.

    One interactive code costs a batch-1 step; background codes share the
    largest batch's step. Step times come from the runner's warm-up table
    (smallest KV bucket).
    """
    bucket = min(k for _, k in warmup)
    sizes = sorted(b for b, k in warmup if k == bucket)
    step1 = warmup[(sizes[0], bucket)]
    big = sizes[-1]
    step_big = warmup[(big, bucket)]
    share = options.background_share
    seconds_per_code = (1 - share) * step1 + share * step_big / big
    return options.load / (seconds_per_code * mean_codes)


class Soak:
    def __init__(self, options: SoakOptions, thread: ServerThread) -> None:
        self.options = options
        self.thread = thread
        self.rng = random.Random(options.seed)
        self.clients: list[Client] = []
        self.retired: list[Client] = []
        self.tasks: set[asyncio.Task] = set()
        self.corpus = sentences()
        self.first_audio_ms: list[float] = []
        self.connection_errors: list[str] = []

    async def run(self) -> list[Record]:
        o = self.options
        url = self.thread.url
        self.clients = [await Client.open(url) for _ in range(o.connections)]
        texts = [self._text() for _ in range(o.utterances)]
        mean = sum(expected_codes(t, o.weights) for t in texts) / len(texts)
        rate = arrival_rate(o, self.thread.server.worker.warmup_table, mean)
        log.info("soak: %d utterances at %.1f/s (mean %.0f codes)", o.utterances, rate, mean)
        for n, text in enumerate(texts):
            await asyncio.sleep(self.rng.expovariate(rate))
            client = await self._client_with_room()
            task = asyncio.create_task(self._utterance(client, f"u{n}", text))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        if self.tasks:
            await asyncio.gather(*list(self.tasks))
        await self._wait_terminals(o.grace_s)
        everyone = self.clients + self.retired
        for client in self.clients:
            await client.ws.close()
        for client in everyone:
            client.reader.cancel()
        self.first_audio_ms = sorted(ms for c in everyone for ms in c.first_audio_ms)
        self.connection_errors = [e for c in everyone for e in c.connection_errors]
        return [r for c in everyone for r in c.records.values()]

    def _text(self) -> str:
        return " ".join(self.rng.choice(self.corpus) for _ in range(self.rng.randint(1, 3)))

    async def _client_with_room(self) -> Client:
        limit = self.thread.config.max_active
        while True:
            roomy = [c for c in self.clients if c.active < limit]
            if roomy:
                return self.rng.choice(roomy)
            await asyncio.sleep(0.01)

    async def _utterance(self, client: Client, msg_id: str, text: str) -> None:
        o, rng = self.options, self.rng
        lane = "background" if rng.random() < o.background_share else "interactive"
        record = Record(msg_id, lane, time.monotonic(), vanished=client.gone)
        client.records[msg_id] = record
        speak = {"type": "speak", "id": msg_id, "lane": lane,
                 "chunking": rng.choice(("sentence", "token")),
                 "format": rng.choice(("pcm_s16le", "pcm_f32le", "pcm_mulaw")),
                 "sample_rate": rng.choice((24000, 16000, 48000))}
        if rng.random() < o.stream_share:
            await self._streamed(client, speak, text)
        else:
            await client.send({**speak, "text": text})
        roll = rng.random()
        if roll < o.cancel_share + o.disconnect_share:
            # Half of them strike the moment the utterance starts (surely still
            # running, whatever the runner's speed), the rest at a random point.
            delay = 0.0 if rng.random() < 0.5 else rng.uniform(0.0, 0.3)
            try:
                await asyncio.wait_for(record.started_event.wait(), 5.0)
            except TimeoutError:
                pass  # refused or stuck: the terminal checks report it
            await asyncio.sleep(delay)
            if roll < o.cancel_share:
                if record.terminals == 0:
                    await client.send({"type": "cancel", "id": msg_id})
            else:
                await self._replace(client)

    async def _streamed(self, client: Client, speak: dict, text: str) -> None:
        """An LLM-like token stream: speak(final=false), appends, a flush, final."""
        words = text.split(" ")
        cut = max(1, len(words) // 3)
        await client.send({**speak, "text": " ".join(words[:cut]) + " ", "final": False})
        rest = words[cut:]
        for i, word in enumerate(rest):
            await asyncio.sleep(self.rng.uniform(0.0, 0.01))
            last = i == len(rest) - 1
            await client.send({"type": "append", "id": speak["id"], "text": word + " ",
                               "final": last})
            if not last and self.rng.random() < 0.05:
                await client.send({"type": "flush", "id": speak["id"]})
        if not rest:
            await client.send({"type": "append", "id": speak["id"], "text": "", "final": True})

    async def _replace(self, client: Client) -> None:
        if client not in self.clients:
            return
        self.clients.remove(client)
        client.vanish()
        self.retired.append(client)
        self.clients.append(await Client.open(self.thread.url))

    async def _wait_terminals(self, grace_s: float) -> None:
        end = time.monotonic() + grace_s
        while time.monotonic() < end:
            if not any(r.open for c in self.clients + self.retired for r in c.records.values()):
                return
            await asyncio.sleep(0.05)


# -- server-side checks -------------------------------------------------------------------------


def server_holdings(thread: ServerThread, timeout: float = 10.0) -> dict[str, int]:
    """What the server still holds; waits up to ``timeout`` for it to reach zero."""

    async def snapshot() -> dict[str, int]:
        server = thread.server
        assert server is not None
        worker, runner = server.worker, server.worker.runner
        sched = worker.scheduler
        held = {
            "active_utterances": server.active_utterances,
            "connections": server.connection_count,
            "worker_jobs": len(worker._jobs),
            "scheduler_slots": sched.active_slots if sched is not None else 0,
        }
        if hasattr(runner, "slots_in_use"):
            held["runner_slots_in_use"] = int(runner.slots_in_use)
        return held

    end = time.monotonic() + timeout
    while True:
        held = thread.call(snapshot)
        if not any(held.values()) or time.monotonic() > end:
            return held
        time.sleep(0.1)


def model_seconds(thread: ServerThread) -> float:
    server = thread.server
    assert server is not None
    value = server.metrics.registry.get_sample_value("chattts_step_seconds_sum")
    return float(value or 0.0)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def run_soak(options: SoakOptions) -> SoakReport:
    """Start a server, drive it, check everything; returns the report."""
    config = ServerConfig(port=0, weights=options.weights, device="cpu",
                          tone_step_ms=options.tone_step_ms, log_level="warning",
                          batch_sizes=(1, 2, 4, 8), max_slots=16,
                          default_deadline_ms=120_000)
    factory = None
    if options.weights == "tone":
        from realtime.engine.tone import ToneRunner

        def factory() -> ToneRunner:
            return ToneRunner(step_seconds=options.tone_step_ms / 1000.0,
                              codes_per_char=_TONE_CODES_PER_CHAR, max_slots=config.max_slots,
                              batch_sizes=config.batch_sizes, kv_buckets=config.kv_buckets)
    elif options.weights == "tiny-random":
        config = ServerConfig(**{**asdict(config), "batch_sizes": (1, 2, 4),
                                 "kv_buckets": (256, 512), "max_slots": 8})
    thread = ServerThread(config, factory)
    thread.start(timeout=300)
    try:
        process = psutil.Process()
        gc.collect()
        rss_before = process.memory_info().rss
        busy_before = model_seconds(thread)
        started = time.monotonic()
        soak = Soak(options, thread)
        records = asyncio.run(soak.run())
        wall = time.monotonic() - started
        busy = model_seconds(thread) - busy_before
        held = server_holdings(thread)
        gc.collect()
        rss_after = process.memory_info().rss
    finally:
        thread.stop()
    return _report(options, records, soak, held, wall, busy, rss_after - rss_before)


def _report(options: SoakOptions, records: list[Record], soak: Soak, held: dict[str, int],
            wall: float, busy: float, rss_delta: int) -> SoakReport:
    errors: dict[str, int] = {}
    for r in records:
        if r.outcome not in (None, "done", "cancelled"):
            errors[r.outcome] = errors.get(r.outcome, 0) + 1
    violations = [f"{r.id}: {v}" for r in records for v in r.violations]
    violations += soak.connection_errors
    fa = soak.first_audio_ms
    return SoakReport(
        utterances=len(records), load=options.load, weights=options.weights,
        wall_s=round(wall, 2),
        done=sum(r.outcome == "done" for r in records),
        cancelled=sum(r.outcome == "cancelled" for r in records),
        refused=sum(1 for r in records if r.outcome in _EXPECTED_ERRORS and not r.started),
        errors=errors,
        vanished=sum(r.vanished and r.terminals == 0 for r in records),
        lost=sum(1 for r in records if r.open),
        terminal_violations=len(violations),
        leaked_slots=sum(v for k, v in held.items() if k != "connections") + held["connections"],
        rss_growth_mb=round(rss_delta / 2**20, 1),
        model_busy=round(busy / wall, 3) if wall else 0.0,
        first_audio_p50_ms=_rounded(percentile(fa, 50)), first_audio_p95_ms=_rounded(percentile(fa, 95)),
        violation_examples=violations[:5],
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench soak", description=__doc__.split("\n")[0])
    d = SoakOptions()
    p.add_argument("--utterances", type=int, default=d.utterances)
    p.add_argument("--load", type=float, default=d.load, help="share of model capacity")
    p.add_argument("--weights", default=d.weights, choices=("tone", "tiny-random"))
    p.add_argument("--connections", type=int, default=d.connections)
    p.add_argument("--background-share", type=float, default=d.background_share)
    p.add_argument("--stream-share", type=float, default=d.stream_share)
    p.add_argument("--cancel-share", type=float, default=d.cancel_share)
    p.add_argument("--disconnect-share", type=float, default=d.disconnect_share)
    p.add_argument("--tone-step-ms", type=float, default=d.tone_step_ms)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--grace-s", type=float, default=d.grace_s,
                   help="how long to wait for the last terminals")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    options = SoakOptions(**vars(args))
    report = run_soak(options)
    print(f"soak: {report.utterances} utterances in {report.wall_s} s at load {report.load} "
          f"({report.weights}); model busy {report.model_busy:.0%}")
    print(f"  done {report.done}, cancelled {report.cancelled}, refused {report.refused}, "
          f"vanished with their connection {report.vanished}, errors {report.errors}")
    print(f"  first audio p50 {report.first_audio_p50_ms} ms, p95 {report.first_audio_p95_ms} ms")
    print(f"  lost {report.lost}, terminal violations {report.terminal_violations}, "
          f"leaked slots {report.leaked_slots}, RSS growth {report.rss_growth_mb} MB")
    for example in report.violation_examples:
        print(f"  violation: {example}")
    print(json.dumps({**asdict(report), "ok": report.ok}))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
