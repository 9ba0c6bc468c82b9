"""Server overhead bench: our server (ToneRunner, no model) vs a bare websockets loop.

``python -m bench server [--quick] [--frames N] [--connections N] [--timestamps]
[--chunking sentence|token] [--codes-per-char X] [--callgrind [--utterances N] [--rounds N]]``

Both servers run as subprocesses on 127.0.0.1 with the same websockets
settings (no compression, the same write limit and queue sizes) and put the
same bytes on the wire. First our server speaks one warm-up utterance
(100 ms frames of 24 kHz s16, sentences of ~140 characters) and the client
records everything it sent: ``hello``, then ``started``, the binary frames,
the ``segment`` messages and ``done``. The bare server replays that
transcript: ``hello`` on connect, and the rest, pre-built, for every text
message it gets. Ours runs the whole path (protocol decode, sentence split,
model thread with a synthetic runner, scheduler, framing, encoding, outbox).

Server CPU comes from the kernel's per-process counters, which tick every
10 ms, so each sample repeats utterances until the server under test has used
at least ``--min-cpu`` seconds; samples alternate bare/ours so background load
hits both alike (every other round in reverse order, so no side always runs
right after another one), and the medians are reported. Then ``--connections`` idle
WebSocket connections are opened to our server and held. The last stdout line
is one JSON object with ``per_frame_cost_ratio`` (ours / bare CPU per frame),
``added_first_frame_ms``, ``frames_per_s_ours``/``_bare`` and
``connections_held``.

``--baseline DIR`` also runs the server from another source tree (e.g. main's,
exported with ``git archive``) as a third subprocess in the same alternation,
and reports ``per_frame_cost_vs_baseline`` (ours / baseline CPU per frame): a
change's cost measured side by side, under the same background load.

``--timestamps`` adds our server with ``speak.timestamps: true`` (word
timings) to the alternation and reports ``timestamps_cost_ratio`` (CPU per
frame with timings / without, same process: the ratio of the two medians)
and ``timestamps_added_first_frame_ms``; and, paired by round (the two
sides are adjacent in every round), ``timestamps_cost_ratio_paired``, the
median of the per-round ratios, with its quartiles
``timestamps_cost_ratio_p25`` and ``_p75`` (a budget is resolved when both
lie on one side of it), and ``timestamps_added_first_frame_ms_paired``.
``--timestamps --callgrind`` counts instructions instead (valgrind; our
server alone, ``--utterances`` a phase, ``--rounds`` off/on rounds): the
``callgrind_*`` keys of ``bench.server_callgrind``, whose docstring says
how. ``--chunking token`` asks for token
chunking in every request (audio while decoding: words are committed per
chunk). The tone runner makes ``--codes-per-char`` codes (512 samples) of
audio per character of text: 1 (the default, the figures so far) speaks
about 3.4 times faster than speech, so a frame carries 3.4 times the words
(and word timings cost that much more per frame); 3.4, the scheduler's
planning figure for Latin text (``speech.script``, what benches of
speech timing use), is the rate of speech. Every side of a run uses it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from bench.paired import paired_ratios, spread
from bench.processes import ROOT, free_port, stop, wait_http, wait_port
from bench.server_traffic import is_end, server_args

FRAME_SAMPLES = 2400  # 100 ms at 24 kHz
CHARS_PER_SENTENCE = 140
# Our server's websockets settings (realtime/server/app.py); the bare one uses the same.
WS_SETTINGS = dict(compression=None, max_queue=16, write_limit=64 * 1024,
                   ping_interval=20, ping_timeout=20, close_timeout=5)

Transcript = tuple[str, list[str | bytes]]  # hello, then one utterance's messages


def _raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, wanted), hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


# -- the bare server (runs in a subprocess) ---------------------------------------------


async def _bare_serve(port: int, transcript_path: str) -> None:
    import logging

    from websockets.asyncio.server import serve

    # The readiness probe connects and leaves without a handshake; not an error here.
    logging.getLogger("websockets").setLevel(logging.CRITICAL)
    with open(transcript_path, "rb") as f:
        hello, messages = pickle.load(f)

    async def handler(ws) -> None:
        await ws.send(hello)
        async for _ in ws:
            for message in messages:
                await ws.send(message)

    async with serve(handler, "127.0.0.1", port, max_size=65536, **WS_SETTINGS):
        await asyncio.Future()


# -- the client side ----------------------------------------------------------------------


def _text_for_frames(count: int, codes_per_char: float = 1.0) -> str:
    # ToneRunner: codes_per_char codes (512 samples each) per character.
    chars = int(count * FRAME_SAMPLES / 512 / codes_per_char) + 1
    sentence = ("word " * (CHARS_PER_SENTENCE // 5))[: CHARS_PER_SENTENCE - 1].strip() + ". "
    text = ""
    while len(text) < chars:
        text += sentence
    return text[:chars]


async def _record(url: str, request: str) -> Transcript:
    """One utterance on our server; everything it sent, in order."""
    from websockets.asyncio.client import connect

    messages: list[str | bytes] = []
    async with connect(url, max_size=None, compression=None) as ws:
        hello = await ws.recv()
        await ws.send(request)
        while True:
            msg = await ws.recv()
            messages.append(msg)
            if isinstance(msg, str) and is_end(msg):
                break
    assert isinstance(hello, str)
    return hello, messages


def _cpu(proc: psutil.Process) -> float:
    times = proc.cpu_times()
    return times.user + times.system


def _loop_cpu(proc: psutil.Process) -> float:
    """CPU seconds of the process's main thread (the event loop in both servers)."""
    for thread in proc.threads():
        if thread.id == proc.pid:
            return thread.user_time + thread.system_time
    return 0.0


