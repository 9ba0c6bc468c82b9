"""Who may open a stream: bearer tokens, the Origin allow-list, principals.

A token comes in ``Authorization: Bearer <token>`` or, for browsers that
cannot set headers, ``?token=<token>``. Tokens are compared in constant time
and never stored or logged: quotas key on a principal, a short SHA-256
digest of the token.

Thread: pure functions, safe from any thread.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import parse_qs, urlsplit

from realtime.server.http.exchange import RequestHead


def bearer_token(request: RequestHead) -> str | None:
    """The token of ``Authorization: Bearer <token>``, else of ``?token=``."""
    header = request.headers.get("Authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    values = parse_qs(urlsplit(request.path).query).get("token")
    return values[0] if values else None


def token_allowed(token: str | None, tokens: tuple[str, ...]) -> bool:
    """Constant-time comparison against every configured token."""
    if token is None:
        return False
    given = token.encode()
    ok = False
    for expected in tokens:
        ok |= hmac.compare_digest(given, expected.encode())
    return ok


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    """Requests without an ``Origin`` (non-browser clients) are judged by the
    token alone; an empty allow-list allows every origin."""
    return origin is None or not allowed or origin in allowed


def principal_of(token: str | None) -> str | None:
    """A stable, non-reversible name for a token (None stays None)."""
    if not token:
        return None
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:16]
