"""Servers as processes, for every bench that starts one: a free loopback
port, waiting until it answers, and stopping it (terminate, then kill).

Thread: the caller's.
"""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the source tree a server runs from


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_http(port: int, path: str, timeout: float = 60.0, request_timeout: float = 1.0) -> None:
    """Until ``GET path`` answers 200 (RuntimeError after ``timeout`` s)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                        timeout=request_timeout) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server on {port} not ready")


def wait_port(port: int, timeout: float = 30.0) -> None:
    """Until something accepts connections on ``port``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def stop(procs: list[subprocess.Popen], timeout: float = 10.0) -> None:
    """Terminate ``procs``; kill any still running ``timeout`` seconds later."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
