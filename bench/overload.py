"""Overload bench: admission by capacity vs queue-only, through the real server.

    python -m bench overload [--quick] [--out DIR] [--setups flat,tiny] [--repeats N]

For each of two set-ups it starts two servers as subprocesses on 127.0.0.1, one
with ``--admission capacity`` and one with ``--admission queue-only``, and
offers them the same interactive traffic over real WebSockets:

- ``flat``: the tone runner at a flat, GPU-like step cost (10 ms at any batch up
  to 64, ``--max-slots 64``, 3.4 codes per character as the scheduler expects of
  speech);
- ``tiny``: the real runtime with tiny-random weights on the CPU.

First the capacity: as many closed-loop clients as the server reports streams
(``GET /load``) speak short sentences back to back; utterances and audio seconds
completed per second are the measured capacity. Then, per offered load (0.5x,
1x, 2x and 4x that rate, Poisson arrivals of one short interactive sentence each,
``chunking: token``, 100 ms frames: the protocol's default), one round against each server, alternating
which goes first. Per round: first audio of the admitted utterances (client
clock, p50/p99), underruns among admitted (a simulated player starting at the
first frame, ``clients.playback``), refusals by code and their latency (speak
sent to error received), unfinished utterances, and goodput: audio seconds of
admitted utterances that played without an underrun and started within
``GOODPUT_FIRST_AUDIO_S``, per second of offered traffic, over the capacity's.

Prints a table, writes ``overload_bench.json`` and ``overload_bench.png`` to
``--out`` and, as the last line, one JSON object: ``admitted_ttfa_p99_ratio_2x``
and ``_4x`` (admitted first-audio p99 at 2x and 4x over that at 0.5x, flat,
capacity admission), ``underruns_admitted_flat`` (every flat capacity round),
``goodput_ratio_4x`` (flat, capacity), ``refusal_p99_ms`` (flat, capacity), the
same figures for queue-only and for ``tiny``, and the CPU's name; with
``--repeats N`` each round runs N times (alternating) and the figures are
medians over the repeats. Targets: both ratios <= 2, zero underruns, goodput
>= 0.9, refusals p99 <= 50 ms. On a shared machine a stall of the whole
machine shows in a round's p99: compare repeats.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from websockets.asyncio.client import ClientConnection, connect

from bench.arrivals import Audio, arrivals
from bench.overload_servers import MODES, SETUPS, ServerProcess, cpu_name
from bench.results import write_results
from clients.playback import simulate_playback
from clients.probe_report import percentile
from protocol import Done, Error, Started

LOADS = (0.5, 1.0, 2.0, 4.0)
GOODPUT_FIRST_AUDIO_S = 1.0  # audio that starts later than this is no use to a listener
SENTENCES = (
    "Good morning, how can I help you today?",
    "Your order has shipped and should arrive on Thursday.",
    "Please hold the line while I check that for you.",
    "The meeting moved to three o'clock in the small room.",
    "Turn left at the next intersection, then keep right.",
    "Thanks for calling. Is there anything else I can do?",
)
CONNECTIONS = 40  # per round; the server's --max-active is 8 per connection
SPEAK = {"type": "speak", "chunking": "token", "frame_ms": 100, "params": {"seed": 1}}


@dataclass
class Record:
    """One utterance as the load generator saw it (monotonic seconds)."""

    sent: float
    started: float | None = None
    first_audio: float | None = None
    end: float | None = None
    outcome: str | None = None  # "done" or an error code; None: unfinished
    retry_after_ms: int | None = None
    audio_s: float = 0.0
    frames: list[tuple[float, float]] = field(default_factory=list)
    given_up: float | None = None  # unfinished: when the round stopped waiting
    server_first_audio_ms: float | None = None  # done.timing, the server's own clock

    @property
    def admitted(self) -> bool:
        return self.started is not None

    @property
    def first_audio_s(self) -> float | None:
        """Seconds to the first frame; for an admitted utterance that never
        got one, at least until the round gave up on it."""
        if self.first_audio is not None:
            return self.first_audio - self.sent
        if self.admitted and self.given_up is not None:
            return self.given_up - self.sent
        return None

    @property
    def underruns(self) -> int:
        return simulate_playback(self.frames).underruns if self.frames else 0


class Connection:
    """One WebSocket to the server; records every utterance spoken on it."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.by_id: dict[str, Record] = {}
        self.by_stream: dict[int, Record] = {}
        self.active = 0
        self.ended = asyncio.Event()

    async def speak(self, msg_id: str, text: str, **fields) -> Record:
        """Send a ``speak`` (``SPEAK``'s fields, overridden by ``fields``)."""
        rec = self.by_id[msg_id] = Record(time.monotonic())
        self.active += 1
        await self.ws.send(orjson.dumps({**SPEAK, "id": msg_id, "text": text, **fields}).decode())
        return rec

    async def read(self) -> None:
        async for now, item in arrivals(self.ws):
            if isinstance(item, Audio):
                rec = self.by_stream.get(item.stream)
                if rec is not None:
                    if rec.first_audio is None:
                        rec.first_audio = now
                    rec.frames.append((now, item.seconds))
                continue
            rec = self.by_id.get(getattr(item, "id", None) or "")
            if rec is None:
                continue
            if isinstance(item, Started):
                rec.started = now
                self.by_stream[item.stream] = rec
            elif isinstance(item, (Done, Error)):
                rec.end, rec.outcome = now, "done" if isinstance(item, Done) else item.code
                if isinstance(item, Done):
                    rec.audio_s = item.audio_ms / 1000.0
                    rec.server_first_audio_ms = item.timing.first_audio_ms
                else:
                    rec.retry_after_ms = item.retry_after_ms
                self.active -= 1
                self.ended.set()


