"""Cross-origin reads for browser pages served elsewhere (CORS).

A page on another origin may call ``POST /v1/audio/speech`` and read
``/v1/models`` and ``/v1/voices`` when its Origin passes the same allow-list
the WebSocket handshake applies (``--allowed-origin``; an empty list allows
every origin, as there). Such responses name that origin in
``Access-Control-Allow-Origin`` (never ``*``, and with ``Vary: Origin`` so
caches keep them apart) and expose ``Retry-After`` and ``X-Request-Id``. The
browser's preflight (``OPTIONS`` with ``Access-Control-Request-Method``) is
answered 204 with the methods and headers a speech request uses; an origin
off the list gets 403 there, before any body is sent. Tokens travel in the
``Authorization`` header, never in cookies, so allowing an origin grants
nothing its page does not already hold.

Thread: event loop.
"""

from __future__ import annotations

from realtime.server.http.auth import origin_allowed

ALLOW_METHODS = "GET, POST, OPTIONS"
ALLOW_HEADERS = "authorization, content-type"
EXPOSE_HEADERS = "retry-after, x-request-id"
MAX_AGE_S = 600


def response_headers(origin: str | None, allowed: tuple[str, ...]) -> list[tuple[str, str]]:
    """The headers a response to a request from ``origin`` carries (none for
    requests without an Origin, or from an origin off the list)."""
    if origin is None or not origin_allowed(origin, allowed):
        return []
    return [("Access-Control-Allow-Origin", origin), ("Access-Control-Expose-Headers", EXPOSE_HEADERS),
            ("Vary", "Origin")]


def preflight_headers(origin: str | None, allowed: tuple[str, ...]) -> list[tuple[str, str]] | None:
    """The 204 answer's headers to a preflight from ``origin``; None when
    the origin may not call (the caller answers 403)."""
    if origin is not None and not origin_allowed(origin, allowed):
        return None
    headers = [("Allow", ALLOW_METHODS), ("Access-Control-Allow-Methods", ALLOW_METHODS),
               ("Access-Control-Allow-Headers", ALLOW_HEADERS),
               ("Access-Control-Max-Age", str(MAX_AGE_S))]
    return headers + response_headers(origin, allowed)


def encoded(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    """ASGI's form: lower-case name and value as bytes."""
    return [(k.lower().encode(), v.encode("latin-1")) for k, v in headers]
