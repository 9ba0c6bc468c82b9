"""The servers of the overload bench: set-ups, one subprocess each, the CPU's name.

Thread: plain synchronous code (start, poll /readyz, stop).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from bench.processes import ROOT, free_port

MODES = ("capacity", "queue-only")
# Every set-up: no text rate limits (the bench offers far more than a person would).
COMMON = ["--text-chars-per-minute", "0", "--token-text-chars-per-minute", "0", "--log-level", "warning"]


@dataclass(frozen=True)
class Setup:
    args: list[str]
    round_s: float  # offered traffic per round
    calibrate_s: float  # closed-loop capacity measurement
    grace_s: float  # after a round, for admitted utterances to end
    start_timeout_s: float


SETUPS = {
    # A GPU-like step: 10 ms at any batch up to 64; speech-like lengths.
    "flat": Setup(["--weights", "tone", "--tone-step-ms", "10", "--tone-codes-per-char", "3.4",
                   "--max-slots", "64", "--batch-sizes", "1,2,4,8,16,32,64", *COMMON],
                  round_s=6.0, calibrate_s=5.0, grace_s=8.0, start_timeout_s=60.0),
    # The real runtime, tiny random weights, on the CPU.
    "tiny": Setup(["--weights", "tiny-random", "--device", "cpu", *COMMON],
                  round_s=8.0, calibrate_s=12.0, grace_s=6.0, start_timeout_s=180.0),
}


class ServerProcess:
    """``python -m realtime serve`` on a free loopback port, its log in ``log_path``."""

    def __init__(self, args: list[str], log_path: Path) -> None:
        self.args = args
        self.log_path = log_path
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/stream"

    def start(self) -> None:
        cmd = [sys.executable, "-m", "realtime", "serve", "--host", "127.0.0.1",
               "--port", str(self.port), *self.args]
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/readyz", timeout=1) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"server not ready in {timeout} s: {self.log_path.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


def cpu_name() -> str:
    """``lscpu``'s model name (figures are only comparable on the same CPU)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return "unknown"