async def open_pool(url: str, count: int) -> tuple[list[Connection], list[asyncio.Task]]:
    conns = []
    for _ in range(count):
        ws = await connect(url, max_size=None, compression=None, open_timeout=30)
        await ws.recv()  # hello
        conns.append(Connection(ws))
    return conns, [asyncio.create_task(c.read()) for c in conns]


async def close_pool(conns: Sequence[Connection], readers: Sequence[asyncio.Task]) -> None:
    await asyncio.gather(*(c.ws.close() for c in conns), return_exceptions=True)
    await asyncio.gather(*readers, return_exceptions=True)


async def closed_loop(url: str, clients: int, seconds: float) -> tuple[float, float]:
    """``clients`` users speaking back to back: utterances and audio seconds
    completed per second, counted over the last ``seconds`` after a warm-up
    of a third as long (connections, the cost model settling)."""
    conns, readers = await open_pool(url, clients)
    begin = time.monotonic() + seconds / 3
    stop = begin + seconds
    done: list[Record] = []
    rng = random.Random(7)

    async def user(k: int, conn: Connection) -> None:
        n = 0
        while time.monotonic() < stop:
            n += 1
            rec = await conn.speak(f"c{k}-{n}", rng.choice(SENTENCES))
            while rec.outcome is None:
                conn.ended.clear()
                await conn.ended.wait()
            if rec.outcome == "done":
                done.append(rec)
            else:
                await asyncio.sleep((rec.retry_after_ms or 50) / 1000.0)

    await asyncio.gather(*(user(k, c) for k, c in enumerate(conns)))
    await close_pool(conns, readers)
    window = [r for r in done if r.end is not None and begin <= r.end < stop]
    return len(window) / seconds, sum(r.audio_s for r in window) / seconds


async def open_loop(url: str, rate: float, seconds: float, grace: float, seed: int) -> list[Record]:
    """Poisson arrivals at ``rate`` per second for ``seconds``; then up to
    ``grace`` seconds for the admitted ones to end (the rest stay unfinished)."""
    conns, readers = await open_pool(url, CONNECTIONS)
    rng = random.Random(seed)
    records: list[Record] = []
    at = time.monotonic()
    end = at + seconds
    n = 0
    while True:
        at += rng.expovariate(rate)
        if at >= end:
            break
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        conn = min(conns, key=lambda c: c.active)
        if conn.active >= 8:
            continue  # every connection at the server's max_active: not offered
        n += 1
        records.append(await conn.speak(f"o{n}", rng.choice(SENTENCES)))
    await wait_ended(records, time.monotonic() + grace)
    await close_pool(conns, readers)  # the server cancels what is left
    return records


async def wait_ended(records: Sequence[Record], deadline: float) -> float:
    """Until every record has an outcome or ``deadline`` (monotonic) passes;
    the ones left are marked given up. Returns when it stopped waiting."""
    while any(r.outcome is None for r in records) and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    now = time.monotonic()
    for rec in records:
        if rec.outcome is None:
            rec.given_up = now
    return now


