"""The plain HTTP routes of the server's port, whichever parser read the request.

``HttpRoutes.answer`` answers ``/healthz``, ``/readyz``, ``/metrics``,
``/v1/voices``, ``/v1/models`` (OpenAI's model list, for the tools that read
it before ``POST /v1/audio/speech``), ``/load`` (saturation,
``realtime.load``), ``GET /v1/audio/speech`` (405: it takes POST) and the
web demo's static files. For ``/v1/stream`` it asks the gate
(``realtime.gate``) whether the WebSocket may open; None lets the handshake
proceed. ``realtime.front`` calls it for GETs of both halves of the port.

Thread: event loop.
"""

from __future__ import annotations

import http
import logging
import time
from collections.abc import Callable
from typing import Any

from realtime import exchange
from realtime.accounting import Accounting
from realtime.api_error import ApiError
from realtime.exchange import HttpRequest, HttpResponse
from realtime.gate import Gate
from realtime.state import ServiceState
from realtime.static import StaticFiles

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
    """``load_report`` makes the body of ``GET /load`` (``realtime.load``)."""

    def __init__(self, gate: Gate, state: ServiceState, accounting: Accounting,
                 static: StaticFiles, load_report: Callable[[], dict[str, Any]]) -> None:
        self.gate = gate
        self.state = state
        self.accounting = accounting
        self.static = static
        self.load_report = load_report
        self._started = int(time.time())

    def answer(self, request: HttpRequest) -> HttpResponse | None:
        """The answer to a GET (or HEAD); None: a stream handshake may go on."""
        path = request.route
        if path == STREAM_PATH:
            refused = self.gate.refusal(request, stream=True)
            return None if refused is None else exchange.text(refused.status, refused.message + "\n")
        if path == SPEECH_PATH:
            return exchange.method_not_allowed(SPEECH_PATH, "POST")
        if path == "/healthz":
            return exchange.text(_OK, "ok\n")
        if path == "/readyz":
            return self._readyz()
        if path == "/metrics":
            metrics = self.accounting.metrics
            return exchange.data(_OK, metrics.render(), metrics.content_type)
        if path == "/load":
            return exchange.json(_OK, self.load_report())
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
