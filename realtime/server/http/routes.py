"""The server's one route table: every HTTP request on its port, GET and POST.

``HttpRoutes.handle`` answers each request ``realtime.server.http.http1`` (h11, the one
HTTP parser) has read: ``/healthz``, ``/readyz``, ``/metrics``, ``/load``
(saturation, ``realtime.server.load``), ``/v1/voices`` (GET lists, POST uploads:
``realtime.server.voices.upload``), ``/v1/models`` (OpenAI's model list, for the
tools that read it before ``POST /v1/audio/speech``), ``/v1/audio/speech``
(POST: ``realtime.server.openai``; GET: 405), a browser's preflight
(``OPTIONS``) for the routes a page on another origin may use, and the web
demo's static files. ``/v1/stream`` is a WebSocket: ``stream_refusal`` asks
the gate (``realtime.server.http.gate``) whether its upgrade may go on, and
``realtime.server.http.front`` hands an accepted one to websockets; a GET of it that
asks no upgrade gets a 400.

Thread: event loop.
"""

from __future__ import annotations

import http
import logging
import time
from collections.abc import Callable
from typing import Any

from protocol import ErrorCode
from realtime.server.accounting import Accounting
from realtime.server.http import exchange
from realtime.server.http.api_error import ApiError
from realtime.server.http.exchange import HttpRequest, HttpResponse
from realtime.server.http.gate import Gate
from realtime.server.http.http1 import Exchange, Handler
from realtime.server.http.static import StaticFiles
from realtime.server.state import ServiceState

log = logging.getLogger(__name__)

STREAM_PATH = "/v1/stream"
SPEECH_PATH = "/v1/audio/speech"
MODELS_PATH = "/v1/models"
VOICES_PATH = "/v1/voices"
# The speech endpoint takes any model name (one model serves them all); these
# are the names listed, ours first, then the ones OpenAI's clients default to.
MODEL_IDS = ("chattts", "tts-1", "tts-1-hd", "gpt-4o-mini-tts")
_OK = http.HTTPStatus.OK


def cors_readable(path: str) -> bool:
    """The GET routes a page on an allowed other origin may read (``cors``)."""
    return path in (VOICES_PATH, MODELS_PATH) or path.startswith(MODELS_PATH + "/")


class HttpRoutes:
    """``load_report`` makes the body of ``GET /load`` (``realtime.server.load``);
    ``posts`` the POST routes by path (``SPEECH_PATH``, ``VOICES_PATH``; a
    route that is off is absent)."""

    def __init__(self, gate: Gate, state: ServiceState, accounting: Accounting,
                 static: StaticFiles, load_report: Callable[[], dict[str, Any]],
                 posts: dict[str, Handler] | None = None) -> None:
        self.gate = gate
        self.state = state
        self.accounting = accounting
        self.static = static
        self.load_report = load_report
        self.posts = dict(posts or {})
        self._started = int(time.time())
        metrics = accounting.metrics
        self._gets: dict[str, Callable[[], HttpResponse]] = {
            "/healthz": lambda: exchange.text(_OK, "ok\n"),
            "/readyz": self._readyz,
            "/metrics": lambda: exchange.data(_OK, metrics.render(), metrics.content_type),
            "/load": lambda: exchange.json(_OK, self.load_report()),
            SPEECH_PATH: lambda: exchange.method_not_allowed(SPEECH_PATH, "POST"),
            STREAM_PATH: lambda: exchange.text(http.HTTPStatus.BAD_REQUEST,
                                               "a WebSocket upgrade on a new connection, please\n"),
        }

    def stream_refusal(self, request: HttpRequest) -> HttpResponse | None:
        """The gate's answer to a WebSocket upgrade on ``/v1/stream`` (plain
        text: a browser shows no body of a failed handshake); None: it may open."""
        refused = self.gate.refusal(request, stream=True)
        return None if refused is None else exchange.text(refused.status, refused.message + "\n")

    async def handle(self, ex: Exchange) -> None:
        """Answer one request (the table in the module docstring)."""
        request = ex.request
        path, method = request.route, request.method
        if method == "POST" and path in self.posts:
            await self.posts[path](ex)
        elif method == "OPTIONS" and (path == SPEECH_PATH or cors_readable(path)):
            await ex.respond(self.gate.preflight(request))
        elif method in ("GET", "HEAD"):
            await ex.respond(self.answer(request))
        else:
            await ex.respond(self._no_route(request))

    def _no_route(self, request: HttpRequest) -> HttpResponse:
        path, method = request.route, request.method
        if path == SPEECH_PATH and method != "POST":
            answer = exchange.method_not_allowed(SPEECH_PATH, "POST")
        else:
            why = (f"{method} {path} is off on this server" if method == "POST" and path == SPEECH_PATH
                   else f"no route for {method} {path[:100]}")
            answer = exchange.refusal(ApiError(http.HTTPStatus.NOT_FOUND, ErrorCode.BAD_MESSAGE.value, why))
        answer.headers += self.gate.access(request)
        return answer

    def answer(self, request: HttpRequest) -> HttpResponse:
        """The answer to a GET (or HEAD)."""
        path = request.route
        route = self._gets.get(path)
        if route is not None:
            return route()
        if cors_readable(path):
            response = self._models(path) if path != VOICES_PATH else exchange.json(
                _OK, {"voices": list(self.state.voices)})
            response.headers += self.gate.access(request)
            return response
        found = self.static.read(path)
        if found is None:
            return exchange.text(http.HTTPStatus.NOT_FOUND, "not found\n")
        return exchange.data(_OK, *found)

    def _models(self, path: str) -> HttpResponse:
        """OpenAI's ``GET /v1/models`` (a list) and ``GET /v1/models/{id}``."""
        models = {m: {"id": m, "object": "model", "created": self._started,
                      "owned_by": "chattts-realtime"} for m in MODEL_IDS}
        if path == MODELS_PATH:
            return exchange.json(_OK, {"object": "list", "data": list(models.values())})
        name = path[len(MODELS_PATH) + 1:]
        if name in models:
            return exchange.json(_OK, models[name])
        error = ApiError(http.HTTPStatus.NOT_FOUND, "model_not_found",
                         f"no model {name[:100]!r} here; any of {', '.join(MODEL_IDS)} speaks with ChatTTS",
                         param="model")
        return exchange.json(http.HTTPStatus.NOT_FOUND, error.body())

    def _readyz(self) -> HttpResponse:
        s = self.state
        body = {"ready": s.accepting, "warm": s.ready, "warming": s.warming() if s.ready else 0,
                "draining": s.draining, "weights": s.weights, "device": s.device}
        if s.failure is not None:
            body["error"] = s.failure
        return exchange.json(_OK if s.accepting else http.HTTPStatus.SERVICE_UNAVAILABLE, body)
