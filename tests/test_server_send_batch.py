"""The batched send path: an outbox's queued messages leave together, in order,
and backpressure stays bounded as it was (realtime.server.stream.send_batch and
.outbox)."""

from __future__ import annotations

import asyncio
import socket

from conftest import wait_until

from protocol import Done, Error
from realtime.engine.tone import ToneRunner
from realtime.server.stream.outbox import Outbox
from realtime.server.stream.send_batch import StreamConnection

# -- the outbox's writer ----------------------------------------------------------------


class _Batch:
    """A Batch with a given room; records every send."""

    def __init__(self, room: int) -> None:
        self.space = room
        self.batches: list[list[tuple[bytes, bool]]] = []
        self.singles: list[tuple[bytes, bool]] = []

    def room(self) -> int:
        return self.space

    def send_all(self, messages):
        assert sum(len(m) for m, _ in messages) <= self.space
        self.batches.append(list(messages))

    async def send(self, data: bytes, text: bool) -> None:
        self.singles.append((data, text))


async def _drain(outbox: Outbox) -> None:
    writer = asyncio.create_task(outbox.run())
    await asyncio.wait_for(outbox.wait_flushed(), 5)
    outbox.close()
    await writer


async def test_queued_messages_go_as_one_batch_in_order() -> None:
    batch = _Batch(room=10_000)
    outbox = Outbox(batch.send, 1 << 20, lambda: None, batch)
    owner = object()
    outbox.put_control(b'{"type":"words"}', owner)
    for i in range(5):
        outbox.put_audio(owner, bytes([i]) * 100)
    await _drain(outbox)
    assert batch.singles == []
    assert batch.batches == [[(b'{"type":"words"}', True)] + [(bytes([i]) * 100, False) for i in range(5)]]
    assert outbox.queued_bytes == outbox.audio_bytes == 0


async def test_a_batch_never_takes_more_than_the_room() -> None:
    batch = _Batch(room=250)
    outbox = Outbox(batch.send, 1 << 20, lambda: None, batch)
    owner = object()
    for i in range(5):
        outbox.put_audio(owner, bytes([i]) * 100)
    await _drain(outbox)
    sent = [m for b in batch.batches for m in b] + batch.singles
    assert [len(b) for b in batch.batches] == [2, 2, 1]
    assert batch.singles == []
    assert [data[0] for data, _ in sent] == [0, 1, 2, 3, 4]


async def test_without_room_messages_go_one_at_a_time() -> None:
    batch = _Batch(room=0)  # the client is slow: websockets is paused
    outbox = Outbox(batch.send, 1 << 20, lambda: None, batch)
    owner = object()
    for i in range(3):
        outbox.put_audio(owner, bytes([i]) * 100)
    await _drain(outbox)
    assert batch.batches == []  # each waits for the socket: at most one out of purge's reach
    assert [data[0] for data, _ in batch.singles] == [0, 1, 2]


# -- end to end -------------------------------------------------------------------------


def _count_writes(monkeypatch) -> dict[str, int]:
    counts = {"batches": 0, "messages": 0}
    send_all = StreamConnection.send_all

    def counting(self, messages):
        counts["batches"] += 1
        counts["messages"] += len(messages)
        send_all(self, messages)

    monkeypatch.setattr(StreamConnection, "send_all", counting)
    return counts


def _wire(t) -> list[object]:
    """What a transcript received, in order, without the run's timing."""
    return [(kind.value, (item.header.flags, item.header.seq, len(item.payload)) if kind.value == "audio" else
             item if kind.value in ("words", "segment") else type(item).__name__)
            for kind, item in t.events]


async def test_words_and_frames_of_a_push_leave_together_in_order(server_factory, ws_connect,
                                                                  monkeypatch):
    counts = _count_writes(monkeypatch)
    server = await server_factory(runner=ToneRunner(codes_per_step=64))
    client = await ws_connect(server)
    text = "One two three four five six seven. Eight nine ten eleven twelve. " * 3
    batched = await client.speak_and_collect("w", text, timestamps=True, chunking="token")
    assert isinstance(batched.terminal, Done)  # the client checked every ordering rule
    assert batched.words and len(batched.frames) > 10
    # Most messages went in batches: far fewer writes than messages.
    assert counts["messages"] >= len(batched.frames)
    assert counts["batches"] * 3 <= counts["messages"]
    # One message at a time (no room): the same messages, in the same order.
    monkeypatch.setattr(StreamConnection, "room", lambda self: 0)
    single = await client.speak_and_collect("w", text, timestamps=True, chunking="token")
    assert _wire(single) == _wire(batched)


