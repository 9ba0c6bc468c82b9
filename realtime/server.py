"""The server: one websockets server, one model worker, many sessions.

``Server`` binds the port first (so ``/healthz`` answers at once), then builds
and warms the runner on the model thread; ``/readyz`` and ``/v1/stream`` open
when that is done. ``drain`` implements the first SIGTERM: stop accepting,
refuse new speaks, let in-flight utterances finish within the bound, then end
the rest with ``shutting_down`` and close every connection with 1001.

Thread: event loop (the worker owns its own thread).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path

from websockets.asyncio.server import Server as WsServer
from websockets.asyncio.server import ServerConnection, serve

from protocol import FORMATS, Hello, Limits, ModelInfo, Offer
from realtime.audio import SUPPORTED_RATES
from realtime.config import ServerConfig
from realtime.http import HttpRoutes
from realtime.logs import redact_websockets_logs
from realtime.metrics import Metrics
from realtime.overload import scheduler_policy
from realtime.ratelimit import QuotaBook, QuotaLimits
from realtime.runtime.api import SAMPLE_RATE, Runner, WeightsKind
from realtime.session import Session
from realtime.worker import ModelWorker
from scheduler import SchedulerConfig

log = logging.getLogger(__name__)


def runner_factory(config: ServerConfig) -> Callable[[], Runner]:
    """How to build the configured runner (called on the model thread)."""
    if config.weights == "tone":
        def build_tone() -> Runner:
            from realtime.runtime.tone import ToneRunner

            return ToneRunner(step_seconds=config.tone_step_ms / 1000.0,
                              codes_per_step=config.tone_codes_per_step,
                              codes_per_char=config.tone_codes_per_char,
                              max_slots=config.max_slots, batch_sizes=config.batch_sizes,
                              kv_buckets=config.kv_buckets)
        return build_tone

    def build_model() -> Runner:
        from realtime.runtime import build_runner

        return build_runner(config.runtime_options())
    return build_model


class Server:
    def __init__(self, config: ServerConfig,
                 runner_factory_: Callable[[], Runner] | None = None,
                 scheduler_options: dict[str, object] | None = None) -> None:
        """``runner_factory_`` overrides the runner the config names (tests);
        ``scheduler_options`` are extra ``SchedulerConfig`` fields (queue
        bounds, policy knobs) on top of what the runner and config decide."""
        self.config = config
        self._scheduler_options = dict(scheduler_options or {})
        self.metrics = Metrics()
        self.worker = ModelWorker(runner_factory_ or runner_factory(config),
                                  self._scheduler_config, self.metrics)
        self.http = HttpRoutes(self, Path(config.web_root) if config.web_root else None)
        self.ready = False
        self.draining = False
        self.startup_error: str | None = None  # for the log: may name local paths
        self.startup_failure: str | None = None  # for /readyz: the exception type only
        self.hello: Hello | None = None
        self.offer: Offer | None = None
        self.voices: tuple[str, ...] = ()
        self.weights_kind: str | None = None
        self.device: str | None = None
        self.sessions: set[Session] = set()
        self.active_utterances = 0
        self.quotas = QuotaBook(QuotaLimits(config.text_chars_per_minute,
                                            config.token_text_chars_per_minute,
                                            config.token_max_active))
        self._all_idle = asyncio.Event()
        self._all_idle.set()
        self._job_ids = itertools.count(1)
        self._ws: WsServer | None = None
        self._load_task: asyncio.Task[None] | None = None
        self._closed = asyncio.Event()

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Listen now; load and warm the model in the background."""
        c = self.config
        redact_websockets_logs()
        self._ws = await serve(
            self._handle, c.host, c.port,
            process_request=self.http.process_request,
            max_size=c.max_message_bytes,
            compression=None,  # audio does not compress; JSON is small
            ping_interval=20, ping_timeout=20, close_timeout=5,
            max_queue=16, write_limit=64 * 1024,
            backlog=max(128, min(c.max_connections, 4096)),
        )
        log.info("listening on http://%s:%d (WebSocket at /v1/stream)", c.host, self.port)
        self._load_task = asyncio.create_task(self._load(), name="model-load")

    async def wait_ready(self) -> None:
        """Until the model is warm; raises what loading raised."""
        assert self._load_task is not None, "start() first"
        await asyncio.shield(self._load_task)

    async def _load(self) -> None:
        started = time.perf_counter()
        log_hardware(self.config)
        try:
            await self.worker.start()
        except Exception as exc:
            self.startup_error = f"{type(exc).__name__}: {exc}"
            self.startup_failure = type(exc).__name__
            raise
        runner = self.worker.runner
        assert runner is not None
        self.voices = tuple(runner.voices)
        self.weights_kind = runner.weights_kind.value
        self.device = runner.device
        self.offer = Offer(formats=FORMATS, sample_rates=SUPPORTED_RATES, voices=self.voices,
                           max_text_chars=self.config.max_text_chars)
        self.hello = Hello(
            sample_rate=SAMPLE_RATE, formats=FORMATS, sample_rates=SUPPORTED_RATES,
            voices=self.voices,
            limits=Limits(self.config.max_text_chars, self.config.max_active,
                          self.config.max_message_bytes),
            model=ModelInfo("chattts", self.weights_kind, runner.device),
        )
        if runner.weights_kind is not WeightsKind.CHECKPOINT:
            log.warning("serving %s weights: the audio is noise, not speech", self.weights_kind)
        log.info("ready in %.2f s: device=%s weights=%s batch_sizes=%s kv_buckets=%s max_slots=%d",
                 time.perf_counter() - started, runner.device, self.weights_kind,
                 runner.batch_sizes, runner.kv_buckets, runner.max_slots)
        self.ready = True

    def _scheduler_config(self, runner: Runner) -> SchedulerConfig:
        sizes = tuple(runner.batch_sizes)
        return SchedulerConfig(
            batch_sizes=sizes,
            kv_buckets=tuple(runner.kv_buckets),
            prompt_buckets=tuple(runner.prompt_buckets),
            max_slots=runner.max_slots,
            interactive_batch_size=min(self.config.interactive_batch_size, max(sizes)),
            # Admission from the flags; explicit scheduler_options win.
            **{**scheduler_policy(self.config, runner), **self._scheduler_options},  # type: ignore[arg-type]
        )

    @property
    def port(self) -> int:
        assert self._ws is not None
        return self._ws.sockets[0].getsockname()[1] if self._ws.sockets else self.config.port

    @property
    def connection_count(self) -> int:
        return len(self.sessions)

    async def drain(self) -> None:
        """Graceful shutdown (first SIGTERM); returns when everything is closed."""
        if self.draining:
            await self._closed.wait()
            return
        self.draining = True
        log.info("draining: %d utterances in flight, %d connections, up to %.1f s",
                 self.active_utterances, len(self.sessions), self.config.drain_timeout)
        try:
            await asyncio.wait_for(self._all_idle.wait(), self.config.drain_timeout)
        except TimeoutError:
            log.warning("drain timeout: ending %d utterances with shutting_down",
                        self.active_utterances)
            await asyncio.gather(*(s.shut_down("the server is shutting down")
                                   for s in list(self.sessions)))
        else:
            await asyncio.gather(*(_flushed(s) for s in list(self.sessions)))
        await self.close()

    async def close(self) -> None:
        """Close every connection (1001) and stop the model thread."""
        if self._ws is not None:
            self._ws.close(close_connections=True)
            await self._ws.wait_closed()
        if self._load_task is not None and not self._load_task.done():
            self._load_task.cancel()
        await self.worker.stop()
        self._closed.set()
        log.info("server closed")

    # -- connections and utterances ------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        session = Session(ws, self)
        self.sessions.add(session)
        self.metrics.connections.set(len(self.sessions))
        try:
            await session.run()
        finally:
            self.sessions.discard(session)
            self.metrics.connections.set(len(self.sessions))

    def next_job_id(self) -> int:
        return next(self._job_ids)

    def utterance_started(self) -> None:
        self.active_utterances += 1
        self._all_idle.clear()
        self.metrics.active_utterances.set(self.active_utterances)

    def utterance_ended(self, utterance: object, outcome: str) -> None:
        self.active_utterances -= 1
        if self.active_utterances <= 0:
            self.active_utterances = 0
            self._all_idle.set()
        m = self.metrics
        m.active_utterances.set(self.active_utterances)
        m.utterances.labels(outcome).inc()
        first = getattr(utterance, "first_audio_seconds", None)
        if first is not None:
            m.first_audio.labels(utterance.lane.value).observe(first)  # type: ignore[attr-defined]
        audio = getattr(utterance, "audio_seconds", 0.0)
        if audio:
            m.audio_seconds.inc(audio)
        if getattr(utterance, "deadline_met", None) is False:
            m.deadline_misses.inc()


async def _flushed(session: Session) -> None:
    try:
        await asyncio.wait_for(session.outbox.wait_flushed(), 2.0)
    except TimeoutError:
        pass


def log_hardware(config: ServerConfig) -> None:
    """Log what the machine offers; the runtime logs what it chose from it."""
    cpus = os.cpu_count() or 0
    if config.weights == "tone":
        log.info("hardware: %d CPUs; synthetic tone runner (no model)", cpus)
        return
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        log.info("hardware: %d CPUs; torch not importable", cpus)
        return
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            log.info("hardware: cuda:%d %s, %.1f GiB, compute %d.%d; %d CPUs", i, props.name,
                     props.total_memory / 2**30, props.major, props.minor, cpus)
    else:
        log.info("hardware: no CUDA device; CPU fallback with %d CPUs, %d torch threads",
                 cpus, torch.get_num_threads())
