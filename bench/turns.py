"""Streamed-turn burst bench: a held place per accepted turn vs none, through the real server.

    python -m bench turns [--rounds N] [--burst X] [--out DIR]

A voice assistant opens its turn (``speak`` with ``final:false``) before the
LLM has written a sentence; the sentences follow with ``append``. This bench
starts two servers as subprocesses on 127.0.0.1, alike but for
``--stream-reservation-s`` (10: an accepted turn holds a place in the
interactive lane's capacity until its first sentence; 0: it counts only once
the sentence comes), with the tone runner at a flat, GPU-like step (10 ms at
any batch, 16 KV slots, speech-like lengths), and offers both the same
bursts: ``burst`` x the lane's capacity turns opened together, each turn's
first sentence after a random LLM delay (0.3-0.8 s), its second 0.3 s later
(``final:true``). Rounds alternate which server goes first.

Per round and server: turns admitted and refused (their retry hints), and
among the admitted: first audio after the first sentence was sent (p50, p99),
turns whose playback stalled (a simulated player from the first frame,
``clients.playback``), and good turns (done, no stall, first audio within
``GOOD_FIRST_AUDIO_S`` of the sentence). Writes ``turns_bench.json`` to
``--out`` and, last, one JSON line: per mode the medians over rounds of
``admitted``, ``stalled_share`` (stalled over admitted), ``ttfa_p99_ms`` and
``good``, and the CPU's name. Target: no stalled turn with the hold.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from websockets.asyncio.client import ClientConnection, connect

from bench.arrivals import Audio, arrivals
from bench.overload_servers import COMMON, ServerProcess, cpu_name
from clients.playback import simulate_playback
from clients.probe_report import percentile
from protocol import Done, Error, Started

MODES = {"hold": "10", "no-hold": "0"}  # --stream-reservation-s
SERVER_ARGS = ["--weights", "tone", "--tone-step-ms", "10", "--tone-codes-per-char", "3.4",
               "--max-slots", "16", "--batch-sizes", "1,2,4,8,16", *COMMON]
FIRST = "Good morning, how can I help you today?"
SECOND = " Your order has shipped and should arrive on Thursday."
GOOD_FIRST_AUDIO_S = 1.0
PER_CONNECTION = 8  # the server's default --max-active


@dataclass
class Turn:
    """One turn as the client saw it (monotonic seconds)."""

    opened: float
    answered: float | None = None
    admitted: bool = False
    sentence_at: float | None = None
    first_audio: float | None = None
    outcome: str | None = None
    retry_after_ms: int | None = None
    frames: list[tuple[float, float]] = field(default_factory=list)

    @property
    def ttfa_s(self) -> float | None:
        if self.first_audio is None or self.sentence_at is None:
            return None
        return self.first_audio - self.sentence_at

    @property
    def stalled(self) -> bool:
        return bool(self.frames) and simulate_playback(self.frames).underruns > 0


class Client:
    """One connection: opens turns, feeds their text, records what comes back."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.turns: dict[str, Turn] = {}
        self.by_stream: dict[int, Turn] = {}
        self.answered = asyncio.Event()

    async def send(self, message: dict) -> None:
        await self.ws.send(orjson.dumps(message).decode())

    async def read(self) -> None:
        async for now, item in arrivals(self.ws):
            if isinstance(item, Audio):
                turn = self.by_stream.get(item.stream)
                if turn is not None:
                    turn.first_audio = turn.first_audio or now
                    turn.frames.append((now, item.seconds))
                continue
            turn = self.turns.get(getattr(item, "id", None) or "")
            if turn is None:
                continue
            if isinstance(item, Started):
                turn.admitted, turn.answered = True, now
                self.by_stream[item.stream] = turn
            elif isinstance(item, (Done, Error)):
                turn.outcome = "done" if isinstance(item, Done) else item.code
                if isinstance(item, Error):
                    turn.retry_after_ms = item.retry_after_ms
                    turn.answered = turn.answered or now
            self.answered.set()


