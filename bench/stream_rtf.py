"""One streamed interactive utterance through the real server, timed end to end.

``StreamServer(precision, threads)`` starts ``python -m realtime serve`` as a
subprocess with full-size random weights on the CPU (``--cpu-threads``
threads), waits for ``/readyz``, connects a ``RealtimeClient`` over a real
socket and speaks ``TEXT`` (interactive lane, ``chunking: token``, a fixed
seed), reading the audio as long as it comes out. Then it reads ``/metrics``.

Reported, per run:
- ``rtf``: seconds from ``speak`` to the last audio frame / seconds of audio;
- ``first_audio_ms``: ``speak`` -> first frame;
- ``server_step_ms``: the server's wall time per model step while the
  utterance ran (``speak`` -> last frame over the steps it took), i.e. the
  runtime's step plus everything the serving path adds around it;
- ``execute_ms``: the mean time of ``Runner.execute`` inside the server
  (``chattts_step_seconds``), which contention from the serving threads
  slows too;
- ``steps`` and ``audio_s``.

The server records every segment request and step plan its runner gets
(``--record-steps``); ``speak()`` returns the utterance's records, and
``step_log.replay`` runs exactly that work (the same plans, batches and
riders included) through a runner in the calling process, without the
server. Its ``step_ms`` beside the server's ``server_step_ms`` is the serving
path's overhead.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench.processes import ROOT, free_port, stop, wait_http
from realtime.engine import step_log

TEXT = ("The weather today is calm and bright, with a light wind from the west. "
        "Later in the afternoon a few clouds may gather over the hills. "
        "Tomorrow looks warmer, so it is a good day for a long walk by the river.")
SEED = 7
# The server's slots and KV length, which a replaying runner must share (a
# shorter cache would end segments earlier): ``RuntimeOptions(**RUNNER_OPTIONS)``.
RUNNER_OPTIONS = dict(max_slots=8, kv_buckets=(256, 512))


def _metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} ([0-9.eE+-]+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def _metrics(port: int) -> tuple[float, float]:
    """(sum of step seconds, number of steps) so far."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return _metric(text, "chattts_step_seconds_sum"), _metric(text, "chattts_step_seconds_count")


async def _speak(url: str, text: str, seed: int) -> dict:
    from clients.client import RealtimeClient
    from protocol import Params

    async with RealtimeClient(url, open_timeout=30) as client:
        start = time.monotonic()
        utt = await client.speak(text, chunking="token", lane="interactive",
                                 params=Params(seed=seed))
        samples, first, last = 0, None, start
        async for chunk in utt.audio():
            samples += chunk.sample_count
            last = chunk.received_at
            first = first if first is not None else chunk.received_at
        await utt.result()
        rate = utt.sample_rate
    return dict(wall_s=last - start, audio_s=samples / rate,
                first_audio_ms=None if first is None else (first - start) * 1e3)


class StreamServer:
    """``python -m realtime serve`` with full-size random weights on the CPU, as a
    subprocess, ready and warmed on entering; ``speak()`` times one utterance.
    ``extra_args``/``extra_env`` go to the server (experiments with settings);
    ``record_steps=False`` spares it the step log (``speak()``'s records are then empty)."""

    def __init__(self, precision: str, threads: int = 2, extra_args: tuple[str, ...] = (),
                 extra_env: dict[str, str] | None = None, ready_timeout: float = 300.0,
                 record_steps: bool = True):
        self.port = free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="stream-rtf-")
        self.steps_path = os.path.join(self._dir.name, "steps.jsonl")
        self.url = f"ws://127.0.0.1:{self.port}/v1/stream"
        self._env = dict(os.environ, **(extra_env or {}),
                         PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self._cmd = [sys.executable, "-m", "realtime", "serve", "--weights", "random",
                     "--device", "cpu", "--precision", precision, "--cpu-threads", str(threads),
                     "--max-slots", str(RUNNER_OPTIONS["max_slots"]),
                     "--kv-buckets", ",".join(map(str, RUNNER_OPTIONS["kv_buckets"])),
                     "--port", str(self.port), "--log-level", "warning",
                     *(("--record-steps", self.steps_path) if record_steps else ()), *extra_args]
        self._record = record_steps
        self._ready_timeout = ready_timeout
        self._proc: subprocess.Popen | None = None

    def __enter__(self) -> StreamServer:
        self._proc = subprocess.Popen(self._cmd, env=self._env, cwd=ROOT)
        try:
            # A patient request timeout: while the model thread builds full-size
            # weights the loop answers slowly, and a client hanging up early only
            # makes the server log a failed handshake.
            wait_http(self.port, "/readyz", timeout=self._ready_timeout, request_timeout=30.0)
            asyncio.run(_speak(self.url, "Warm up.", SEED))  # first-use costs
        except BaseException:
            stop([self._proc])
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            stop([self._proc])
        self._dir.cleanup()

    def speak(self, text: str = TEXT, seed: int = SEED) -> dict:
        """One utterance: the keys of the module docstring, and ``records``:
        what the server's runner was asked to do for it (``step_log``)."""
        before = _metrics(self.port)
        first_line = len(step_log.read(self.steps_path)) if self._record else 0
        run = asyncio.run(_speak(self.url, text, seed))
        after = _metrics(self.port)
        run["records"] = step_log.read(self.steps_path, first_line) if self._record else []
        steps = after[1] - before[1]
        run["steps"] = int(steps)
        run["execute_ms"] = (after[0] - before[0]) / steps * 1e3 if steps else None
        run["server_step_ms"] = run["wall_s"] / steps * 1e3 if steps else None
        run["rtf"] = run["wall_s"] / run["audio_s"] if run["audio_s"] else None
        return run


def measure(precision: str, threads: int = 2, **server_options) -> dict:
    """Start a server, speak one utterance (after a warm-up one), stop it."""
    with StreamServer(precision, threads, **server_options) as server:
        return server.speak()