def summarize(records: Sequence[Record], seconds: float, capacity_audio_s: float) -> dict:
    admitted = [r for r in records if r.admitted]
    refused = [r for r in records if r.outcome not in (None, "done")]
    codes: dict[str, int] = {}
    for r in refused:
        codes[r.outcome or ""] = codes.get(r.outcome or "", 0) + 1
    ttfa = [1000 * t for r in admitted if (t := r.first_audio_s) is not None]
    refusal_ms = [1000 * (r.end - r.sent) for r in refused if r.end is not None]
    good = sum(r.audio_s for r in admitted if r.outcome == "done" and r.underruns == 0
               and r.first_audio is not None and r.first_audio - r.sent <= GOODPUT_FIRST_AUDIO_S)
    return {
        "offered": len(records), "admitted": len(admitted), "refused": codes,
        "unfinished": sum(1 for r in records if r.outcome is None),
        "ttfa_p50_ms": percentile(ttfa, 50), "ttfa_p99_ms": percentile(ttfa, 99),
        "server_ttfa_p99_ms": percentile([r.server_first_audio_ms for r in admitted
                                          if r.server_first_audio_ms is not None], 99),
        "underruns": sum(r.underruns for r in admitted),
        "streams_underrun": sum(1 for r in admitted if r.underruns),
        "refusal_p99_ms": percentile(refusal_ms, 99),
        "retry_after_ms_p50": percentile([r.retry_after_ms for r in refused
                                          if r.retry_after_ms is not None], 50),
        "goodput_ratio": good / seconds / capacity_audio_s if capacity_audio_s > 0 else None,
    }


def load_of(url: str) -> dict:
    http = url.replace("ws://", "http://").replace("/v1/stream", "/load")
    with urllib.request.urlopen(http, timeout=5) as resp:
        return json.loads(resp.read())


async def run_setup(name: str, servers: dict[str, ServerProcess], round_s: float, cal_s: float,
                    grace_s: float, loads: Sequence[float], repeats: int = 1) -> list[dict]:
    """Capacity, then one round per load and mode (alternating which goes
    first), ``repeats`` times over."""
    capacity_url = servers["capacity"].url
    # Warm both servers alike first: their cost models learn the real steps
    # (sampling, vocoder, this machine's load), which the warm-up table misses.
    for server in servers.values():
        await closed_loop(server.url, int(load_of(capacity_url)["interactive"]["capacity"]), cal_s / 3)
    streams = int(load_of(capacity_url)["interactive"]["capacity"])
    rate, audio_rate = await closed_loop(capacity_url, streams, cal_s)
    print(f"{name}: capacity {streams} streams, {rate:.2f} utterances/s, "
          f"{audio_rate:.1f} audio s/s", flush=True)
    rows = []
    for repeat in range(repeats):
        for i, load in enumerate(loads):
            order = MODES if (i + repeat) % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                rows.append(await one_round(name, servers[mode].url, mode, load, rate, audio_rate,
                                            streams, round_s, grace_s, seed=100 * repeat + i,
                                            repeat=repeat))
    return rows


async def one_round(name: str, url: str, mode: str, load: float, rate: float, audio_rate: float,
                    streams: int, round_s: float, grace_s: float, seed: int, repeat: int) -> dict:
    records = await open_loop(url, load * rate, round_s, grace_s, seed=seed)
    row = {"setup": name, "mode": mode, "load": load, "repeat": repeat,
           "rate_per_s": round(load * rate, 3),
           "capacity_streams": streams, "capacity_utt_per_s": round(rate, 3),
           "capacity_audio_s_per_s": round(audio_rate, 2)}
    row.update(summarize(records, round_s, audio_rate))
    print(format_row(row), flush=True)
    return row


HEAD = (f"{'setup':5} {'mode':10} {'load':>4} {'offer':>5} {'admit':>5} {'refuse':>6} {'unfin':>5} "
        f"{'ttfa p50':>8} {'p99 ms':>8} {'server p99':>10} {'underrun':>8} {'refusal p99':>11} "
        f"{'goodput':>7}")


