"""The browser demo's files, served from one directory and never outside it.

Thread: event loop (reads are small files, bounded in size).
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from urllib.parse import unquote

# realtime/server/http/static.py -> the checkout's clients/web/
DEFAULT_WEB_ROOT = Path(__file__).resolve().parents[3] / "clients" / "web"
MAX_STATIC_BYTES = 8 * 1024 * 1024

_CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".wasm": "application/wasm",
    ".txt": "text/plain; charset=utf-8",
    ".map": "application/json",
}


class StaticFiles:
    def __init__(self, web_root: Path | None = None) -> None:
        self.web_root = (web_root or DEFAULT_WEB_ROOT).resolve()

    def read(self, path: str) -> tuple[bytes, str] | None:
        """``(body, content type)`` of the file ``path`` names, or None."""
        target = self.resolve(path)
        if target is None:
            return None
        try:
            if target.stat().st_size > MAX_STATIC_BYTES:
                return None
            return target.read_bytes(), content_type(target)
        except OSError:
            return None

    def resolve(self, path: str) -> Path | None:
        """The file under the web root that ``path`` names, or None.

        Refuses anything that would leave the root: ``..`` segments (also
        percent-encoded), absolute or backslash paths, NUL bytes, symlinks out.
        """
        rel = unquote(path).lstrip("/")
        if rel == "" or rel.endswith("/"):
            rel += "index.html"
        if "\x00" in rel or "\\" in rel or any(p in ("..", "") for p in rel.split("/")):
            return None
        target = (self.web_root / rel).resolve()
        if not target.is_relative_to(self.web_root) or not target.is_file():
            return None
        return target


def content_type(path: Path) -> str:
    known = _CONTENT_TYPES.get(path.suffix.lower())
    if known:
        return known
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed or "application/octet-stream"