async def _one_run(proc: psutil.Process, url: str, request: str,
                   min_cpu: float) -> tuple[int, float, float, list[float]]:
    """Send ``request`` and read to ``done`` until the server used ``min_cpu`` seconds.

    Returns frames received, server CPU seconds, wall seconds and first-frame ms per round.
    """
    from websockets.asyncio.client import connect

    frames = 0
    firsts: list[float] = []
    cpu0 = _cpu(proc)
    start = time.perf_counter()
    async with connect(url, max_size=None, compression=None) as ws:
        await ws.recv()  # hello
        while True:
            sent = time.perf_counter()
            await ws.send(request)
            first = True
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    frames += 1
                    if first:
                        firsts.append((time.perf_counter() - sent) * 1000)
                        first = False
                elif is_end(msg):
                    break
            cpu = _cpu(proc) - cpu0
            if cpu >= min_cpu:
                break
    return frames, cpu, time.perf_counter() - start, firsts


def _measure(proc: psutil.Process, url: str, request: str, min_cpu: float) -> dict[str, float]:
    loop0 = _loop_cpu(proc)
    frames, cpu, seconds, firsts = asyncio.run(_one_run(proc, url, request, min_cpu))
    loop = _loop_cpu(proc) - loop0
    return {"frames": frames, "frames_per_s": frames / seconds,
            "cpu_us_per_frame": cpu / frames * 1e6,
            "loop_cpu_us_per_frame": loop / frames * 1e6,
            "first_frame_ms": statistics.median(firsts)}


def _median(samples: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(s[key] for s in samples) for key in samples[0]}


async def _hold_idle(url: str, count: int) -> int:
    from websockets.asyncio.client import connect

    conns = []
    try:
        for start in range(0, count, 100):
            batch = await asyncio.gather(
                *(connect(url, compression=None, open_timeout=30)
                  for _ in range(start, min(count, start + 100))),
                return_exceptions=True)
            conns.extend(c for c in batch if not isinstance(c, BaseException))
        await asyncio.sleep(1.0)
        alive = 0
        for c in conns:
            try:
                await asyncio.wait_for(c.ping(), 10)
                alive += 1
            except Exception:  # noqa: BLE001 - a dead connection is simply not counted
                pass
        return alive
    finally:
        await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)


