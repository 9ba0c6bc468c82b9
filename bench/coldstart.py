"""Cold start: process start -> ``/readyz`` 200 -> first audio, cold and warm.

``python -m bench coldstart [--work-dir DIR] [--warm-runs N] [--precision P]
[--also P ...] [--cpu-threads N] [--text TEXT]``

Writes a full-size checkpoint in upstream's asset layout with seeded random
values (``weights.random_assets`` + ``write_checkpoint``; kept in
``--work-dir`` and reused by later runs), then starts
``python -m realtime serve --model-dir ... --device cpu`` as a subprocess:

- cold: with an empty ``--cache-dir``; after the first audio it waits until
  ``/readyz`` says ``warming: 0`` (the idle-time warm-up stored its table)
  before stopping the server; it also stores the decoder's prepared matrices
  (the ``weights`` entry, ~763 MB: ``cache_bytes``) and the GEMM plan (a guess
  under load, marked so);
- warm: ``--warm-runs`` more starts with that cache (medians reported);
- then, for each ``--also`` precision (default ``fp32``; ``--also none``:
  none), a first start of that precision on the same cache (it measures its
  engines and GEMM plan and stores what it prepares) and ``--warm-runs``
  warm ones.

The main pass runs ``--precision`` (default ``auto``: int8 on the engine
``auto`` picks, ONNX Runtime here: its first start times both engines and
builds the backbone and vocoder graphs, ``ort-backbone`` and ``ort-vocoder``
entries; warm starts load them).

Each start is timed from just before the process is spawned to ``/readyz``
answering 200 (polled every 20 ms) and to the first binary audio frame of a
real WebSocket ``speak`` (token chunking) sent as soon as it is ready. The
checkpoint's files are in the page cache for every run but perhaps the
first (the bench just wrote them).

The last stdout line is one JSON object: ``ready_s_cold``,
``first_audio_s_cold``, ``ready_s_warm``, ``first_audio_s_warm`` (medians),
``warm_runs`` (each run's pair), ``phases_ms_cold`` and ``phases_ms_warm``
(the server's start-up timeline, ``runtime/startup_clock.py``: ms per phase,
warm: medians), ``cache_bytes`` (after the main pass), ``cpu`` (``cpu.info``)
and ``load_average`` (before, after). Per ``--also`` precision P the same keys
of its pass with a suffix: ``ready_s_first_P``, ``first_audio_s_first_P`` (its
first start), ``ready_s_warm_P``, ``first_audio_s_warm_P``, ``warm_runs_P``,
``phases_ms_first_P``, ``phases_ms_warm_P`` (e.g. ``ready_s_warm_fp32``).
Targets on CPU with a warm cache: ready <= 5 s, first audio <= 6 s
(docs/runtime.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from bench.processes import ROOT, free_port, stop

TEXT = "Hello there, this is a cold start."
MARKER = "bench-coldstart-checkpoint.json"


def ensure_checkpoint(work: Path) -> Path:
    """A full-size random checkpoint under ``work/checkpoint`` (written once)."""
    root = work / "checkpoint"
    if (root / MARKER).exists():
        return root
    from realtime.engine.model.weights import random_assets, write_checkpoint

    started = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    write_checkpoint(random_assets(seed=0), str(root))
    (root / MARKER).write_text(json.dumps({"seed": 0, "written_s": time.perf_counter() - started}))
    return root


def _readyz(port: int) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except OSError:
        return 0, {}


def _first_audio(port: int, text: str, timeout: float) -> None:
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/v1/stream", open_timeout=timeout) as ws:
        ws.recv(timeout=timeout)  # hello
        ws.send(json.dumps({"type": "speak", "id": "cold", "text": text, "chunking": "token",
                            "params": {"seed": 1}}))
        while True:
            message = ws.recv(timeout=timeout)
            if isinstance(message, bytes):
                return
            if json.loads(message).get("type") == "error":
                raise RuntimeError(f"speak refused: {message}")


def one_start(checkpoint: Path, cache: Path, args, log_path: Path, settle: bool,
              precision: str | None = None) -> dict:
    """Start a server (``precision``, else ``args.precision``), time ready and
    first audio; with ``settle``, wait for its idle-time warm-up to finish
    before stopping it."""
    port = free_port()
    cmd = [sys.executable, "-m", "realtime", "serve", "--model-dir", str(checkpoint),
           "--device", "cpu", "--port", str(port), "--cache-dir", str(cache),
           "--precision", precision or args.precision]
    if args.cpu_threads:
        cmd += ["--cpu-threads", str(args.cpu_threads)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    with open(log_path, "w") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            while _readyz(port)[0] != 200:
                if proc.poll() is not None:
                    raise RuntimeError(f"server exited with {proc.returncode}; see {log_path}")
                if time.perf_counter() - start > args.timeout:
                    raise RuntimeError(f"not ready within {args.timeout} s; see {log_path}")
                time.sleep(0.02)
            ready = time.perf_counter() - start
            _first_audio(port, args.text, args.timeout)
            first = time.perf_counter() - start
            # Until the idle-time warm-up has stored its table (an answer missed
            # under load is not a "done").
            while settle and _readyz(port)[1].get("warming", 1) > 0:
                if time.perf_counter() - start > args.timeout * 4:
                    print("cold run: the idle-time warm-up did not finish", file=sys.stderr)
                    break
                time.sleep(0.2)
        finally:
            stop([proc], timeout=30)
    return {"ready_s": round(ready, 3), "first_audio_s": round(first, 3)}


_PHASE = re.compile(r"start-up: (.+) (\d+) ms \(at \d+ ms\)$")


def phases_ms(log_path: Path) -> dict[str, int]:
    """The start-up timeline a server logged: ms per phase, in order."""
    out: dict[str, int] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if m := _PHASE.search(line):
            out[m.group(1)] = int(m.group(2))
    return out


def _median_phases(runs: list[dict[str, int]]) -> dict[str, float]:
    names = [p for p in runs[0] if all(p in r for r in runs)] if runs else []
    return {p: statistics.median(r[p] for r in runs) for p in names}


def _cache_bytes(cache: Path) -> int:
    return sum(f.stat().st_size for f in cache.rglob("*") if f.is_file())


def one_pass(checkpoint: Path, cache: Path, args, work: Path, precision: str, first: str) -> dict:
    """A settled ``first`` start, then ``args.warm_runs`` warm ones, of
    ``precision``; their figures under the keys ``main`` prints, with
    ``first`` in place of ``cold``."""
    tag = "" if first == "cold" else f"{precision}-"
    logs = [work / f"server-{tag}{first}.log"] + [work / f"server-{tag}warm-{i}.log"
                                                   for i in range(args.warm_runs)]
    runs = []
    for i, log_path in enumerate(logs):
        runs.append(one_start(checkpoint, cache, args, log_path, settle=i == 0, precision=precision))
        print(f"{precision} {first if i == 0 else f'warm {i - 1}'}: {runs[-1]}", file=sys.stderr)
    warm = runs[1:]
    return {f"ready_s_{first}": runs[0]["ready_s"], f"first_audio_s_{first}": runs[0]["first_audio_s"],
            "ready_s_warm": statistics.median(r["ready_s"] for r in warm) if warm else None,
            "first_audio_s_warm": statistics.median(r["first_audio_s"] for r in warm) if warm else None,
            "warm_runs": warm, f"phases_ms_{first}": phases_ms(logs[0]),
            "phases_ms_warm": _median_phases([phases_ms(p) for p in logs[1:]])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench coldstart", description=__doc__.split("\n")[0])
    parser.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(), "bench-coldstart"),
                        help="where the checkpoint (kept) and the cache go")
    parser.add_argument("--warm-runs", type=int, default=3)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--also", nargs="+", default=["fp32"], metavar="P",
                        help="precisions timed after the main pass on its cache ('none': none)")
    parser.add_argument("--cpu-threads", type=int, default=0)
    parser.add_argument("--text", default=TEXT)
    parser.add_argument("--timeout", type=float, default=300.0)
    args = parser.parse_args(argv)
    work = Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    checkpoint = ensure_checkpoint(work)
    cache = work / "cache"
    shutil.rmtree(cache, ignore_errors=True)
    load_before = os.getloadavg()
    result: dict = {"bench": "coldstart", "precision": args.precision,
                    **one_pass(checkpoint, cache, args, work, args.precision, "cold"),
                    "cache_bytes": _cache_bytes(cache)}
    for precision in [p for p in args.also if p not in ("none", args.precision)]:
        extra = one_pass(checkpoint, cache, args, work, precision, "first")
        result.update({f"{k}_{precision}": v for k, v in extra.items()})
    from realtime.engine.cpu.info import describe

    result.update({"cpu": describe(), "logs": str(work),
                   "load_average": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]})
    print(json.dumps(result))
    return 0
