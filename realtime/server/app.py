"""The server: one websockets server, one model worker, many sessions.

``Server`` binds the port first (so ``/healthz`` answers at once), then builds
and warms the runner on the model thread and the sentence reader (the
normalizer) on the text thread; ``/readyz`` and ``/v1/stream`` open when both
are done. Its parts: ``ServiceState`` (lifecycle and what the model
offers), ``Accounting`` (connections, utterances, metrics), the HTTP front
(``HttpFront``: one HTTP parser, one route table and one gate for every
request, the WebSocket upgrade handed to websockets), one ``Session`` per
connection and the
``ModelWorker``.

Lifecycle (``serve``, like uvicorn's): start -> serve -> shut down. A
shutdown request drains: stop accepting, refuse new speaks, let in-flight
utterances finish within ``drain_timeout``, then end the rest with
``shutting_down`` and close every connection with 1001. A second request
forces the same path without the waiting.

Thread: event loop (the worker owns its own thread).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import cast

from websockets.asyncio.server import Server as WsServer
from websockets.asyncio.server import ServerConnection, serve

from protocol import Hello, Limits, ModelInfo, Offer
from realtime.audio.formats import offered_formats
from realtime.audio.framer import SUPPORTED_RATES
from realtime.engine import startup_clock
from realtime.engine.api import SAMPLE_RATE, Runner, WeightsKind
from realtime.server.accounting import Accounting
from realtime.server.config import ServerConfig
from realtime.server.http.front import HttpFront
from realtime.server.http.gate import Gate
from realtime.server.http.http1 import Handler, HttpLimits
from realtime.server.http.routes import SPEECH_PATH, VOICES_PATH, HttpRoutes
from realtime.server.http.static import StaticFiles
from realtime.server.lifecycle import (
    EXIT_DEVICE_LOST,
    EXIT_FORCED,
    EXIT_OK,
    EXIT_STARTUP_FAILED,
    ShutdownSignals,
)
from realtime.server.load import load_report
from realtime.server.logs import redact_websockets_logs
from realtime.server.metrics import Metrics
from realtime.server.openai.app import SpeechEndpoint
from realtime.server.ratelimit import QuotaBook, QuotaLimits
from realtime.server.state import ServiceState
from realtime.server.stream.intake import PlainReader, SentenceReader, TextThread
from realtime.server.stream.session import Session
from realtime.server.voices.upload import MAX_UPLOAD_BYTES, VoiceUploads
from realtime.server.work.policy import scheduler_policy
from realtime.server.work.worker import ModelWorker
from realtime.speech.timing import warm as word_timing_warm
from scheduler import SchedulerConfig

log = logging.getLogger(__name__)

_FLUSH_S = 2.0  # how long drained connections get to send what they queued
_FORCED_FLUSH_S = 0.2


def runner_factory(config: ServerConfig) -> Callable[[], Runner]:
    """How to build the configured runner (called on the model thread)."""
    if config.weights == WeightsKind.TONE.value:
        def build_tone() -> Runner:
            from realtime.engine.tone import ToneRunner

            return ToneRunner(step_seconds=config.tone_step_ms / 1000.0,
                              codes_per_step=config.tone_codes_per_step,
                              codes_per_char=config.tone_codes_per_char,
                              max_slots=config.max_slots, batch_sizes=config.batch_sizes,
                              kv_buckets=config.kv_buckets)
        return build_tone

    def build_model() -> Runner:
        from realtime.engine import build_runner

        return build_runner(config.runtime_options())
    return build_model


def reader_factory(config: ServerConfig) -> Callable[[], SentenceReader]:
    """How to build the text thread's reader (called on that thread): the
    model's normalizer, or text as written for the tone runner."""
    if config.weights == WeightsKind.TONE.value:
        return PlainReader

    def build_normalizer() -> SentenceReader:
        from realtime.engine.text.spoken import TextNormalizer

        return TextNormalizer()
    return build_normalizer


