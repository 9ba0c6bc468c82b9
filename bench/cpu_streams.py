"""CPU streams: how many interactive streams the real server keeps in real time.

Per set-up (``--setup``, repeatable: ``<engine>-<precision>[-<vocoder
precision>]`` of realtime/engine/cpu/engine.py, e.g. ``ort-int8``,
``ort-int4-int8``, ``torch-fp32``; default ``SETUPS``, side
by side in one run)
one ``python -m realtime serve`` on 127.0.0.1 with full-size random weights
on the CPU (``--cpu-threads``, 2 by default: ``bench.stream_rtf.StreamServer``),
then a sweep over the stream count ``n = 1, 2, ...``: ``n`` clients, each on
its own connection, speak the same text at once (interactive lane,
``chunking: token``, a seed each) and read all of its audio; the latency
probe's measures score each stream (``clients.probe.measure_one``: first
audio, and the underruns of a real-time player started at the first frame,
``clients.playback``).

A count *passes* when all ``n`` streams were admitted, finished, and played
with zero underruns after their first audio. The sweep stops at the first
count that does not pass (an underrun, a refusal, an error): with capacity
admission the stream past the measured capacity is refused ``overloaded``
with a retry hint, which the row shows (``refused``, ``retry_after_ms``)
beside the server's own capacity from ``GET /load`` while the count ran.

The last stdout line is one JSON object. Per set-up:
``realtime_streams_<setup>`` (the largest passing count, 0 when even one
stream underran), ``rtf_stream_<setup>`` (the lone stream's speak -> last
frame over its audio), ``first_audio_ms_<setup>`` (the lone stream's),
``admission_capacity_<setup>`` (the most the server said it holds). Then the
best of them: ``rtf_stream_cpu`` and ``realtime_streams_cpu`` (any set-up;
``best_setup_cpu`` names the one with the lowest rtf), and per precision the
best engine's (``rtf_stream_int8``, ``realtime_streams_int8``,
``first_audio_ms_int8``, ``admission_capacity_int8``; ``..._fp32``, ...);
``cpu``, ``threads``, ``load_average`` (before, after) and ``rows`` (one per
count run). ``--quick`` runs tiny random weights, counts up to 3, and is
what tests run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any

from bench.stream_rtf import SEED, TEXT, StreamServer

log = logging.getLogger(__name__)

MAX_STREAMS = 6  # the sweep's bound: past two cores' reach even in int4
SETUPS = ("ort-int8", "ort-int4", "torch-fp32")
QUICK_MAX_STREAMS = 3
LEVEL_TIMEOUT_S = 240.0  # one count's bound (a stalled server must not hang the bench)
# The bench offers more text than a person would: no per-connection rate limits.
SERVER_ARGS = ("--text-chars-per-minute", "0", "--token-text-chars-per-minute", "0",
               "--max-connections", "64")


def passes(row: dict[str, Any]) -> bool:
    """All the count's streams served, none underran after its first audio."""
    return (row["served"] == row["streams"] and row["underruns"] == 0
            and row["refused"] == 0 and row["errors"] == 0)


def sweep(run_count: Callable[[int], dict[str, Any]], counts: Iterable[int]) -> tuple[int, list[dict]]:
    """Run ``run_count(n)`` for each count in order until one does not pass;
    returns (the largest passing count before it, 0 if none; the rows run)."""
    best, rows = 0, []
    for n in counts:
        row = run_count(n)
        rows.append(row)
        if not passes(row):
            break
        best = n
    return best, rows


def _load(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/load", timeout=5) as r:
        report: dict[str, Any] = json.loads(r.read())
    return report


async def _count(url: str, port: int, n: int, text: str) -> dict[str, Any]:
    """``n`` streams at once; the probe's records, summed into one row."""
    from clients.probe import measure_one
    from protocol import Params

    capacity: list[int] = []

    async def watch() -> None:  # the server's view of its capacity while the streams run
        while True:
            report = await asyncio.to_thread(_load, port)
            capacity.append(int(report["interactive"]["capacity"]))
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch())
    try:
        records = await asyncio.gather(*(
            measure_one(url, None, text, "interactive", n,
                        {"chunking": "token", "params": Params(seed=SEED + k)})
            for k in range(n)))
    finally:
        watcher.cancel()
    served = [r for r in records if r.error is None]
    first = [r.first_audio_ms for r in served if r.first_audio_ms is not None]
    rtfs = [r.rtf for r in served if r.rtf is not None]
    return {
        "streams": n, "served": len(served),
        "refused": sum(r.refused for r in records),
        "errors": sum(1 for r in records if r.error is not None and not r.refused),
        "codes": sorted({r.error for r in records if r.error is not None}),
        "retry_after_ms": [r.retry_after_ms for r in records if r.refused],
        "underruns": sum(r.underruns for r in served),
        "stall_ms": round(sum(r.stall_ms for r in served), 1),
        "first_audio_ms_max": round(max(first), 1) if first else None,
        "first_audio_ms_p50": round(statistics.median(first), 1) if first else None,
        "rtf_max": round(max(rtfs), 3) if rtfs else None,
        "audio_s": round(sum(r.audio_ms for r in served) / 1e3 / max(len(served), 1), 2),
        "admission_capacity": max(capacity, default=None),
    }


