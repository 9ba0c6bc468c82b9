"""The GPU check's server section: interactive first audio through the real
server while the background lane is saturated.

``server_section`` starts ``python -m realtime serve`` as a subprocess
(``bench.overload_servers.ServerProcess``: the same server a deployment
runs, on a free loopback port), times its cold start (process start to
``/readyz``: imports, weights, warm-up and graph capture), fills the
background lane with long background utterances spoken back to back (more
than its slots hold, so some always wait: ``/load``'s background queue is
recorded while measuring), then, per N in ``interactive``, sends N short
interactive utterances at once (``chunking: token``) and measures their
first audio on the client's clock: p50/p99, refusals by code, unfinished
ones. Load generation is ``bench.overload``'s (connections, records,
summaries). The server is stopped at the end whatever happens; its log's
last lines go into the entry when it fails.

Thread: its own event loop (``asyncio.run``), called from the check's thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench.overload import Connection, Record, close_pool, load_of, open_pool, summarize, wait_ended
from bench.overload_servers import COMMON, ServerProcess
from tools.gpu_busy import BusySampler

log = logging.getLogger(__name__)

BACKGROUND_TEXT = (
    "The history of the river valley is long and quiet. Farmers planted barley on the "
    "terraces every spring, and the mills along the water ground it through the autumn. "
    "Travelers who crossed the old stone bridge wrote of the orchards and the bells.")
INTERACTIVE_TEXTS = (
    "Good morning, how can I help you today?",
    "Your order has shipped and should arrive on Thursday.",
    "Please hold the line while I check that for you.",
    "Turn left at the next intersection, then keep right.",
)
PER_CONNECTION = 8  # the server's default --max-active
BACKGROUND = {"lane": "background", "chunking": "sentence", "deadline_ms": 3_600_000}


@dataclass(frozen=True)
class ServerPlan:
    """What the section runs: the server's flags, the interactive counts,
    rounds per count, background utterances in flight (and their text), and
    time bounds."""

    args: tuple[str, ...]
    interactive: tuple[int, ...]
    rounds: tuple[int, ...]  # per interactive count
    background: int
    settle_s: float
    round_timeout_s: float
    start_timeout_s: float
    background_text: str = BACKGROUND_TEXT


def server_args(device: str, tiny: bool) -> tuple[str, ...]:
    weights = "tiny-random" if tiny else "random"
    # COMMON's --log-level warning, then info: the server's start-up lines in the tail.
    return ("--weights", weights, "--device", device, *COMMON, "--log-level", "info")


def server_section(plan: ServerPlan, device: str) -> dict:
    """Run the server and the load (module docstring); the report entry."""
    with tempfile.TemporaryDirectory(prefix="gpu-check-server-") as tmp:
        server = ServerProcess(list(plan.args), Path(tmp) / "server.log")
        start = time.perf_counter()
        server.start()
        try:
            server.wait_ready(plan.start_timeout_s)
            entry: dict = {"args": list(plan.args), "cold_start_s": time.perf_counter() - start}
            entry["load_idle"] = load_of(server.url)
            with BusySampler(device) as busy:
                entry.update(asyncio.run(_measure(server.url, plan)))
            entry.update(busy.report())
            entry["server_log_tail"] = _tail(server.log_path, 8)
            return entry
        except Exception as exc:
            exc.add_note("server log: " + _tail(server.log_path, 20))
            raise
        finally:
            server.stop()


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


async def _measure(url: str, plan: ServerPlan) -> dict:
    out: dict = {}
    stop = asyncio.Event()
    conns, readers = await open_pool(url, math.ceil(plan.background / PER_CONNECTION))
    background: list[Record] = []
    users = [asyncio.create_task(_background_user(conns[k // PER_CONNECTION], k, plan.background_text,
                                                  stop, background))
             for k in range(plan.background)]
    try:
        await asyncio.sleep(plan.settle_s)
        for n, count in zip(plan.interactive, plan.rounds):
            rounds = [await _interactive_round(url, n, r, plan.round_timeout_s) for r in range(count)]
            records = [rec for recs in rounds for rec in recs[0]]
            row = summarize(records, 1.0, 0.0)
            row.pop("goodput_ratio", None)
            row.update(rounds=count, round_s=[r[1] for r in rounds],
                       background_queued=[r[2] for r in rounds])
            out[f"interactive_{n}"] = row
    finally:
        stop.set()
        await asyncio.gather(*users, return_exceptions=True)
        await close_pool(conns, readers)
    done = [r for r in background if r.outcome == "done"]
    errors = {r.outcome for r in background if r.outcome is not None} - {"done"}
    out["background"] = {"in_flight": plan.background, "done": len(done), "errors": sorted(errors)}
    return out


async def _background_user(conn: Connection, k: int, text: str, stop: asyncio.Event,
                           records: list[Record]) -> None:
    """Background utterances back to back until ``stop``; the last one is
    cancelled by closing the connection."""
    n = 0
    while not stop.is_set():
        n += 1
        rec = await conn.speak(f"bg{k}-{n}", text, **BACKGROUND)
        records.append(rec)
        while rec.outcome is None and not stop.is_set():
            await asyncio.sleep(0.05)
        if rec.outcome not in (None, "done"):
            await asyncio.sleep((rec.retry_after_ms or 200) / 1000.0)


async def _interactive_round(url: str, n: int, r: int, timeout_s: float) -> tuple[list[Record], float, int]:
    """``n`` interactive utterances sent together; their records, the
    round's seconds and the background queue as ``/load`` saw it at the start."""
    queued = int(load_of(url)["background"]["queued"])
    conns, readers = await open_pool(url, math.ceil(n / PER_CONNECTION))
    start = time.monotonic()
    records = [await conns[i // PER_CONNECTION].speak(f"i{r}-{i}", INTERACTIVE_TEXTS[i % 4])
               for i in range(n)]
    now = await wait_ended(records, start + timeout_s)
    await close_pool(conns, readers)
    return records, now - start, queued
