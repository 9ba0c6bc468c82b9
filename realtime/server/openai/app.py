"""``POST /v1/audio/speech``: OpenAI's speech endpoint on the server's own port.

``realtime.server.http.front`` routes the request here once ``realtime.server.http.http1`` has read
its head. It passes the gate every front shares (``realtime.server.http.gate``: token
401, Origin allow-list 403, draining or not ready 503), then its body is
read and validated (``request.parse_request``), the token's quotas apply,
and a ``SpeechJob`` runs. The response starts only once the scheduler
admitted the work, so every refusal is a proper HTTP error with OpenAI's
body and, for load, a ``Retry-After``. Audio then streams as the model
makes it: chunked bytes for ``stream_format: audio``, or server-sent events
(``speech.audio.delta`` with base64 audio, then ``speech.audio.done`` with
usage) for ``sse``. A client that disconnects cancels its jobs. A failure
after the response started cannot change the status: an SSE stream gets an
``error`` event and ends; a byte stream is cut off before its last chunk,
so the client sees an incomplete body (and the server logs why).

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import time
from dataclasses import replace
from typing import Any

import orjson
from prometheus_client import Counter

from realtime.audio.encoders import available_formats
from realtime.engine.api import SAMPLES_PER_STEP
from realtime.server.accounting import Accounting
from realtime.server.config import ServerConfig
from realtime.server.http.api_error import INVALID_API_KEY, ApiError
from realtime.server.http.exchange import refusal
from realtime.server.http.gate import Gate, quota_for
from realtime.server.http.http1 import Exchange
from realtime.server.openai.job import SpeechJob, StreamFailed
from realtime.server.openai.request import SpeechRequest, parse_request
from realtime.server.ratelimit import ConnectionQuota, QuotaBook
from realtime.server.retry import quota_retry_ms
from realtime.server.state import ServiceState
from realtime.server.stream.intake import TextReader
from realtime.server.stream.segment_request import lane_params
from realtime.server.work.worker import ModelWorker

log = logging.getLogger(__name__)



SSE_TYPE = "text/event-stream"

Access = list[tuple[str, str]]


class SpeechEndpoint:
    """The request handler; ``jobs`` are the requests in flight (for shutdown)."""

    def __init__(self, config: ServerConfig, state: ServiceState, accounting: Accounting,
                 worker: ModelWorker, quotas: QuotaBook, gate: Gate,
                 text: TextReader | None = None) -> None:
        """``text`` reads the requests' sentences (the server's text thread)."""
        self.config = config
        self.text = text
        self.state = state
        self.accounting = accounting
        self.worker = worker
        self.quotas = quotas
        self.gate = gate
        self.jobs: set[SpeechJob] = set()
        self.responses = Counter(
            "chattts_speech_requests_total",
            "Requests to POST /v1/audio/speech, by the HTTP status they got.",
            ["status"], registry=accounting.metrics.registry)

    def shut_down(self, message: str) -> None:
        """End every request in flight with ``shutting_down`` (drain ran out of time)."""
        for job in list(self.jobs):
            job.shut_down(message)

    async def __call__(self, ex: Exchange) -> None:
        access = self.gate.access(ex.request)
        try:
            refused = self.gate.refusal(ex.request, stream=False)
            if refused is not None:
                raise refused
            speech = parse_request(await ex.body(), self.state.voices, self.config.max_text_chars,
                                   available_formats(), self.state.offer is not None
                                   and self.state.offer.refine)
        except ApiError as exc:
            await self._refuse(ex, exc, access)
            return
        quota = quota_for(self.quotas, self.config, ex.request)
        try:
            quota_refusal = quota.admit_speak(len(speech.input))
            if quota_refusal is not None:
                hint = quota_retry_ms(quota_refusal, (), time.monotonic())
                await self._refuse(ex, ApiError.from_wire(
                    quota_refusal.code.value, quota_refusal.message, None, hint), access)
                return
            await self._run(speech, quota, ex, access)
        finally:
            quota.close()

    async def _run(self, speech: SpeechRequest, quota: ConnectionQuota, ex: Exchange,
                   access: Access) -> None:
        config = self.config
        speech = replace(speech, params=lane_params(speech.lane, speech.params, config.refine_background))
        job = SpeechJob(speech, self.worker, self.accounting, quota,
                        default_deadline_ms=config.default_deadline_ms,
                        max_text_chars=config.max_text_chars, limit_bytes=config.send_queue_bytes,
                        samples=self.state.samples, text=self.text)
        self.jobs.add(job)
        watcher = asyncio.create_task(_watch_disconnect(ex, job), name="speech-disconnect")
        try:
            job.start()
            try:
                await job.admitted()
            except ApiError as exc:  # the job counted its error message already
                await self._refuse(ex, exc, access, count_error=False)
                return
            await self._stream(job, ex, access)
        finally:
            watcher.cancel()
            self.jobs.discard(job)
            if not job.ended:  # the handler itself failed or was cancelled
                job.abandon()

    async def _stream(self, job: SpeechJob, ex: Exchange, access: Access) -> None:
        sse = job.request.stream_format == "sse"
        content_type = SSE_TYPE if sse else job.content_type
        await ex.start(200, [("Content-Type", content_type), ("Cache-Control", "no-store"),
                             ("X-Request-Id", job.request_id), *access])
        self.responses.labels("200").inc()
        try:
            async for chunk in job.chunks():
                await ex.send(_sse({"type": "speech.audio.delta",
                                    "audio": base64.b64encode(chunk).decode()}) if sse else chunk)
        except StreamFailed as exc:
            if exc.code == "disconnected":
                return
            log.warning("speech response cut short: %s (%s)", exc.code, exc.message)
            if sse:  # a status can no longer change; the event says why
                error = ApiError.from_wire(exc.code, exc.message)
                await ex.end(_sse({"type": "error", **error.body()}))
            return  # a byte stream ends without its last chunk: an incomplete body
        await ex.end(_sse({"type": "speech.audio.done", "usage": _usage(job)}) if sse else b"")

    async def _refuse(self, ex: Exchange, error: ApiError, access: Access,
                      count_error: bool = True) -> None:
        """An OpenAI-style error; ``access``: the CORS headers that let a page
        on another origin read it."""
        self.responses.labels(str(error.status)).inc()
        if count_error and error.code != INVALID_API_KEY:
            self.accounting.error_sent(error.code)
        await ex.respond(refusal(error, access))


async def _watch_disconnect(ex: Exchange, job: SpeechJob) -> None:
    """The body was read: what is left to notice is the client going away."""
    await ex.disconnected.wait()
    if not job.ended:
        log.info("speech client disconnected mid-stream; cancelling its jobs")
        job.abandon()


def _sse(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


def _usage(job: SpeechJob) -> dict[str, int]:
    """OpenAI's usage block: input characters and output audio codes (one per 21.3 ms)."""
    input_tokens = len(job.request.input)
    output_tokens = round(job.audio_samples / SAMPLES_PER_STEP)
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens}
