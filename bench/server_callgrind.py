"""``python -m bench server --timestamps --callgrind``: word timings' cost in instructions.

CPU time on a shared machine cannot resolve a few percent (repeated runs of
one build differ by more), so this mode counts instructions instead. Our
server (the bench's own settings: tone runner, 100 ms frames, the same text
and ``--chunking``/``--codes-per-char``) runs under valgrind's callgrind
(``--separate-threads=yes``, user space only). After warm-up utterances on
both sides, rounds alternate an "off" and an "on" phase (``speak.timestamps``
false, true; every other round in reverse order), each ``--utterances``
utterances on one connection: ``callgrind_control`` zeroes the counters
before a phase and dumps them after it. Per phase: instructions per frame
of the whole process and of its main thread (the event loop: the word path
runs there; the model thread's count also depends on how often it waits, so
it varies by several percent from phase to phase). Per round: the ratios
on/off of both counts, and ``callgrind_timestamps_cost``, one plus the
event loop's added instructions over the whole server's count off (the
figure to hold against a budget: what timestamps add, free of the model
thread's variation); the medians and quartiles of those per-round figures
go in the JSON line (``callgrind_*`` keys).
A garbage collection that falls in one phase moves that phase by up to
~2%: enough utterances per phase (the default, 8 of 300 frames: 2400
frames a phase) and several rounds keep one from deciding the figure.
Needs ``valgrind`` (``apt-get install valgrind``); a round takes about a
minute on one core.
"""

from __future__ import annotations

import asyncio
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from bench.paired import paired_ratios, spread
from bench.processes import free_port, stop, wait_http
from bench.server_traffic import server_args

MAIN_THREAD = "-01"  # callgrind names a dump's file per thread: <out>.<dump>-<thread>


def read_dump(prefix: str) -> tuple[int, int]:
    """(instructions of every thread, of the main thread) of one dump: the
    files ``<prefix>-NN``, each a thread's, with a ``summary:`` line."""
    total = main = 0
    for path in sorted(glob.glob(prefix + "-*")):
        with open(path) as f:
            for line in f:
                if line.startswith("summary:"):
                    count = int(line.split()[1])
                    total += count
                    if path.endswith(MAIN_THREAD):
                        main = count
                    break
    return total, main


def _ctl(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


async def _utterances(url: str, request: str, count: int) -> int:
    from websockets.asyncio.client import connect

    from bench.server_traffic import is_end

    frames = 0
    async with connect(url, max_size=None, compression=None, open_timeout=120) as ws:
        await ws.recv()  # hello
        for _ in range(count):
            await ws.send(request)
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    frames += 1
                elif is_end(msg):
                    break
    return frames


def run(root: Path, text: str, request: str, timed_request: str, codes_per_char: float,
        utterances: int, rounds: int) -> dict[str, object]:
    """The ``callgrind_*`` figures (module docstring) of our server at ``root``."""

    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("--callgrind needs valgrind (apt-get install valgrind)")
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg")
        env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        proc = subprocess.Popen(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--dump-instr=no",
             f"--callgrind-out-file={out}", sys.executable,
             *server_args(port, text, 0, codes_per_char)],
            env=env, cwd=root, stderr=subprocess.DEVNULL)
        try:
            wait_http(port, "/readyz", timeout=900, request_timeout=30)
            url = f"ws://127.0.0.1:{port}/v1/stream"
            for req in (request, timed_request):  # warm both paths (and their memos)
                asyncio.run(_utterances(url, req, 2))
            phases: dict[str, list[tuple[int, int, int]]] = {"off": [], "on": []}
            dump = 0
            for i in range(rounds):
                order = [("off", request), ("on", timed_request)]
                for side, req in (order if i % 2 == 0 else order[::-1]):
                    _ctl(proc.pid, "--zero")
                    frames = asyncio.run(_utterances(url, req, utterances))
                    _ctl(proc.pid, f"--dump={side}{i}")
                    dump += 1
                    total, main = read_dump(f"{out}.{dump}")
                    phases[side].append((frames, total, main))
                    print(f"callgrind round {i} {side}: {total / frames:.0f} instructions a frame "
                          f"({main / frames:.0f} event loop)", flush=True)
        finally:
            stop([proc], timeout=120)  # valgrind writes its last dumps on exit
    return summarize(phases["off"], phases["on"])


def summarize(off: Sequence[tuple[int, int, int]], on: Sequence[tuple[int, int, int]]
              ) -> dict[str, object]:
    """Figures from recorded phases, each (frames, instructions, event-loop instructions)."""
    per_frame = {name: ([t / f for f, t, _ in side], [m / f for f, _, m in side])
                 for name, side in (("off", off), ("on", on))}
    whole = spread(paired_ratios(per_frame["on"][0], per_frame["off"][0]))
    loop = spread(paired_ratios(per_frame["on"][1], per_frame["off"][1]))
    # The word path runs on the event loop: its added count over the whole
    # server's, per round (free of the model thread's variation).
    added = spread([1 + (a - b) / w for a, b, w in
                    zip(per_frame["on"][1], per_frame["off"][1], per_frame["off"][0])])
    return {
        "callgrind_timestamps_cost": round(added["median"], 4),
        "callgrind_timestamps_cost_p25": round(added["p25"], 4),
        "callgrind_timestamps_cost_p75": round(added["p75"], 4),
        "callgrind_instructions_per_frame_off": round(statistics.median(per_frame["off"][0])),
        "callgrind_instructions_per_frame_on": round(statistics.median(per_frame["on"][0])),
        "callgrind_loop_instructions_per_frame_off": round(statistics.median(per_frame["off"][1])),
        "callgrind_loop_instructions_per_frame_on": round(statistics.median(per_frame["on"][1])),
        "callgrind_timestamps_ratio": round(whole["median"], 4),
        "callgrind_timestamps_ratio_p25": round(whole["p25"], 4),
        "callgrind_timestamps_ratio_p75": round(whole["p75"], 4),
        "callgrind_added_instructions_per_frame": round(
            statistics.median(per_frame["on"][0]) - statistics.median(per_frame["off"][0])),
        "callgrind_loop_timestamps_ratio": round(loop["median"], 4),
        "callgrind_rounds": len(off),
    }
