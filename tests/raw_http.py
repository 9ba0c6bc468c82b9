"""HTTP over a raw socket: the test sees exactly what the server sent."""

from __future__ import annotations

import asyncio


async def raw_post(port: int, body: bytes, headers: dict[str, str] | None = None,
                   path: str = "/v1/audio/speech", method: str = "POST",
                   content_type: str = "application/json", length: int | None = None
                   ) -> tuple[int, dict[str, str], bytes]:
    """One request (``Connection: close``); status 0 when the server closed
    without an answer. Header names come back lower-case. ``length``: the
    Content-Length declared instead of the body's."""
    head = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close",
            f"Content-Length: {len(body) if length is None else length}",
            f"Content-Type: {content_type}"]
    head += [f"{k}: {v}" for k, v in (headers or {}).items()]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 20)
    writer.close()
    if not data:
        return 0, {}, b""  # closed without an answer
    header, _, payload = data.partition(b"\r\n\r\n")
    lines = header.decode().split("\r\n")
    status = int(lines[0].split()[1])
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return status, {k.lower(): v for k, v in fields.items()}, payload
