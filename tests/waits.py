"""Waiting on a condition with a deadline, instead of sleeping and then asserting."""

from __future__ import annotations

import time

from conftest import http_get


def until_status(port: int, path: str, status: int, timeout: float = 10.0) -> None:
    """Poll ``GET path`` until it answers ``status``; AssertionError after ``timeout``."""
    end = time.monotonic() + timeout
    seen = None
    while time.monotonic() < end:
        try:
            seen = http_get(port, path, timeout=1)[0]
        except OSError as exc:
            seen = repr(exc)
        if seen == status:
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} still answered {seen}, not {status}, after {timeout} s")