def run_count(server: StreamServer, n: int, text: str = TEXT) -> dict[str, Any]:
    """One count through a running server (bounded by ``LEVEL_TIMEOUT_S``)."""
    started = time.monotonic()
    row = asyncio.run(asyncio.wait_for(_count(server.url, server.port, n, text), LEVEL_TIMEOUT_S))
    row["wall_s"] = round(time.monotonic() - started, 1)
    log.info("%d streams: %s", n, row)
    return row


def measure_setup(setup: str, threads: int, max_streams: int,
                  server_args: tuple[str, ...] = (), text: str = TEXT) -> dict[str, Any]:
    """One server of ``setup`` (``<engine>-<precision>``), the sweep through
    it: this set-up's keys and rows."""
    engine, precision, *vocoder = setup.split("-")
    flags = ("--cpu-engine", engine, "--vocoder-precision", vocoder[0] if vocoder else "auto")
    with StreamServer(precision, threads, extra_args=SERVER_ARGS + flags + server_args,
                      record_steps=False) as server:
        best, rows = sweep(lambda n: run_count(server, n, text), range(1, max_streams + 1))
    for row in rows:
        row["setup"] = setup
    lone = rows[0]
    return {f"realtime_streams_{setup}": best,
            f"rtf_stream_{setup}": lone["rtf_max"],
            f"first_audio_ms_{setup}": lone["first_audio_ms_max"],
            f"admission_capacity_{setup}": max(
                (r["admission_capacity"] for r in rows if r["admission_capacity"] is not None),
                default=None),
            "rows": rows}


def best_of(result: dict[str, Any], setups: Iterable[str]) -> dict[str, Any]:
    """The best set-up's figures: over all (``_cpu``) and per precision."""
    out: dict[str, Any] = {}
    groups: dict[str, list[str]] = {"cpu": list(setups)}
    for setup in setups:
        groups.setdefault(setup.split("-")[1], []).append(setup)
    for name, members in groups.items():
        ran = [m for m in members if result.get(f"rtf_stream_{m}") is not None]
        if not ran:
            continue
        best = min(ran, key=lambda m: (-result[f"realtime_streams_{m}"], result[f"rtf_stream_{m}"]))
        out[f"realtime_streams_{name}"] = result[f"realtime_streams_{best}"]
        out[f"rtf_stream_{name}"] = min(result[f"rtf_stream_{m}"] for m in ran)
        for key in ("first_audio_ms", "admission_capacity"):
            out[f"{key}_{name}"] = result[f"{key}_{best}"]
        out[f"best_setup_{name}"] = best
    return out


def measure(quick: bool, threads: int = 2, max_streams: int | None = None,
            setups: tuple[str, ...] = SETUPS, server_args: tuple[str, ...] | None = None,
            text: str = TEXT) -> dict[str, Any]:
    """The sweep per set-up (``server_args``: the server's extra flags;
    by default tiny random weights with ``quick``, full-size ones without)."""
    import os

    from realtime.engine.cpu.info import describe

    limit = max_streams or (QUICK_MAX_STREAMS if quick else MAX_STREAMS)
    if server_args is None:
        server_args = ("--weights", "tiny-random") if quick else ()
    load = os.getloadavg()[0]
    result: dict[str, Any] = {"cpu": describe(), "threads": threads, "quick": quick,
                              "max_streams": limit}
    rows: list[dict[str, Any]] = []
    for setup in setups:
        part = measure_setup(setup, threads, limit, server_args, text)
        rows += part.pop("rows")
        result.update(part)
    result.update(best_of(result, setups))
    result["load_average"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    result["rows"] = rows
    return result


def _table(result: dict[str, Any]) -> str:
    lines = [f"cpu: {result['cpu']}, {result['threads']} threads",
             f"{'setup':<12}{'streams':>8}{'served':>8}{'refused':>8}{'underruns':>10}"
             f"{'first ms max':>14}{'rtf max':>9}{'capacity':>9}"]
    for r in result["rows"]:
        lines.append(f"{r['setup']:<12}{r['streams']:>8}{r['served']:>8}{r['refused']:>8}"
                     f"{r['underruns']:>10}{r['first_audio_ms_max']!s:>14}{r['rtf_max']!s:>9}"
                     f"{r['admission_capacity']!s:>9}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench cpu-streams", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="tiny random weights, at most 3 streams (what tests run)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-streams", type=int, default=None,
                        help=f"the sweep's last count (default {MAX_STREAMS}, quick {QUICK_MAX_STREAMS})")
    parser.add_argument("--setup", action="append",
                        help=f"<engine>-<precision>, repeatable (default: {', '.join(SETUPS)})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    result = measure(args.quick, args.threads, args.max_streams, tuple(args.setup or SETUPS))
    print(_table(result))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
