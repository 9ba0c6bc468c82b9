"""An HTTP request and its answer as plain values, for both halves of the front.

websockets parses the GETs (the upgrade and the plain routes) and
``realtime.server.http.http1`` everything else; both hand the routes and the gate an
``HttpRequest`` and take back an ``HttpResponse``, so a route or a rule is
written once whichever parser read the request.

Thread: pure values.
"""

from __future__ import annotations

import http
import uuid
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

import orjson
from websockets.datastructures import Headers

from protocol import ErrorCode
from realtime.server.http.api_error import ApiError

TEXT = "text/plain; charset=utf-8"
REQUEST_ID = "X-Request-Id"


def request_id() -> str:
    """A fresh id for one HTTP response, as OpenAI's responses carry one."""
    return "req-" + uuid.uuid4().hex


def with_request_id(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``headers`` with an ``X-Request-Id``, unless one is there: every HTTP
    response carries one, refusals and errors included (a client quotes it)."""
    if any(name.lower() == "x-request-id" for name, _ in headers):
        return headers
    return [*headers, (REQUEST_ID, request_id())]


class RequestHead(Protocol):
    """What the gate reads of a request (websockets' ``Request`` has it too)."""

    @property
    def path(self) -> str: ...

    @property
    def headers(self) -> Headers: ...


@dataclass(frozen=True)
class HttpRequest:
    """``path`` is the request target as sent (path and query)."""

    method: str
    path: str
    headers: Headers

    @property
    def route(self) -> str:
        """The path without its query."""
        return urlsplit(self.path).path

    @property
    def origin(self) -> str | None:
        return self.headers.get("Origin")


@dataclass
class HttpResponse:
    """A whole answer: status, headers (Content-Length is added when sent), body."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def text(status: int, body: str) -> HttpResponse:
    return HttpResponse(status, [("Content-Type", TEXT), ("Cache-Control", "no-store")],
                        body.encode())


def data(status: int, body: bytes, content_type: str) -> HttpResponse:
    return HttpResponse(status, [("Content-Type", content_type), ("Cache-Control", "no-store")],
                        body)


def json(status: int, value: object) -> HttpResponse:
    return data(status, orjson.dumps(value), "application/json")


def refusal(error: ApiError, extra: list[tuple[str, str]] | None = None) -> HttpResponse:
    """``error`` as OpenAI's JSON body, with its headers and ``extra`` ones."""
    return HttpResponse(error.status, [*error.headers(), *(extra or [])], error.encoded())


def method_not_allowed(path: str, allow: str) -> HttpResponse:
    error = ApiError(http.HTTPStatus.METHOD_NOT_ALLOWED, ErrorCode.BAD_MESSAGE.value,
                     f"{path} takes {allow}")
    return refusal(error, [("Allow", allow)])
