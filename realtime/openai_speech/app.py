"""The ASGI application behind the speech endpoint (served by uvicorn's HTTP/1.1).

``POST /v1/audio/speech`` checks what the WebSocket handshake checks (token:
401, Origin allow-list: 403, draining or not ready: 503), reads and validates
the body (``request.parse_request``), applies the token's quotas, and runs a
``SpeechJob``. The response starts only once the scheduler admitted the work,
so every refusal is a proper HTTP error with OpenAI's body and, for load, a
``Retry-After``. Audio then streams as the model makes it: chunked bytes for
``stream_format: audio``, or server-sent events (``speech.audio.delta`` with
base64 audio, then ``speech.audio.done`` with usage) for ``sse``. A client
that disconnects cancels its jobs. A failure after the response started
cannot change the status: an SSE stream gets an ``error`` event and ends; a
byte stream is cut off before its last chunk, so the client sees an
incomplete body (and the server logs why).

A connection that began with a POST may go on with GETs (HTTP keep-alive):
those are answered by the same ``HttpRoutes`` as on the WebSocket side.
A browser's preflight (``OPTIONS``) and the CORS headers of every answer to a
page on an allowed other origin come from ``realtime.cors``.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import base64
import http
import logging
import time
from collections.abc import Sequence
from typing import Any

import orjson
from prometheus_client import Counter
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from protocol import ErrorCode
from realtime import cors
from realtime.accounting import Accounting
from realtime.auth import bearer_token, origin_allowed, principal_of, token_allowed
from realtime.config import ServerConfig
from realtime.http import HttpRoutes, cors_readable
from realtime.intake import TextReader
from realtime.openai_speech.encoders import available_formats
from realtime.openai_speech.errors import INVALID_API_KEY, ApiError
from realtime.openai_speech.job import SpeechJob, StreamFailed
from realtime.openai_speech.request import SpeechRequest, parse_request
from realtime.ratelimit import QuotaBook
from realtime.retry import quota_retry_ms
from realtime.runtime.api import SAMPLES_PER_STEP
from realtime.state import ServiceState
from realtime.worker import ModelWorker

log = logging.getLogger(__name__)

SPEECH_PATH = "/v1/audio/speech"
SSE_TYPE = b"text/event-stream"

Scope = dict[str, Any]
AsgiHeaders = Sequence[tuple[bytes, bytes]]


class SpeechApp:
    """ASGI 3 application; ``jobs`` are the requests in flight (for shutdown)."""

    def __init__(self, config: ServerConfig, state: ServiceState, accounting: Accounting,
                 worker: ModelWorker, quotas: QuotaBook, routes: HttpRoutes,
                 text: TextReader | None = None) -> None:
        """``text`` reads the requests' sentences (the server's text thread)."""
        self.config = config
        self.text = text
        self.state = state
        self.accounting = accounting
        self.worker = worker
        self.quotas = quotas
        self.routes = routes
        self.jobs: set[SpeechJob] = set()
        self.responses = Counter(
            "chattts_speech_requests_total",
            "Requests to POST /v1/audio/speech, by the HTTP status they got.",
            ["status"], registry=accounting.metrics.registry)

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return  # lifespan is off; websockets never reach this app
        request = _handshake_request(scope)
        origin = request.headers.get("Origin")
        access = cors.encoded(cors.response_headers(origin, self.config.allowed_origins))
        if scope["method"] == "OPTIONS" and (scope["path"] == SPEECH_PATH or cors_readable(scope["path"])):
            await self._preflight(send, origin)
        elif scope["path"] == SPEECH_PATH:
            if scope["method"] != "POST":
                await self._refuse(send, ApiError(405, ErrorCode.BAD_MESSAGE.value,
                                                  f"{SPEECH_PATH} takes POST"), access=access)
                return
            await self._speech(request, receive, send, access)
        elif scope["method"] in ("GET", "HEAD"):
            await _send_response(send, self._get(request), head=scope["method"] == "HEAD")
        else:
            await self._refuse(send, ApiError(404, ErrorCode.BAD_MESSAGE.value,
                                              f"no route for {scope['method']} {scope['path']}"),
                               access=access)

    async def _preflight(self, send: Any, origin: str | None) -> None:
        headers = cors.preflight_headers(origin, self.config.allowed_origins)
        if headers is None:
            await self._refuse(send, ApiError(403, ErrorCode.BAD_MESSAGE.value, "origin not allowed"))
            return
        await send({"type": "http.response.start", "status": 204,
                    "headers": [*cors.encoded(headers), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def shut_down(self, message: str) -> None:
        """End every request in flight with ``shutting_down`` (drain ran out of time)."""
        for job in list(self.jobs):
            job.shut_down(message)

    # -- POST /v1/audio/speech ------------------------------------------------------------

    async def _speech(self, request: Request, receive: Any, send: Any, access: AsgiHeaders) -> None:
        token = bearer_token(request)
        try:
            self._gate(request, token)
            speech = parse_request(await _read_body(receive, self.config.max_message_bytes),
                                   self.state.voices, self.config.max_text_chars,
                                   available_formats())
        except ApiError as exc:
            await self._refuse(send, exc, access=access)
            return
        quota = self.quotas.open(principal_of(token) if self.config.auth_tokens else None)
        try:
            refusal = quota.admit_speak(len(speech.input))
            if refusal is not None:
                hint = quota_retry_ms(refusal, (), time.monotonic())
                await self._refuse(send, ApiError.from_wire(
                    refusal.code.value, refusal.message, None, hint), access=access)
                return
            await self._run(speech, quota, receive, send, access)
        finally:
            quota.close()

    def _gate(self, request: Request, token: str | None) -> None:
        config = self.config
        if config.auth_tokens and not token_allowed(token, config.auth_tokens):
            log.info("refused a speech request: missing or wrong token")
            raise ApiError(401, INVALID_API_KEY, "missing or invalid token")
        origin = request.headers.get("Origin")
        if not origin_allowed(origin, config.allowed_origins):
            raise ApiError(403, ErrorCode.BAD_MESSAGE.value, "origin not allowed")
        if self.state.draining:
            raise ApiError(503, ErrorCode.SHUTTING_DOWN.value, "the server is shutting down")
        if not self.state.ready:
            raise ApiError(503, ErrorCode.OVERLOADED.value, "the model is not ready yet",
                           retry_after_ms=1000)

    async def _run(self, speech: SpeechRequest, quota: Any, receive: Any, send: Any,
                   access: AsgiHeaders) -> None:
        config = self.config
        job = SpeechJob(speech, self.worker, self.accounting, quota,
                        default_deadline_ms=config.default_deadline_ms,
                        max_text_chars=config.max_text_chars, limit_bytes=config.send_queue_bytes,
                        text=self.text)
        self.jobs.add(job)
        watcher = asyncio.create_task(_watch_disconnect(receive, job), name="speech-disconnect")
        try:
            job.start()
            try:
                await job.admitted()
            except ApiError as exc:  # the job counted its error message already
                await self._refuse(send, exc, count_error=False, access=access)
                return
            await self._stream(job, send, access)
        finally:
            watcher.cancel()
            self.jobs.discard(job)
            if not job.ended:  # the handler itself failed or was cancelled
                job.abandon()

    async def _stream(self, job: SpeechJob, send: Any, access: AsgiHeaders) -> None:
        sse = job.request.stream_format == "sse"
        content_type = SSE_TYPE if sse else job.encoder.content_type.encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type), (b"cache-control", b"no-store"),
                                (b"x-request-id", job.request_id.encode()), *access]})
        self.responses.labels("200").inc()
        try:
            async for chunk in job.chunks():
                body = _sse({"type": "speech.audio.delta",
                             "audio": base64.b64encode(chunk).decode()}) if sse else chunk
                await send({"type": "http.response.body", "body": body, "more_body": True})
        except StreamFailed as exc:
            if exc.code == "disconnected":
                return
            log.warning("speech response cut short: %s (%s)", exc.code, exc.message)
            if sse:  # a status can no longer change; the event says why
                error = ApiError.from_wire(exc.code, exc.message)
                await send({"type": "http.response.body", "more_body": False,
                            "body": _sse({"type": "error", **error.body()})})
            return  # a byte stream ends without its last chunk: an incomplete body
        tail = _sse({"type": "speech.audio.done", "usage": _usage(job)}) if sse else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})

    async def _refuse(self, send: Any, error: ApiError, count_error: bool = True,
                      access: AsgiHeaders = ()) -> None:
        """An OpenAI-style error; ``access``: the CORS headers that let a page
        on another origin read it."""
        self.responses.labels(str(error.status)).inc()
        if count_error and error.code != INVALID_API_KEY:
            self.accounting.error_sent(error.code)
        body = error.encoded()
        await send({"type": "http.response.start", "status": error.status,
                    "headers": [*error.headers(), *access, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    # -- GETs on a kept-alive connection -------------------------------------------------------

    def _get(self, request: Request) -> Response:
        response = self.routes.process_request(_Responder(), request)  # type: ignore[arg-type]
        if response is None:  # /v1/stream: a WebSocket needs a connection of its own
            return _Responder().respond(http.HTTPStatus.BAD_REQUEST,
                                        "open WebSockets on a new connection\n")
        return response


class _Responder:
    """What ``HttpRoutes`` needs of a websockets connection: ``respond``."""

    def respond(self, status: http.HTTPStatus, text: str) -> Response:
        body = text.encode()
        headers = Headers([("Content-Length", str(len(body))),
                           ("Content-Type", "text/plain; charset=utf-8")])
        return Response(status.value, status.phrase, headers, body)


async def _send_response(send: Any, response: Response, head: bool = False) -> None:
    headers = [(k.lower().encode(), v.encode()) for k, v in response.headers.raw_items()
               if k.lower() not in ("connection", "date", "server")]
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else response.body,
                "more_body": False})


def _handshake_request(scope: Scope) -> Request:
    """The request as websockets' ``Request`` (the auth helpers and routes read it)."""
    path = scope.get("raw_path") or scope["path"].encode()
    if scope.get("query_string"):
        path += b"?" + scope["query_string"]
    headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
    return Request(path.decode("latin-1"), headers)


async def _read_body(receive: Any, limit: int) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, ErrorCode.BAD_MESSAGE.value, "the request body was cut short")
        body += message.get("body", b"")
        if len(body) > limit:
            raise ApiError(413, ErrorCode.BAD_MESSAGE.value,
                           f"the request body exceeds {limit} bytes")
        if not message.get("more_body", False):
            return bytes(body)


async def _watch_disconnect(receive: Any, job: SpeechJob) -> None:
    """The body was read: the next event is the client going away (or the end)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not job.ended:
                log.info("speech client disconnected mid-stream; cancelling its jobs")
                job.abandon()
            return


def _sse(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


def _usage(job: SpeechJob) -> dict[str, int]:
    """OpenAI's usage block: input characters and output audio codes (one per 21.3 ms)."""
    input_tokens = len(job.request.input)
    output_tokens = round(job.audio_samples / SAMPLES_PER_STEP)
    return {"input_tokens": input_tokens, "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens}