class Server:
    def __init__(self, config: ServerConfig,
                 runner_factory_: Callable[[], Runner] | None = None,
                 scheduler_options: dict[str, object] | None = None,
                 reader_factory_: Callable[[], SentenceReader] | None = None) -> None:
        """``runner_factory_`` overrides the runner the config names (tests);
        ``scheduler_options`` are extra ``SchedulerConfig`` fields (queue
        bounds, policy knobs) on top of what the runner and config decide;
        ``reader_factory_`` overrides the text thread's reader (tests)."""
        self.config = config
        self._scheduler_options = dict(scheduler_options or {})
        self.metrics = Metrics()
        self.state = ServiceState()
        self.accounting = Accounting(self.metrics)
        self.quotas = QuotaBook(QuotaLimits(config.text_chars_per_minute,
                                            config.token_text_chars_per_minute,
                                            config.token_max_active))
        # Sentences are read (normalized) on their own thread: not the loop, not the model's.
        self.text = TextThread(reader_factory_ or reader_factory(config))
        self.worker = ModelWorker(runner_factory_ or runner_factory(config),
                                  self._scheduler_config, self.metrics,
                                  on_device_lost=self._device_lost)
        static = StaticFiles(Path(config.web_root) if config.web_root else None)
        self.gate = Gate(config, self.state, self.accounting)
        # POST /v1/audio/speech and POST /v1/voices on the same port (realtime/server/http/routes.py)
        self.speech: SpeechEndpoint | None = None
        posts: dict[str, Handler] = {}
        if not config.disable_speech_api:
            self.speech = SpeechEndpoint(config, self.state, self.accounting, self.worker,
                                         self.quotas, self.gate, text=self.text)
            posts = {SPEECH_PATH: self.speech,
                     VOICES_PATH: VoiceUploads(self.state, self.quotas, self.gate, config)}
        self.http = HttpRoutes(self.gate, self.state, self.accounting, static, lambda: load_report(
            config, self.state, self.accounting, self.worker), posts)
        self.front = HttpFront(self.http, HttpLimits(
            request_timeout=config.handshake_timeout, max_body=config.max_message_bytes,
            large_bodies=((VOICES_PATH, MAX_UPLOAD_BYTES),)))
        self.sessions: set[Session] = set()
        self.startup_error: str | None = None  # for the log only: may name local paths
        self._ws: WsServer | None = None
        self._load_task: asyncio.Task[None] | None = None
        self._shutdown = asyncio.Event()  # drain requested
        self._force = asyncio.Event()  # ... and do not wait
        self._closed = asyncio.Event()

    # -- what tests and probes read -------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._ws is not None
        return self._ws.sockets[0].getsockname()[1] if self._ws.sockets else self.config.port

    @property
    def connection_count(self) -> int:
        return self.accounting.connections

    @property
    def active_utterances(self) -> int:
        return self.accounting.active_utterances

    # -- lifecycle --------------------------------------------------------------------

    async def serve(self, handle_signals: bool = True) -> int:
        """The whole life of a server process; returns its exit status.

        Starts, serves until a shutdown is requested (signals when
        ``handle_signals``, or ``request_shutdown``), drains and closes.
        """
        loop = asyncio.get_running_loop()
        signals = ShutdownSignals(self.request_shutdown, self.force_shutdown)
        if handle_signals:
            signals.install(loop)
        try:
            await self.start()
            ready = asyncio.ensure_future(self.wait_ready())
            stop = asyncio.ensure_future(self._shutdown.wait())
            await asyncio.wait({ready, stop}, return_when=asyncio.FIRST_COMPLETED)
            if ready.done() and ready.exception() is not None:
                log.error("start-up failed: %s", self.startup_error)
                stop.cancel()
                await self.close()
                return EXIT_STARTUP_FAILED
            await stop
            ready.cancel()
            await self.drain()
            if self.state.failure is not None:
                return EXIT_DEVICE_LOST
            return EXIT_FORCED if self._force.is_set() else EXIT_OK
        finally:
            if handle_signals:
                signals.uninstall(loop)

    def request_shutdown(self) -> None:
        """Drain (the first SIGTERM)."""
        self._shutdown.set()

    def _device_lost(self, reason: str) -> None:
        """The model thread lost its device: every job already failed with
        ``internal``. Shut down so the supervisor restarts the process (a
        broken CUDA context cannot be rebuilt inside it)."""
        log.critical("the model's device failed (%s): shutting down for a restart", reason)
        self.state.failure = "DeviceFailure"
        self.request_shutdown()

    def force_shutdown(self) -> None:
        """Shut down without waiting for in-flight work (the second SIGTERM)."""
        self._shutdown.set()
        self._force.set()

    async def start(self) -> None:
        """Listen now; load and warm the model in the background."""
        c = self.config
        redact_websockets_logs()
        self._ws = await serve(
            self._handle, c.host, c.port,
            process_response=self.front.process_response,
            max_size=c.max_message_bytes,
            compression=None,  # audio does not compress; JSON is small
            open_timeout=c.handshake_timeout,
            ping_interval=20, ping_timeout=20, close_timeout=5,
            max_queue=16, write_limit=64 * 1024,
            backlog=max(128, min(c.max_connections, 4096)),
            # websockets documents a wrapper here: ours reads HTTP first and
            # builds websockets' connection for an accepted upgrade (realtime/server/http/front.py)
            create_connection=cast("type[ServerConnection] | None",
                                   self.front.connection_factory()),
        )
        log.info("listening on http://%s:%d (WebSocket at /v1/stream%s)", c.host, self.port,
                 "" if self.speech is None else ", POST /v1/audio/speech")
        startup_clock.mark("process start to listening")
        self._load_task = asyncio.create_task(self._load(), name="model-load")

    async def wait_ready(self) -> None:
        """Until the model is warm; raises what loading raised."""
        assert self._load_task is not None, "start() first"
        await asyncio.shield(self._load_task)

    async def _load(self) -> None:
        started = time.perf_counter()
        log_hardware(self.config)
        startup_clock.mark("hardware line (imports torch)")
        try:
            # The word-timing dictionary loads beside the model (a second, once).
            await asyncio.gather(self.worker.start(), asyncio.to_thread(word_timing_warm))
            # After the model: importing ChatTTS on two threads at once races in
            # transformers' lazy imports; the runtime compiled numba's kernels already.
            await self.text.start()
            startup_clock.mark("text thread")
        except Exception as exc:
            self.startup_error = f"{type(exc).__name__}: {exc}"
            self.state.failure = type(exc).__name__
            raise
        runner = self.worker.runner
        assert runner is not None
        self.state.samples.encoder = runner.sample_encoder  # off the model thread (voices/samples.py)
        self.state.warming = lambda: self.worker.warming
        self.state.serve(self._hello(runner), Offer(
            formats=offered_formats(), sample_rates=SUPPORTED_RATES, voices=tuple(runner.voices),
            max_text_chars=self.config.max_text_chars, refine=runner.offers_refine))
        if runner.weights_kind is not WeightsKind.CHECKPOINT:
            log.warning("serving %s weights: the audio is noise, not speech", runner.weights_kind.value)
        log.info("ready in %.2f s: device=%s weights=%s batch_sizes=%s kv_buckets=%s max_slots=%d",
                 time.perf_counter() - started, runner.device, runner.weights_kind.value,
                 runner.batch_sizes, runner.kv_buckets, runner.max_slots)
        startup_clock.mark("ready")
        log.info("start-up timeline (ms): %s", startup_clock.CLOCK.summary())

    def _hello(self, runner: Runner) -> Hello:
        c = self.config
        return Hello(
            sample_rate=SAMPLE_RATE, formats=offered_formats(), sample_rates=SUPPORTED_RATES,
            voices=tuple(runner.voices),
            limits=Limits(c.max_text_chars, c.max_active, c.max_message_bytes, c.idle_timeout),
            model=ModelInfo("chattts", runner.weights_kind.value, runner.device),
        )

    def _scheduler_config(self, runner: Runner) -> SchedulerConfig:
        sizes = tuple(runner.batch_sizes)
        return SchedulerConfig(
            batch_sizes=sizes,
            kv_buckets=tuple(runner.kv_buckets),
            prompt_buckets=tuple(runner.prompt_buckets),
            max_slots=runner.max_slots,
            interactive_batch_size=min(self.config.interactive_batch_size, max(sizes)),
            # Admission from the flags; explicit scheduler_options win.
            **{**scheduler_policy(self.config, runner), **self._scheduler_options},
        )

    async def drain(self) -> None:
        """Graceful shutdown; returns when everything is closed. A forced
        shutdown (``force_shutdown``, before or during) skips the waiting."""
        if self.state.draining:
            await self._closed.wait()
            return
        self.state.draining = True
        log.info("draining: %d utterances in flight, %d connections, up to %.1f s",
                 self.accounting.active_utterances, len(self.sessions), self.config.drain_timeout)
        idle = asyncio.ensure_future(self.accounting.wait_idle())
        forced = asyncio.ensure_future(self._force.wait())
        done, _ = await asyncio.wait({idle, forced}, timeout=self.config.drain_timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        idle.cancel()
        forced.cancel()
        sessions = list(self.sessions)
        if idle in done:
            await asyncio.gather(*(s.flushed(_FLUSH_S) for s in sessions))
        else:
            why = "forced" if forced in done else "drain timeout"
            log.warning("%s: ending %d utterances with shutting_down", why,
                        self.accounting.active_utterances)
            flush = _FORCED_FLUSH_S if self._force.is_set() else _FLUSH_S / 2
            if self.speech is not None:
                self.speech.shut_down("the server is shutting down")
            await asyncio.gather(*(s.shut_down("the server is shutting down", flush)
                                   for s in sessions))
        await self.close()

    async def close(self) -> None:
        """Close every connection (1001; aborted when forced) and stop the model thread."""
        if self._ws is not None:
            if self._force.is_set():
                for session in list(self.sessions):
                    session.ws.transport.abort()
            self._ws.close(close_connections=not self._force.is_set())
            # before waiting: websockets' server counts the HTTP connections too
            await self.front.close(_FORCED_FLUSH_S if self._force.is_set() else _FLUSH_S)
            await self._ws.wait_closed()
        if self._load_task is not None and not self._load_task.done():
            self._load_task.cancel()
        await self.worker.stop()
        self.state.samples.close()
        self.text.close()
        self._closed.set()
        log.info("server closed")

    # -- connections ----------------------------------------------------------------------

    async def _handle(self, ws: ServerConnection) -> None:
        session = Session(ws, self.config, self.state, self.accounting, self.worker, self.quotas,
                          self.text)
        self.sessions.add(session)
        self.accounting.connection_opened()
        try:
            await session.run()
        finally:
            self.sessions.discard(session)
            self.accounting.connection_closed()


def log_hardware(config: ServerConfig) -> None:
    """Log what the machine offers; the runtime logs what it chose from it."""
    cpus = os.cpu_count() or 0
    if config.weights == WeightsKind.TONE.value:
        log.info("hardware: %d CPUs; synthetic tone runner (no model)", cpus)
        return
    import torch

    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            log.info("hardware: cuda:%d %s, %.1f GiB, compute %d.%d; %d CPUs", i, props.name,
                     props.total_memory / 2**30, props.major, props.minor, cpus)
    else:
        log.info("hardware: no CUDA device; CPU fallback with %d CPUs, %d torch threads",
                 cpus, torch.get_num_threads())
