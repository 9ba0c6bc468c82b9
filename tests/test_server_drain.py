"""The real process: `python -m realtime serve`, SIGTERM drains, a second signal forces exit."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest
from conftest import ROOT, free_port, start_server_process, wait_ready
from waits import until_status
from websockets.exceptions import ConnectionClosed, InvalidStatus

from protocol import Error


@pytest.fixture
def process():
    procs: list[subprocess.Popen] = []

    def start(*flags: str) -> tuple[subprocess.Popen, int]:
        port = free_port()
        proc = start_server_process(port, *flags)
        procs.append(proc)
        wait_ready(port, proc)
        return proc, port

    yield start
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


async def test_sigterm_drains_in_flight_work_then_closes_1001(process, ws_connect):
    proc, port = process("--tone-step-ms", "10", "--drain-timeout", "20")
    client = await ws_connect(f"ws://127.0.0.1:{port}/v1/stream")
    await client.send({"type": "speak", "id": "inflight", "text": "Finish me please. " * 8})
    await client.recv()  # started
    proc.send_signal(signal.SIGTERM)
    await asyncio.to_thread(until_status, port, "/readyz", 503)
    with pytest.raises(InvalidStatus) as info:
        await ws_connect(f"ws://127.0.0.1:{port}/v1/stream")
    assert info.value.response.status_code == 503
    await client.send({"type": "speak", "id": "refused", "text": "New work."})
    t = (await client.collect(["inflight", "refused"], timeout=20))
    t["inflight"].check_done()  # in-flight work finished
    assert t["refused"].terminal.code == "shutting_down"
    with pytest.raises(ConnectionClosed) as info:
        for _ in range(10):
            await client.recv()
    assert info.value.rcvd is not None and info.value.rcvd.code == 1001
    assert await asyncio.to_thread(proc.wait, 10) == 0
    out = proc.stdout.read().decode()
    assert "draining" in out and "server closed" in out


async def test_drain_bound_ends_work_with_shutting_down(process, ws_connect):
    proc, port = process("--tone-step-ms", "20", "--drain-timeout", "0.3")
    client = await ws_connect(f"ws://127.0.0.1:{port}/v1/stream")
    await client.send({"type": "speak", "id": "long", "text": "A long one. " * 30})
    await client.recv()
    proc.send_signal(signal.SIGTERM)
    t = (await client.collect(["long"], timeout=10))["long"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "shutting_down"
    assert await asyncio.to_thread(proc.wait, 10) == 0


def test_second_signal_forces_exit(process):
    proc, port = process("--tone-step-ms", "50", "--drain-timeout", "30")
    import socket

    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/v1/stream") as ws:
        ws.recv()
        ws.send('{"type":"speak","id":"x","text":"' + "Long. " * 50 + '"}')
        ws.recv()
        proc.send_signal(signal.SIGTERM)
        until_status(port, "/readyz", 503)  # draining: the long utterance has ~15 s to go
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 1
    del socket


def test_startup_failure_is_one_line_and_exit_2(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-m", "realtime", "--port", str(free_port()), "--device", "tpu"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert "--device must be auto, cpu or cuda" in result.stderr
    assert "Traceback" not in result.stderr
