"""Server overhead bench: our server (ToneRunner, no model) vs a bare websockets loop.

``python -m realtime.bench server [--quick] [--frames N] [--connections N]``

Both servers run as subprocesses on 127.0.0.1 and send the same frames: 100 ms
of 24 kHz s16 audio (4800 bytes + the 12-byte header). The bare server answers
any text message with N pre-built frames and a ``done`` text; ours runs the
whole path (protocol decode, sentence split, model thread with a synthetic
runner, scheduler, framing, encoding, outbox). Measured per side: frames/s at
the client, server CPU seconds per frame (psutil), and the time to the first
frame. Then ``--connections`` idle WebSocket connections are opened to our
server and held. The last stdout line is one JSON object with
``per_frame_cost_ratio`` (ours / bare CPU per frame), ``added_first_frame_ms``,
``frames_per_s_ours``/``_bare`` and ``connections_held``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[2]
FRAME_SAMPLES = 2400  # 100 ms at 24 kHz
CHARS_PER_SENTENCE = 140


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, wanted), hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return target


# -- the bare server (runs in a subprocess) ---------------------------------------------


def _bare_frames(count: int) -> list[bytes]:
    import numpy as np

    from protocol import FLAG_SEGMENT_END, FrameHeader, pack_frame
    from protocol.pcm import encode_samples

    n = np.arange(FRAME_SAMPLES)
    payload = encode_samples((0.3 * np.sin(2 * np.pi * 220 * n / 24000)).astype(np.float32),
                             "pcm_s16le")
    return [pack_frame(FrameHeader(FLAG_SEGMENT_END if i == count - 1 else 0, 0, 1, i), payload)
            for i in range(count)]


async def _bare_serve(port: int, count: int) -> None:
    from websockets.asyncio.server import serve

    frames = _bare_frames(count)

    async def handler(ws) -> None:
        async for _ in ws:
            for frame in frames:
                await ws.send(frame)
            await ws.send('{"type":"done"}')

    async with serve(handler, "127.0.0.1", port, compression=None, max_size=65536):
        await asyncio.Future()


# -- the client side ----------------------------------------------------------------------


def _text_for_frames(count: int) -> str:
    # ToneRunner: one code (512 samples) per character.
    chars = int(count * FRAME_SAMPLES / 512) + 1
    sentence = ("word " * (CHARS_PER_SENTENCE // 5))[: CHARS_PER_SENTENCE - 1].strip() + ". "
    text = ""
    while len(text) < chars:
        text += sentence
    return text[:chars]


async def _one_run(url: str, request: str, rounds: int) -> tuple[int, float, float]:
    """Send ``request`` ``rounds`` times, reading to ``done``; frames, seconds, first-frame ms."""
    from websockets.asyncio.client import connect

    frames = 0
    firsts = []
    async with connect(url, max_size=None, compression=None) as ws:
        if "v1/stream" in url:
            await ws.recv()  # hello
        start = time.perf_counter()
        for i in range(rounds):
            sent = time.perf_counter()
            await ws.send(request.replace("ROUND", str(i)))
            first = True
            while True:
                msg = await ws.recv()
                if isinstance(msg, bytes):
                    frames += 1
                    if first:
                        firsts.append((time.perf_counter() - sent) * 1000)
                        first = False
                elif '"done"' in msg or '"error"' in msg:
                    if '"error"' in msg:
                        raise RuntimeError(msg)
                    break
        seconds = time.perf_counter() - start
    firsts.sort()
    return frames, seconds, firsts[len(firsts) // 2]


def _measure(proc: psutil.Process, url: str, request: str, rounds: int) -> dict[str, float]:
    cpu0 = proc.cpu_times()
    frames, seconds, first_ms = asyncio.run(_one_run(url, request, rounds))
    cpu1 = proc.cpu_times()
    cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    return {"frames": frames, "seconds": seconds, "frames_per_s": frames / seconds,
            "cpu_us_per_frame": cpu / frames * 1e6, "first_frame_ms": first_ms}


async def _hold_idle(url: str, count: int) -> int:
    from websockets.asyncio.client import connect

    conns = []
    try:
        for start in range(0, count, 100):
            batch = await asyncio.gather(
                *(connect(url, compression=None, open_timeout=30) for _ in range(start, min(count, start + 100))),
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


def _wait_http(port: int, path: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=1) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on {port} not ready")


def _wait_port(port: int, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m realtime.bench server")
    parser.add_argument("--quick", action="store_true", help="fewer frames and rounds")
    parser.add_argument("--frames", type=int, default=None, help="frames per utterance")
    parser.add_argument("--rounds", type=int, default=None, help="utterances per side")
    parser.add_argument("--connections", type=int, default=1000, help="idle connections to hold")
    parser.add_argument("--bare-serve", nargs=2, type=int, metavar=("PORT", "FRAMES"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.bare_serve:
        import uvloop

        uvloop.run(_bare_serve(*args.bare_serve))
        return 0
    frames = args.frames or (300 if args.quick else 1000)
    rounds = args.rounds or (3 if args.quick else 6)
    _raise_fd_limit(2 * args.connections + 256)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    text = _text_for_frames(frames)

    bare_port, our_port = _free_port(), _free_port()
    bare = subprocess.Popen([sys.executable, "-m", "realtime.bench.server", "--bare-serve",
                             str(bare_port), str(frames)], env=env, cwd=ROOT)
    ours = subprocess.Popen(
        [sys.executable, "-m", "realtime", "serve", "--weights", "tone", "--port", str(our_port),
         "--tone-codes-per-step", "64",
         "--max-text-chars", str(len(text) + 10), "--max-message-bytes", str(4 * len(text) + 1024),
         "--max-connections", str(args.connections + 100), "--log-level", "warning"],
        env=env, cwd=ROOT)
    try:
        _wait_port(bare_port)
        _wait_http(our_port, "/readyz")
        request = json.dumps({"type": "speak", "id": "b-ROUND", "text": text, "frame_ms": 100})
        # warm both once, then measure
        _measure(psutil.Process(bare.pid), f"ws://127.0.0.1:{bare_port}/", "go", 1)
        _measure(psutil.Process(ours.pid), f"ws://127.0.0.1:{our_port}/v1/stream", request, 1)
        b = _measure(psutil.Process(bare.pid), f"ws://127.0.0.1:{bare_port}/", "go", rounds)
        o = _measure(psutil.Process(ours.pid), f"ws://127.0.0.1:{our_port}/v1/stream", request,
                     rounds)
        held = asyncio.run(_hold_idle(f"ws://127.0.0.1:{our_port}/v1/stream", args.connections))
        rss_mb = psutil.Process(ours.pid).memory_info().rss / 2**20
    finally:
        for p in (bare, ours):
            p.terminate()
        for p in (bare, ours):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()

    print(f"{'':24}{'bare websockets':>18}{'ours (tone)':>16}")
    print(f"{'frames':24}{b['frames']:>18}{o['frames']:>16}")
    print(f"{'frames/s':24}{b['frames_per_s']:>18.0f}{o['frames_per_s']:>16.0f}")
    print(f"{'server CPU us/frame':24}{b['cpu_us_per_frame']:>18.1f}{o['cpu_us_per_frame']:>16.1f}")
    print(f"{'first frame ms (p50)':24}{b['first_frame_ms']:>18.2f}{o['first_frame_ms']:>16.2f}")
    print(f"idle connections held: {held} / {args.connections}; server RSS {rss_mb:.0f} MiB")
    result = {
        "per_frame_cost_ratio": round(o["cpu_us_per_frame"] / b["cpu_us_per_frame"], 3),
        "added_latency_per_frame_us": round(o["cpu_us_per_frame"] - b["cpu_us_per_frame"], 2),
        "added_first_frame_ms": round(o["first_frame_ms"] - b["first_frame_ms"], 3),
        "frames_per_s_ours": round(o["frames_per_s"]),
        "frames_per_s_bare": round(b["frames_per_s"]),
        "connections_held": held,
        "server_rss_mb": round(rss_mb),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
