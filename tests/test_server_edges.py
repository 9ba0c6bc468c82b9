"""Server edges that need a real server: a client that never reads its
replies is closed with 1008, and a cancel while admission is provably
pending ends in ``cancelled``. Every wait polls a condition with a deadline
or waits on an event; nothing sleeps and then asserts."""

from __future__ import annotations

import asyncio
import socket
import threading

from test_faults import wait_idle
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from protocol import Cancelled, Error, Started
from realtime.engine.tone import ToneRunner


async def test_a_client_that_never_reads_is_closed_with_1008(server_factory, ws_connect):
    server = await server_factory(send_queue_bytes=8192)
    # A small receive buffer and a one-message client queue: the client's
    # socket fills at once and the server's replies pile up in its outbox.
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", server.port))
    sock.setblocking(False)
    ws = await connect(f"ws://127.0.0.1:{server.port}/v1/stream", sock=sock, max_queue=1,
                       max_size=None, open_timeout=10)
    flood = '{"type":"cancel","id":"' + "n" * 60 + '"}'  # each refused with an unknown_id error
    sent = 0
    try:
        for sent in range(1, 20001):  # bounded: far more than the buffers between us hold
            await ws.send(flood)
            if sent % 200 == 0 and server.connection_count == 0:
                break
    except ConnectionClosed:
        pass
    loop = asyncio.get_running_loop()
    end = loop.time() + 20
    code = None
    try:
        while loop.time() < end:  # now read everything: the replies, then the close
            await asyncio.wait_for(ws.recv(), max(end - loop.time(), 0.01))
    except ConnectionClosed as exc:
        code = exc.rcvd.code if exc.rcvd else None
        reason = exc.rcvd.reason if exc.rcvd else ""
    assert code == 1008, f"closed with {code} after {sent} messages"
    assert "not reading" in reason
    # The server goes on: a reading client gets its (short: the queue is small) audio.
    client = await ws_connect(server)
    (await client.speak_and_collect("after", "Hi.")).check_done()
    await wait_idle(server)


class HeldPrepare(ToneRunner):
    """``prepare`` waits until the test releases it: while it waits, the
    worker cannot have answered the admission."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def prepare(self, request):
        self.entered.set()
        if not self.release.wait(10):
            raise RuntimeError("the test never released prepare")
        return super().prepare(request)


async def test_cancel_while_admission_is_pending_ends_in_cancelled(server_factory, ws_connect):
    runner = HeldPrepare()
    server = await server_factory(runner=runner)
    client = await ws_connect(server)
    try:
        await client.send({"type": "speak", "id": "held", "text": "Wait for me. " * 4})
        assert await asyncio.to_thread(runner.entered.wait, 10)  # the worker is inside prepare
        await client.send({"type": "cancel", "id": "held"})
        # Messages are handled in order: this one's answer proves the cancel was handled.
        await client.send({"type": "cancel", "id": "marker"})
        marker = await client.next_message(Error)
        assert marker.id == "marker" and marker.code == "unknown_id"
        assert client.transcript("held").started is None and client.transcript("held").terminal is None
    finally:
        runner.release.set()
    t = (await client.collect(["held"]))["held"]
    assert isinstance(t.started, Started)
    assert isinstance(t.terminal, Cancelled) and not t.frames and not t.after_terminal
    await wait_idle(server)