def _start_ours(root: Path, port: int, text: str, connections: int,
                codes_per_char: float = 1.0) -> subprocess.Popen:
    """Our server from the source tree at ``root`` (tone runner, bench settings)."""
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen([sys.executable, *server_args(port, text, connections, codes_per_char)],
                            env=env, cwd=root)


def timestamps_figures(on: Sequence[dict[str, float]], off: Sequence[dict[str, float]]
                       ) -> dict[str, float]:
    """Paired figures of word timings' cost from rounds measured side by side
    (``on[i]`` right before or after ``off[i]``): the median and quartiles of
    the per-round ratios of CPU per frame, and the median per-round
    difference in first-frame time. Pairing cancels the load that drifts
    between rounds, which the ratio of the two medians does not.
    ``timestamps_loop_cost_paired``: per round, one plus the event loop's
    added CPU over the whole server's off (the word path runs on the loop;
    the model thread does the same work either way, yet its CPU time swings
    by a fifth from round to round): ``callgrind_timestamps_cost`` in CPU time."""
    ratios = spread(paired_ratios([r["cpu_us_per_frame"] for r in on],
                                  [r["cpu_us_per_frame"] for r in off]))
    loop = spread([1 + (a["loop_cpu_us_per_frame"] - b["loop_cpu_us_per_frame"]) / b["cpu_us_per_frame"]
                   for a, b in zip(on, off)])
    firsts = [a["first_frame_ms"] - b["first_frame_ms"] for a, b in zip(on, off)]
    return {
        "timestamps_cost_ratio_paired": round(ratios["median"], 4),
        "timestamps_cost_ratio_p25": round(ratios["p25"], 4),
        "timestamps_cost_ratio_p75": round(ratios["p75"], 4),
        "timestamps_loop_cost_paired": round(loop["median"], 4),
        "timestamps_loop_cost_p25": round(loop["p25"], 4),
        "timestamps_loop_cost_p75": round(loop["p75"], 4),
        "timestamps_added_first_frame_ms_paired": round(statistics.median(firsts), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench server")
    parser.add_argument("--quick", action="store_true", help="fewer samples, less CPU each")
    parser.add_argument("--frames", type=int, default=300, help="frames per utterance")
    parser.add_argument("--samples", type=int, default=None, help="alternating samples per side")
    parser.add_argument("--min-cpu", type=float, default=None,
                        help="server CPU seconds per sample (the counters tick every 10 ms)")
    parser.add_argument("--connections", type=int, default=1000, help="idle connections to hold")
    parser.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                        help="also run the server of this source tree, alternating with ours")
    parser.add_argument("--timestamps", action="store_true",
                        help="also measure ours with speak.timestamps (word timings)")
    parser.add_argument("--chunking", choices=("sentence", "token"), default="sentence")
    parser.add_argument("--codes-per-char", type=float, default=1.0,
                        help="tone runner audio per character (3.4: the rate of speech)")
    parser.add_argument("--callgrind", action="store_true",
                        help="with --timestamps: count instructions under callgrind instead of CPU time")
    parser.add_argument("--utterances", type=int, default=8, help="--callgrind: utterances a phase")
    parser.add_argument("--rounds", type=int, default=4, help="--callgrind: off/on rounds")
    parser.add_argument("--bare-serve", nargs=2, metavar=("PORT", "TRANSCRIPT"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.bare_serve:
        import uvloop

        uvloop.run(_bare_serve(int(args.bare_serve[0]), args.bare_serve[1]))
        return 0
    samples = args.samples or (3 if args.quick else 5)
    min_cpu = args.min_cpu or (0.5 if args.quick else 1.5)
    _raise_fd_limit(2 * args.connections + 256)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    text = _text_for_frames(args.frames, args.codes_per_char)
    # One id for every round: ids need only be unique among active utterances,
    # and a fixed one keeps the replayed transcript byte-identical.
    speak = {"type": "speak", "id": "bench", "text": text, "frame_ms": 100,
             "chunking": args.chunking}
    request = json.dumps(speak)
    timed_request = json.dumps({**speak, "timestamps": True})
    timed: list[dict[str, float]] = []
    if args.callgrind:
        from bench.server_callgrind import run

        counted = run(ROOT, text, request, timed_request, args.codes_per_char, args.utterances,
                      args.rounds)
        print(json.dumps({**counted, "chunking": args.chunking, "codes_per_char": args.codes_per_char}))
        return 0

    bare_port, our_port, base_port = free_port(), free_port(), free_port()
    ours = _start_ours(ROOT, our_port, text, args.connections, args.codes_per_char)
    procs = [ours]
    if args.baseline is not None:
        procs.append(_start_ours(args.baseline.resolve(), base_port, text, args.connections,
                                 args.codes_per_char))
    our_url = f"ws://127.0.0.1:{our_port}/v1/stream"
    bare_url = f"ws://127.0.0.1:{bare_port}/"
    base_url = f"ws://127.0.0.1:{base_port}/v1/stream"
    base: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            wait_http(our_port, "/readyz")
            if args.baseline is not None:
                wait_http(base_port, "/readyz")
                base_proc = psutil.Process(procs[1].pid)
                _measure(base_proc, base_url, request, 0.0)
            transcript = asyncio.run(_record(our_url, request))
            path = os.path.join(tmp, "transcript.pickle")
            with open(path, "wb") as f:
                pickle.dump(transcript, f)
            bare = subprocess.Popen([sys.executable, "-m", "bench.server", "--bare-serve",
                                     str(bare_port), path], env=env, cwd=ROOT)
            procs.append(bare)
            wait_port(bare_port)
            bare_proc, our_proc = psutil.Process(bare.pid), psutil.Process(ours.pid)
            _measure(bare_proc, bare_url, request, 0.0)  # warm both
            _measure(our_proc, our_url, request, 0.0)
            if args.timestamps:
                _measure(our_proc, our_url, timed_request, 0.0)
            bs: list[dict[str, float]] = []
            os_: list[dict[str, float]] = []
            sides = [(bs, bare_proc, bare_url, request)]
            if args.baseline is not None:
                sides.append((base, base_proc, base_url, request))
            sides.append((os_, our_proc, our_url, request))
            if args.timestamps:
                sides.append((timed, our_proc, our_url, timed_request))
            for i in range(samples):
                # Every other round in reverse order: a side measured right
                # after another (the same process, with timestamps) sees no
                # systematic drift from its place in the round.
                for into, proc, url, req in (sides if i % 2 == 0 else sides[::-1]):
                    into.append(_measure(proc, url, req, min_cpu))
            held = asyncio.run(_hold_idle(our_url, args.connections))
            rss_mb = our_proc.memory_info().rss / 2**20
        finally:
            stop(procs)
    b, o = _median(bs), _median(os_)
    frames_per_round = sum(isinstance(m, bytes) for m in transcript[1])
    frame_bytes = sum(len(m) for m in transcript[1] if isinstance(m, bytes))

    print(f"per utterance: {frames_per_round} frames, {frame_bytes} bytes, "
          f"{len(transcript[1]) - frames_per_round} text messages; "
          f"{samples} samples per side of >= {min_cpu} s server CPU; medians:")
    print(f"{'':24}{'bare websockets':>18}{'ours (tone)':>16}")
    print(f"{'frames per sample':24}{b['frames']:>18.0f}{o['frames']:>16.0f}")
    print(f"{'frames/s':24}{b['frames_per_s']:>18.0f}{o['frames_per_s']:>16.0f}")
    print(f"{'server CPU us/frame':24}{b['cpu_us_per_frame']:>18.1f}{o['cpu_us_per_frame']:>16.1f}")
    print(f"{'  event-loop thread':24}{b['loop_cpu_us_per_frame']:>18.1f}"
          f"{o['loop_cpu_us_per_frame']:>16.1f}")
    print(f"{'  other (model) threads':24}"
          f"{b['cpu_us_per_frame'] - b['loop_cpu_us_per_frame']:>18.1f}"
          f"{o['cpu_us_per_frame'] - o['loop_cpu_us_per_frame']:>16.1f}")
    print(f"{'first frame ms (p50)':24}{b['first_frame_ms']:>18.2f}{o['first_frame_ms']:>16.2f}")
    print(f"idle connections held: {held} / {args.connections}; server RSS {rss_mb:.0f} MiB")
    result = {
        "per_frame_cost_ratio": round(o["cpu_us_per_frame"] / b["cpu_us_per_frame"], 3),
        "cpu_us_per_frame_ours": round(o["cpu_us_per_frame"], 2),
        "cpu_us_per_frame_bare": round(b["cpu_us_per_frame"], 2),
        # ours split: the event loop (sessions, framing, encoding, outbox,
        # websockets) and the model thread (scheduler and the tone runner)
        "loop_cpu_us_per_frame_ours": round(o["loop_cpu_us_per_frame"], 2),
        "model_cpu_us_per_frame_ours": round(o["cpu_us_per_frame"] - o["loop_cpu_us_per_frame"], 2),
        "added_latency_per_frame_us": round(o["cpu_us_per_frame"] - b["cpu_us_per_frame"], 2),
        "added_first_frame_ms": round(o["first_frame_ms"] - b["first_frame_ms"], 3),
        "frames_per_s_ours": round(o["frames_per_s"]),
        "frames_per_s_bare": round(b["frames_per_s"]),
        "connections_held": held,
        "server_rss_mb": round(rss_mb),
        "codes_per_char": args.codes_per_char,
    }
    if base:
        m = _median(base)
        print(f"baseline ({args.baseline}): server CPU {m['cpu_us_per_frame']:.1f} us/frame, "
              f"event loop {m['loop_cpu_us_per_frame']:.1f} us/frame")
        result["cpu_us_per_frame_baseline"] = round(m["cpu_us_per_frame"], 2)
        result["loop_cpu_us_per_frame_baseline"] = round(m["loop_cpu_us_per_frame"], 2)
        result["per_frame_cost_vs_baseline"] = round(o["cpu_us_per_frame"] / m["cpu_us_per_frame"], 3)
    if timed:
        t = _median(timed)
        print(f"with timestamps: server CPU {t['cpu_us_per_frame']:.1f} us/frame, first frame "
              f"{t['first_frame_ms']:.2f} ms (without: {o['cpu_us_per_frame']:.1f}, "
              f"{o['first_frame_ms']:.2f})")
        result["cpu_us_per_frame_timestamps"] = round(t["cpu_us_per_frame"], 2)
        result["timestamps_cost_ratio"] = round(t["cpu_us_per_frame"] / o["cpu_us_per_frame"], 3)
        result["timestamps_added_first_frame_ms"] = round(
            t["first_frame_ms"] - o["first_frame_ms"], 3)
        paired = timestamps_figures(timed, os_)
        print(f"paired by round: on/off {paired['timestamps_cost_ratio_paired']:.3f} "
              f"(p25 {paired['timestamps_cost_ratio_p25']:.3f}, p75 "
              f"{paired['timestamps_cost_ratio_p75']:.3f}), event loop's added CPU "
              f"{paired['timestamps_loop_cost_paired']:.3f} (p25 {paired['timestamps_loop_cost_p25']:.3f}, "
              f"p75 {paired['timestamps_loop_cost_p75']:.3f}), first frame "
              f"{paired['timestamps_added_first_frame_ms_paired']:+.2f} ms")
        result.update(paired)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
