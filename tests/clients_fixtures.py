"""Real servers for the client tests: `python -m realtime serve` as subprocesses.

Two kinds, each started once per test process on first use and stopped at exit, so all
client test modules share them:
- `server`: `--weights tone` (the synthetic runner, 10 ms a step): the whole wire path
  with audio whose length follows the text, fast enough for many tests;
- `model_server`: `--weights tiny-random --device cpu`: the real model runtime with
  small random weights (slow on CPU, audio length random: keep its tests few).
`CLIENTS_TEST_PORT` / `CLIENTS_TEST_MODEL_PORT` point them at servers already running.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RunningServer:
    port: int
    process: subprocess.Popen
    log_path: Path

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/stream"


_servers: dict[str, RunningServer] = {}
_failures: dict[str, str] = {}
KINDS = {
    "tone": (["--weights", "tone", "--tone-step-ms", "10"], "CLIENTS_TEST_PORT"),
    # queue-only: these test the client, not admission (a CPU keeps one stream at most).
    "tiny-random": (["--weights", "tiny-random", "--device", "cpu", "--admission", "queue-only"],
                    "CLIENTS_TEST_MODEL_PORT"),
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as resp:
            return resp.status == 200
    except OSError:
        return False


def _stop() -> None:
    for server in _servers.values():
        if server.process is not None and server.process.poll() is None:
            server.process.terminate()
            try:
                server.process.wait(10)
            except subprocess.TimeoutExpired:
                server.process.kill()


atexit.register(_stop)


def start_server(args: list[str]) -> RunningServer:
    """Start a server subprocess and wait for /readyz; raises RuntimeError on failure."""
    port = free_port()
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"clients-test-server-{port}.log"
    cmd = [sys.executable, "-m", "realtime", "serve", "--host", "127.0.0.1", "--port",
           str(port), *args]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log_file, stderr=subprocess.STDOUT,
                                env=env)
    server = RunningServer(port, proc, log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}: "
                               f"{log_path.read_text()[-2000:]}")
        if _ready(f"{server.http}/readyz"):
            return server
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server not ready after {START_TIMEOUT_S} s: "
                       f"{log_path.read_text()[-2000:]}")


def shared_server(kind: str = "tone") -> RunningServer:
    """The process-wide test server of `kind` (a start failure fails every user)."""
    args, port_env = KINDS[kind]
    if os.environ.get(port_env):
        return RunningServer(int(os.environ[port_env]), None, Path(os.devnull))  # type: ignore[arg-type]
    if kind in _failures:
        pytest.fail(_failures[kind])
    server = _servers.get(kind)
    if server is None or server.process.poll() is not None:
        try:
            server = _servers[kind] = start_server(args)
        except RuntimeError as exc:
            _failures[kind] = f"could not start the {kind} test server: {exc}"
            pytest.fail(_failures[kind])
    return server


def run_example(module: str, server: RunningServer, out: Path, *args: str) -> tuple:
    """Run ``python -m <module> -o out --url <server> ...``; (samples, rate) of its WAV."""
    from clients.wav import read_wav

    proc = subprocess.run([sys.executable, "-m", module, "-o", str(out), "--url", server.ws,
                           *args], capture_output=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    return read_wav(out)


@pytest.fixture
def server() -> RunningServer:
    """A server with the synthetic tone runner."""
    return shared_server("tone")


@pytest.fixture
def model_server() -> RunningServer:
    """A server with the real runtime on tiny-random weights (CPU)."""
    return shared_server("tiny-random")