async def burst(url: str, count: int, grace_s: float, seed: int) -> list[Turn]:
    """``count`` turns opened together; each admitted one speaks two sentences."""
    clients = []
    for _ in range(-(-count // PER_CONNECTION)):
        ws = await connect(url, max_size=None, compression=None, open_timeout=30)
        await ws.recv()  # hello
        clients.append(Client(ws))
    readers = [asyncio.create_task(c.read()) for c in clients]
    rng = random.Random(seed)

    async def turn(k: int) -> Turn:
        client, msg_id = clients[k // PER_CONNECTION], f"t{k}"
        rec = client.turns[msg_id] = Turn(time.monotonic())
        await client.send({"type": "speak", "id": msg_id, "text": "", "final": False,
                           "chunking": "token", "params": {"seed": 1}})
        while rec.answered is None:
            client.answered.clear()
            await client.answered.wait()
        if not rec.admitted:
            return rec
        await asyncio.sleep(rng.uniform(0.3, 0.8))  # the LLM's first sentence
        rec.sentence_at = time.monotonic()
        await client.send({"type": "append", "id": msg_id, "text": FIRST})
        await asyncio.sleep(0.3)
        await client.send({"type": "append", "id": msg_id, "text": SECOND, "final": True})
        end = time.monotonic() + grace_s
        while rec.outcome is None and time.monotonic() < end:
            client.answered.clear()
            try:
                await asyncio.wait_for(client.answered.wait(), max(end - time.monotonic(), 0.01))
            except TimeoutError:
                pass
        return rec

    turns = await asyncio.gather(*(turn(k) for k in range(count)))
    await asyncio.gather(*(c.ws.close() for c in clients), return_exceptions=True)
    await asyncio.gather(*readers, return_exceptions=True)
    return list(turns)


def summarize(turns: list[Turn]) -> dict:
    admitted = [t for t in turns if t.admitted]
    ttfa = [1000 * s for t in admitted if (s := t.ttfa_s) is not None]
    good = [t for t in admitted if t.outcome == "done" and not t.stalled
            and t.ttfa_s is not None and t.ttfa_s <= GOOD_FIRST_AUDIO_S]
    stalled = sum(1 for t in admitted if t.stalled)
    return {
        "offered": len(turns), "admitted": len(admitted),
        "refused": sum(1 for t in turns if not t.admitted),
        "retry_after_ms_p50": percentile([t.retry_after_ms for t in turns
                                          if t.retry_after_ms is not None], 50),
        "unfinished": sum(1 for t in admitted if t.outcome is None),
        "stalled": stalled, "stalled_share": stalled / len(admitted) if admitted else 0.0,
        "ttfa_p50_ms": percentile(ttfa, 50), "ttfa_p99_ms": percentile(ttfa, 99),
        "good": len(good),
    }


def capacity_of(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/load", timeout=5) as resp:
        return int(json.loads(resp.read())["interactive"]["capacity"])


async def run(servers: dict[str, ServerProcess], rounds: int, factor: float) -> list[dict]:
    capacity = capacity_of(servers["hold"].port)
    count = max(2, round(factor * capacity))
    print(f"capacity {capacity} streams; bursts of {count} turns", flush=True)
    rows = []
    for r in range(rounds):
        order = list(MODES) if r % 2 == 0 else list(reversed(MODES))
        for mode in order:
            row = {"mode": mode, "round": r, "capacity": capacity,
                   **summarize(await burst(servers[mode].url, count, grace_s=20.0, seed=r))}
            print(json.dumps(row), flush=True)
            rows.append(row)
            await asyncio.sleep(1.0)  # the last turns' cancels settle
    return rows


def headline(rows: list[dict]) -> dict:
    result: dict = {"cpu": cpu_name()}
    for mode in MODES:
        mine = [r for r in rows if r["mode"] == mode]
        for key in ("admitted", "refused", "stalled_share", "ttfa_p99_ms", "good"):
            values = [r[key] for r in mine if r[key] is not None]
            result[f"{key}_{mode.replace('-', '_')}"] = (
                round(statistics.median(values), 3) if values else None)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench turns", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burst", type=float, default=2.0, help="turns per burst over capacity")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="turns_bench_"))
    out.mkdir(parents=True, exist_ok=True)
    servers = {mode: ServerProcess([*SERVER_ARGS, "--stream-reservation-s", hold],
                                   out / f"server_{mode}.log") for mode, hold in MODES.items()}
    try:
        for server in servers.values():
            server.start()
        for server in servers.values():
            server.wait_ready(60.0)
        rows = asyncio.run(run(servers, args.rounds, args.burst))
    finally:
        for server in servers.values():
            server.stop()
    (out / "turns_bench.json").write_text(json.dumps(rows, indent=1))
    print(f"wrote {out / 'turns_bench.json'}")
    print(json.dumps(headline(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
