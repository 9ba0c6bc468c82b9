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
first audio on the client's clock: p50/p99, refusals by code, and those
that got no first audio in time. A round stops waiting once every utterance
has its first audio (or was refused) plus ``GRACE_S``, then hangs up: with
random weights an utterance rarely ends by itself, and what is measured is
its first audio. The whole measurement has its own deadline
(``ServerPlan.deadline_s``): counts not reached are named, not waited for.
What was measured is handed to ``keep`` after the start and after every
round, so a section killed from outside keeps it. Load generation is
``bench.overload``'s (connections, records, summaries). The server's whole
log goes to ``log_dir/server.log``; the entry counts the CUDA graphs it
captured and the captures that failed (``graphs_captured``,
``eager_fallbacks``: an eager TTFA must not pass for a graph-mode one). The
server is stopped at the end whatever happens.

Thread: its own event loop (``asyncio.run``), called from the check's thread.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.overload import Connection, Record, close_pool, load_of, open_pool, summarize
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
GRACE_S = 0.5  # after the round's last first audio: late refusals and frames
# The graph cache's log lines (realtime/engine/cuda/graphs.py).
_CAPTURED = re.compile(r"CUDA graphs: (\d+) decode \+ (\d+) prefill shapes")
_CAPTURE_FAILED = re.compile(r"CUDA graphs: (.*capture failed.*)")
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
    round_timeout_s: float  # a round's bound on waiting for first audio
    start_timeout_s: float
    deadline_s: float  # the measurement's bound, from /readyz
    background_text: str = BACKGROUND_TEXT


def server_args(device: str, tiny: bool) -> tuple[str, ...]:
    weights = "tiny-random" if tiny else "random"
    # COMMON's --log-level warning, then info: the server's start-up lines in the tail.
    return ("--weights", weights, "--device", device, *COMMON, "--log-level", "info")


def server_section(plan: ServerPlan, device: str, log_dir: Path,
                   keep: Callable[[dict], None] = lambda entry: None) -> dict:
    """Run the server and the load (module docstring); the report entry."""
    log_dir.mkdir(parents=True, exist_ok=True)
    server = ServerProcess(list(plan.args), log_dir / "server.log")
    entry: dict = {"args": list(plan.args), "log": str(server.log_path)}
    start = time.perf_counter()
    server.start()
    try:
        server.wait_ready(plan.start_timeout_s)
        entry.update(cold_start_s=time.perf_counter() - start, load_idle=load_of(server.url),
                     **graph_counts(server.log_path))
        keep(entry)
        with BusySampler(device) as busy:
            asyncio.run(_measure(server.url, plan, entry, keep))
        entry.update(busy.report())
        return entry
    except Exception as exc:
        exc.add_note("server log: " + _tail(server.log_path, 20))
        raise
    finally:
        server.stop()
        entry.update(graph_counts(server.log_path), server_errors=_errors(server.log_path),
                     server_log_tail=_tail(server.log_path, 12))
        keep(entry)


def graph_counts(log_path: Path) -> dict:
    """The server's CUDA graphs as its log tells them: shapes captured (the
    last count logged) and every capture that failed and left shapes eager."""
    try:
        text = log_path.read_text(errors="replace")
    except OSError:
        return {}
    counts = _CAPTURED.findall(text)
    captured = sum(map(int, counts[-1])) if counts else 0
    return {"graphs_captured": captured, "eager_fallbacks": _CAPTURE_FAILED.findall(text)}


def _errors(path: Path, most: int = 5) -> list[str]:
    """The server's first ERROR lines (a failed start-up says why in one)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if " ERROR " in line][:most]


def _tail(path: Path, lines: int) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


async def _measure(url: str, plan: ServerPlan, out: dict, keep: Callable[[dict], None]) -> None:
    deadline = time.monotonic() + plan.deadline_s
    stop = asyncio.Event()
    conns, readers = await open_pool(url, math.ceil(plan.background / PER_CONNECTION))
    background: list[Record] = []
    users = [asyncio.create_task(_background_user(conns[k // PER_CONNECTION], k, plan.background_text,
                                                  stop, background))
             for k in range(plan.background)]
    try:
        await asyncio.sleep(plan.settle_s)
        for n, count in zip(plan.interactive, plan.rounds):
            rounds: list[tuple[list[Record], float, int]] = []
            for r in range(count):
                left = deadline - time.monotonic()
                if left <= 1.0:
                    break
                rounds.append(await _interactive_round(url, n, r, min(plan.round_timeout_s, left)))
                out[f"interactive_{n}"] = _row(rounds, count)
                keep(out)  # after every round: a section killed now keeps it
            if not rounds:
                out[f"interactive_{n}"] = {"skipped": f"the section's {plan.deadline_s:.0f} s deadline"}
    finally:
        stop.set()
        await close_pool(conns, readers)  # ends the background utterances in flight
        await asyncio.gather(*users, return_exceptions=True)
    done = [r for r in background if r.outcome == "done"]
    errors = {r.outcome for r in background if r.outcome is not None} - {"done"}
    out["background"] = {"in_flight": plan.background, "done": len(done), "errors": sorted(errors)}


def _row(rounds: list[tuple[list[Record], float, int]], planned: int) -> dict:
    """The figures of one interactive count over the rounds run so far."""
    records = [rec for recs in rounds for rec in recs[0]]
    row = summarize(records, 1.0, 0.0)
    for key in ("goodput_ratio", "unfinished", "underruns", "streams_underrun"):
        row.pop(key, None)  # utterances are cut once their first audio is in
    row.update(no_first_audio=sum(1 for rec in records if rec.outcome is None and rec.first_audio is None),
               rounds=len(rounds), rounds_planned=planned, round_s=[r[1] for r in rounds],
               background_queued=[r[2] for r in rounds])
    return row


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
    """``n`` interactive utterances sent together, waited for until each has
    its first audio or an outcome (plus ``GRACE_S``), at most ``timeout_s``;
    their records, the round's seconds and the background queue as ``/load``
    saw it at the start. Hanging up cancels what is still speaking."""
    queued = int(load_of(url)["background"]["queued"])
    conns, readers = await open_pool(url, math.ceil(n / PER_CONNECTION))
    start = time.monotonic()
    records = [await conns[i // PER_CONNECTION].speak(f"i{r}-{i}", INTERACTIVE_TEXTS[i % 4])
               for i in range(n)]
    deadline = start + timeout_s
    while time.monotonic() < deadline and any(
            rec.first_audio is None and rec.outcome is None for rec in records):
        await asyncio.sleep(0.01)
    await asyncio.sleep(max(0.0, min(GRACE_S, deadline - time.monotonic())))
    now = time.monotonic()
    for rec in records:
        if rec.first_audio is None and rec.outcome is None:
            rec.given_up = now
    await close_pool(conns, readers)
    return records, now - start, queued
