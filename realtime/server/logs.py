"""Logging set-up for the server process: plain text or one JSON object per line."""

from __future__ import annotations

import logging
import re
import time

import orjson


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message (+ exception)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


_SECRET = re.compile(r"(authorization:\s*\S+\s*|token=)[^\s&]*", re.IGNORECASE)


class RedactSecrets(logging.Filter):
    """Blanks bearer tokens and ``token=`` query values in a record's text.

    websockets logs handshake headers and paths at DEBUG; this filter on its
    loggers keeps tokens out of every log line.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if _SECRET.search(message):
            record.msg = _SECRET.sub(lambda m: m.group(1) + "<redacted>", message)
            record.args = ()
        return True


class HandshakeHangups(logging.Filter):
    """A client that hangs up before the opening handshake ends (a probe
    that timed out, a browser tab closed) is its own business, not the
    server's error: websockets logs it at ERROR with a traceback; this keeps
    it as one INFO line naming the exception. Any other handshake failure
    stays an ERROR with its traceback."""

    HANGUPS = ("ConnectionClosed", "EOFError", "ConnectionResetError", "BrokenPipeError")

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if record.msg == "opening handshake failed" and exc is not None and any(
                t.__name__.startswith(self.HANGUPS) for t in type(exc).__mro__):
            record.msg, record.args = f"a client left during the opening handshake ({type(exc).__name__})", ()
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info = record.exc_text = None
        return True


def redact_websockets_logs() -> None:
    """Install ``RedactSecrets`` and ``HandshakeHangups`` on websockets'
    loggers (idempotent)."""
    for name in ("websockets.server", "websockets.client", "websockets"):
        logger = logging.getLogger(name)
        for kind in (RedactSecrets, HandshakeHangups):
            if not any(isinstance(f, kind) for f in logger.filters):
                logger.addFilter(kind())


def setup_logging(level: str = "info", json: bool = False) -> None:
    """Configure the root logger once for the process (CLI use only)."""
    handler = logging.StreamHandler()
    if json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s")
        )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # websockets logs every refused handshake at INFO; keep that at WARNING.
    logging.getLogger("websockets").setLevel(max(root.level, logging.WARNING))