def _f(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def format_row(r: dict) -> str:
    return (f"{r['setup']:5} {r['mode']:10} {r['load']:4.1f} {r['offered']:5d} {r['admitted']:5d} "
            f"{sum(r['refused'].values()):6d} {r['unfinished']:5d} {_f(r['ttfa_p50_ms']):>8} "
            f"{_f(r['ttfa_p99_ms']):>8} {_f(r['server_ttfa_p99_ms']):>10} {r['underruns']:8d} "
            f"{_f(r['refusal_p99_ms']):>11} "
            f"{_f(r['goodput_ratio'], '.2f'):>7}")


def headline(rows: Sequence[dict]) -> dict:
    """The last line's figures; with several repeats, the median of each
    figure over the repeats (and ``repeats``)."""
    repeats = sorted({r.get("repeat", 0) for r in rows})
    each = [headline_of([r for r in rows if r.get("repeat", 0) == k]) for k in repeats]
    if len(each) == 1:
        return each[0]
    result: dict = {}
    for key in each[0]:
        values = [h[key] for h in each if isinstance(h.get(key), (int, float))]
        result[key] = statistics.median(values) if values else each[0][key]
    result["repeats"] = len(each)
    return result


def headline_of(rows: Sequence[dict]) -> dict:
    def pick(setup: str, mode: str, load: float) -> dict | None:
        return next((r for r in rows if r["setup"] == setup and r["mode"] == mode
                     and r["load"] == load), None)

    def figures(setup: str, mode: str, suffix: str) -> dict:
        base = pick(setup, mode, 0.5)
        out: dict = {}
        for load, key in ((2.0, "2x"), (4.0, "4x")):
            row = pick(setup, mode, load)
            ratio = None
            if row and base and row["ttfa_p99_ms"] and base["ttfa_p99_ms"]:
                ratio = round(row["ttfa_p99_ms"] / base["ttfa_p99_ms"], 3)
            out[f"admitted_ttfa_p99_ratio_{key}{suffix}"] = ratio
        mine = [r for r in rows if r["setup"] == setup and r["mode"] == mode]
        mode_suffix = "_queue_only" if mode == "queue-only" else ""
        out[f"underruns_admitted_{setup}{mode_suffix}"] = sum(r["underruns"] for r in mine)
        four = pick(setup, mode, 4.0)
        out[f"goodput_ratio_4x{suffix}"] = round(four["goodput_ratio"], 3) if four else None
        refusals = [r["refusal_p99_ms"] for r in mine if r["refusal_p99_ms"] is not None]
        out[f"refusal_p99_ms{suffix}"] = round(max(refusals), 1) if refusals else None
        return out

    result: dict = {}
    result.update(figures("flat", "capacity", ""))
    result.update(figures("flat", "queue-only", "_queue_only"))
    if any(r["setup"] == "tiny" for r in rows):
        result.update(figures("tiny", "capacity", "_tiny"))
        result.update(figures("tiny", "queue-only", "_tiny_queue_only"))
    result["cpu"] = cpu_name()
    return result


def plot(rows: Sequence[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = (("ttfa_p99_ms", "admitted first audio p99 (ms)", True),
              ("underruns", "underruns among admitted", False),
              ("goodput_ratio", "goodput / capacity", False),
              ("refusal_p99_ms", "refusal latency p99 (ms)", True))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4))
    for ax, (key, title, log) in zip(axes, panels):
        for setup in sorted({r["setup"] for r in rows}):
            for mode, style in zip(MODES, ("o-", "s--")):
                pts = [r for r in rows if r["setup"] == setup and r["mode"] == mode]
                ys = [float("nan") if r[key] is None else r[key] for r in pts]
                ax.plot([r["load"] for r in pts], ys, style, label=f"{setup} {mode}")
        ax.set_xscale("log", base=2)
        if log:
            ax.set_yscale("log")
        ax.set_xlabel("offered interactive load (x measured capacity)")
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


async def run(args: argparse.Namespace) -> list[dict]:
    rows: list[dict] = []
    for name in args.setups:
        spec = SETUPS[name]
        servers = {mode: ServerProcess(spec.args + ["--admission", mode], args.out / f"{name}-{mode}.log")
                   for mode in MODES}
        try:
            for server in servers.values():
                server.start()
            for server in servers.values():
                server.wait_ready(spec.start_timeout_s)
            quick = args.quick
            rows += await run_setup(name, servers, spec.round_s / (2 if quick else 1),
                                    spec.calibrate_s / (2 if quick else 1), spec.grace_s, LOADS,
                                    args.repeats)
        finally:
            for server in servers.values():
                server.stop()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench overload", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="half-length rounds")
    parser.add_argument("--out", type=Path, default=Path("out"), help="directory for JSON, PNG, logs")
    parser.add_argument("--repeats", type=int, default=1,
                        help="rounds per load and mode; the last line takes medians")
    parser.add_argument("--setups", default="flat,tiny",
                        help="comma-separated set-ups to run (flat: tone runner; tiny: tiny-random)")
    args = parser.parse_args(argv)
    args.setups = [name for name in args.setups.split(",") if name]
    if not args.setups or any(name not in SETUPS for name in args.setups):
        parser.error(f"--setups takes names from {sorted(SETUPS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    print(HEAD)
    try:
        import uvloop

        rows = uvloop.run(run(args))
    except ImportError:
        rows = asyncio.run(run(args))
    return write_results(args.out, "overload_bench", rows, plot, headline, started)


if __name__ == "__main__":
    sys.exit(main())