async def test_a_slow_client_keeps_the_transport_bounded(server_factory, ws_connect, monkeypatch):
    buffered: list[int] = []  # the transport's backlog after every batch
    send_all = StreamConnection.send_all

    def recording(self, messages):
        send_all(self, messages)
        buffered.append(self.transport.get_write_buffer_size())

    monkeypatch.setattr(StreamConnection, "send_all", recording)
    limit = 256 * 1024
    # 128 codes a step: a push is ~27 frames of 100 ms (130 kB), twice write_limit.
    runner = ToneRunner(codes_per_char=40, max_codes=4000, codes_per_step=128)
    server = await server_factory(runner=runner, send_queue_bytes=limit)
    client = await ws_connect(server, max_queue=1)
    client.ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    await client.send({"type": "ping"})
    await client.recv()  # the pong: the session exists
    session = next(iter(server.sessions))
    assert isinstance(session.ws, StreamConnection)
    transport = session.ws.transport
    transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    high = transport.get_write_buffer_limits()[1]
    text = "A very long stream of audio for nobody. " * 40
    buffered.clear()  # the pong's batch
    await client.send({"type": "speak", "id": "slow", "text": text, "frame_ms": 100})
    # Its batches sent, then the utterance ended (slow_consumer). Not "present, then
    # gone": the whole utterance can start and end between two polls of a busy loop.
    await wait_until(lambda: buffered and "slow" not in session.utterances, timeout=20)
    assert session.outbox.audio_bytes <= limit
    t = (await client.collect(["slow"], timeout=20))["slow"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "slow_consumer"
    frame = 2400 * 2 + 16  # one 100 ms frame and its headers
    assert buffered and max(buffered) <= high + frame  # as with one send at a time, every batch


async def test_without_the_speech_endpoint_connections_batch_too(server_factory, ws_connect,
                                                                 monkeypatch):
    counts = _count_writes(monkeypatch)
    server = await server_factory(runner=ToneRunner(codes_per_step=64), disable_speech_api=True)
    client = await ws_connect(server)
    t = await client.speak_and_collect("p", "Plain words for a plain server. " * 4)
    assert isinstance(t.terminal, Done)
    assert isinstance(next(iter(server.sessions)).ws, StreamConnection)
    assert counts["batches"] * 3 <= counts["messages"]


# -- the connection, over a transport of the test's ----------------------------------------


class _Transport:
    def __init__(self) -> None:
        self.buffered = 0
        self.closing = False
        self.limits = (0, 0)
        self.writes: list[list[bytes]] = []

    def set_write_buffer_limits(self, high=None, low=None):
        self.limits = (low or 0, high)

    def get_write_buffer_limits(self):
        return self.limits

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def is_closing(self) -> bool:
        return self.closing

    def writelines(self, chunks) -> None:
        self.writes.append(list(chunks))

    def pause_reading(self) -> None: ...
    def resume_reading(self) -> None: ...


async def _connection() -> tuple[StreamConnection, _Transport]:
    from websockets.protocol import State
    from websockets.server import ServerProtocol

    class _Server:  # what websockets' Server does on connection_made: nothing here
        def start_connection_handler(self, connection) -> None: ...

    connection = StreamConnection(ServerProtocol(state=State.OPEN), _Server(), write_limit=1000)
    transport = _Transport()
    connection.connection_made(transport)
    return connection, transport


async def test_room_is_what_the_transport_takes_before_its_high_water_mark() -> None:
    connection, transport = await _connection()
    assert connection.room() == 1000
    transport.buffered = 600
    assert connection.room() == 400
    connection.pause_writing()  # the client is slow: one send at a time, and wait
    assert connection.room() == 0
    connection.resume_writing()
    assert connection.room() == 400
    transport.closing = True
    assert connection.room() == 0


# Every length encoding of RFC 6455 (7 bits, 16, 64) and its edges, text and binary.
_MESSAGES = [(b'{"type":"words"}', True), (b"\x01" * 300, False), (b"\x02" * 5, False),
             (b"", False), (b"a" * 125, True), (b"b" * 126, True), (b"\x03" * 65535, False),
             (b"\x04" * 65536, False), ("é€".encode() * 30000, True)]


def _websockets_bytes(messages, extensions=()) -> bytes:
    """What websockets' own send would write for these messages."""
    from websockets.protocol import State
    from websockets.server import ServerProtocol

    reference = ServerProtocol(state=State.OPEN)
    reference.extensions = list(extensions)
    for data, text in messages:
        (reference.send_text if text else reference.send_binary)(data)
    return b"".join(reference.data_to_send())


async def test_send_all_writes_websockets_frames_in_one_call() -> None:
    connection, transport = await _connection()
    connection.send_all(_MESSAGES)
    assert len(transport.writes) == 1  # one writelines: one writev
    assert b"".join(transport.writes[0]) == _websockets_bytes(_MESSAGES)


async def test_an_extension_is_applied_by_websockets_framing() -> None:
    from websockets.extensions.permessage_deflate import PerMessageDeflate

    def deflate():  # one compressor per side: its state carries from message to message
        return PerMessageDeflate(False, False, 15, 15)
    connection, transport = await _connection()
    connection._wire.extensions = [deflate()]
    connection.send_all(_MESSAGES[:3])
    assert len(transport.writes) == 1
    assert b"".join(transport.writes[0]) == _websockets_bytes(_MESSAGES[:3], [deflate()])
