"""clients.RealtimeClient against a scripted WebSocket peer (no model, exact bytes).

The peer plays the server's side of docs/protocol.md from a script, so each test pins
one client behaviour: demultiplexing, terminal handling, refusals, barge-in, auth.
"""

from __future__ import annotations

import asyncio
import json
import logging

import numpy as np
import pytest
from websockets.asyncio.server import serve
from websockets.datastructures import Headers
from websockets.http11 import Response

from clients import (
    AudioChunk,
    ConnectionLost,
    HandshakeRefused,
    InputClosed,
    Overloaded,
    ProtocolViolation,
    RealtimeClient,
    UtteranceCancelled,
)
from protocol import Cancelled, Done
from protocol.frames import FLAG_SEGMENT_END, FLAG_UTTERANCE_END, FrameHeader, pack_frame
from protocol.pcm import encode_samples

HELLO = {"type": "hello", "protocol": 1, "sample_rate": 24000,
         "formats": ["pcm_s16le", "pcm_f32le", "pcm_mulaw"], "sample_rates": [16000, 24000],
         "voices": ["alice"], "limits": {"max_text_chars": 5000, "max_active": 8,
                                         "max_message_bytes": 65536},
         "model": {"name": "chattts", "weights": "tiny-random", "device": "cpu"}}
TIMING = {"queued_ms": 1.0, "first_audio_ms": 5.0, "total_ms": 20.0, "rtf": 0.1}


def frame(stream, seq, segment=0, flags=0, n=240, value=0.25):
    payload = encode_samples(np.full(n, value, np.float32), "pcm_s16le")
    return pack_frame(FrameHeader(flags=flags, segment=segment, stream=stream, seq=seq), payload)


class Peer:
    """A scripted server: `script(ws, msg)` is called for each client message."""

    def __init__(self, script, hello=HELLO, status=None):
        self.script = script
        self.hello = hello
        self.status = status
        self.received: list[dict] = []
        self.headers: Headers | None = None

    async def __aenter__(self):
        def check(connection, request):
            self.headers = request.headers
            if self.status:
                return Response(self.status, "refused", Headers(), b"")
            return None

        self._server = await serve(self.handler, "127.0.0.1", 0, process_request=check)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/v1/stream"
        return self

    async def __aexit__(self, *exc):
        self._server.close()
        await self._server.wait_closed()

    async def handler(self, ws):
        await ws.send(json.dumps(self.hello))
        async for raw in ws:
            assert isinstance(raw, str), "client frames must be text frames"
            msg = json.loads(raw)
            self.received.append(msg)
            await self.script(ws, msg)


async def speak_two_segments(ws, msg):
    if msg["type"] != "speak":
        return
    uid, stream = msg["id"], 7
    await ws.send(json.dumps({"type": "started", "id": uid, "stream": stream,
                              "lane": "interactive", "format": "pcm_s16le",
                              "sample_rate": 24000}))
    await ws.send(frame(stream, 0))
    await ws.send(frame(stream, 1, flags=FLAG_SEGMENT_END))
    await ws.send(json.dumps({"type": "segment", "id": uid, "index": 0, "text": "One.",
                              "offset_ms": 0, "audio_ms": 20}))
    await ws.send(frame(stream, 2, segment=1, flags=FLAG_SEGMENT_END | FLAG_UTTERANCE_END))
    await ws.send(json.dumps({"type": "segment", "id": uid, "index": 1, "text": "Two.",
                              "offset_ms": 20, "audio_ms": 10}))
    await ws.send(json.dumps({"type": "done", "id": uid, "audio_ms": 30, "segments": 2,
                              "timing": TIMING}))


async def test_speak_yields_audio_segments_then_done(caplog):
    caplog.set_level(logging.WARNING, logger="clients.client")
    async with Peer(speak_two_segments) as peer, RealtimeClient(peer.url) as client:
        assert list(client.hello.voices) == ["alice"]
        assert client.weights_warning and "tiny-random" in client.weights_warning
        assert any("tiny-random" in r.getMessage() for r in caplog.records)
        utt = await client.speak("One. Two.", voice="alice")
        items = [item async for item in utt]
        done = await utt.result()
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["AudioChunk", "AudioChunk", "Segment", "AudioChunk", "Segment", "Done"]
    chunks = [i for i in items if isinstance(i, AudioChunk)]
    assert [c.seq for c in chunks] == [0, 1, 2]
    assert [c.segment for c in chunks] == [0, 0, 1]
    assert [c.last_in_segment for c in chunks] == [False, True, True]
    assert chunks[-1].last_in_utterance and not chunks[0].last_in_utterance
    assert chunks[0].duration_ms == pytest.approx(10.0)
    np.testing.assert_allclose(chunks[0].samples, 0.25, atol=1 / 32767)
    assert isinstance(done, Done) and done.audio_ms == 30
    assert utt.audio_ms == pytest.approx(30.0)
    assert [s.index for s in utt.segments] == [0, 1]
    assert utt.first_audio_ms is not None and utt.first_audio_ms >= 0
    sent = peer.received[0]
    assert sent["type"] == "speak" and sent["voice"] == "alice" and sent["text"] == "One. Two."
    assert "deadline_ms" not in sent


async def interleave(ws, msg):
    if msg["type"] != "speak":
        return
    # Hold the first speak until the second arrives, then interleave both streams.
    interleave.pending.append(msg["id"])
    if len(interleave.pending) < 2:
        return
    a, b = interleave.pending
    for uid, stream in ((a, 1), (b, 2)):
        await ws.send(json.dumps({"type": "started", "id": uid, "stream": stream,
                                  "lane": "interactive", "format": "pcm_s16le",
                                  "sample_rate": 24000}))
    for seq in range(3):
        last = FLAG_SEGMENT_END | FLAG_UTTERANCE_END if seq == 2 else 0
        await ws.send(frame(2, seq, flags=last, value=-0.5))
        await ws.send(frame(1, seq, flags=last, value=0.5))
    for uid in (b, a):
        await ws.send(json.dumps({"type": "segment", "id": uid, "index": 0, "text": "x",
                                  "offset_ms": 0, "audio_ms": 30}))
        await ws.send(json.dumps({"type": "done", "id": uid, "audio_ms": 30, "segments": 1,
                                  "timing": TIMING}))


async def test_concurrent_utterances_are_demultiplexed():
    interleave.pending = []
    async with Peer(interleave) as peer, RealtimeClient(peer.url) as client:
        first = await client.speak("a")
        second = await client.speak("b")
        pcm_a, done_a = await first.collect()
        pcm_b, done_b = await second.collect()
    assert first.id != second.id
    assert first.frames == second.frames == 3
    assert np.all(np.frombuffer(pcm_a, "<i2") > 0) and np.all(np.frombuffer(pcm_b, "<i2") < 0)
    assert done_a.id == first.id and done_b.id == second.id
    assert client.active == []


async def refuse(ws, msg):
    if msg["type"] == "speak":
        await ws.send(json.dumps({"type": "error", "id": msg["id"], "code": "overloaded",
                                  "message": "queue full"}))


async def test_refusal_raises_typed_error_everywhere():
    async with Peer(refuse) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("hello")
        with pytest.raises(Overloaded) as info:
            async for _ in utt:
                pass
        assert info.value.id == utt.id and info.value.code == "overloaded"
        with pytest.raises(Overloaded):
            await utt.result()
        with pytest.raises(Overloaded):
            await utt.started()


async def streamed(ws, msg):
    uid = msg["id"]
    if msg["type"] == "speak":
        await ws.send(json.dumps({"type": "started", "id": uid, "stream": 3,
                                  "lane": "interactive", "format": "pcm_s16le",
                                  "sample_rate": 24000}))
    elif msg["type"] == "flush":
        # A refusal that must not end the utterance, then its audio.
        await ws.send(json.dumps({"type": "error", "id": uid, "code": "input_closed",
                                  "message": "input ended"}))
        await ws.send(frame(3, 0, flags=FLAG_SEGMENT_END))
        await ws.send(json.dumps({"type": "segment", "id": uid, "index": 0, "text": "x",
                                  "offset_ms": 0, "audio_ms": 10}))
    elif msg["type"] == "append" and msg.get("final"):
        await ws.send(json.dumps({"type": "done", "id": uid, "audio_ms": 10, "segments": 1,
                                  "timing": TIMING}))


async def test_streamed_input_and_non_terminal_refusal():
    async with Peer(streamed) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("Hel", final=False)
        await utt.append("lo there")
        await utt.flush()
        await asyncio.sleep(0.05)
        await utt.end_input()
        with pytest.raises(InputClosed):
            await utt.append("more")
        pcm, done = await utt.collect()
    assert len(pcm) == 480 and done.segments == 1
    assert [e.code for e in utt.refusals] == ["input_closed"]
    types = [(m["type"], m.get("final")) for m in peer.received]
    assert types == [("speak", False), ("append", False), ("flush", None), ("append", True)]


async def cancellable(ws, msg):
    uid = msg["id"]
    if msg["type"] == "speak":
        await ws.send(json.dumps({"type": "started", "id": uid, "stream": 4,
                                  "lane": "interactive", "format": "pcm_s16le",
                                  "sample_rate": 24000}))
        await ws.send(frame(4, 0))
    elif msg["type"] == "cancel":
        await ws.send(frame(4, 1))  # in flight when the cancel arrived
        await ws.send(json.dumps({"type": "cancelled", "id": uid}))


async def test_cancel_drops_audio_in_flight_and_ends_cancelled():
    async with Peer(cancellable) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("long text")
        it = aiter(utt)
        first = await anext(it)
        assert isinstance(first, AudioChunk)
        await utt.cancel()
        rest = [item async for item in it]
        with pytest.raises(UtteranceCancelled):
            await utt.result()
    assert [type(i) for i in rest] == [Cancelled]
    assert utt.frames == 1
    assert peer.received[-1] == {"type": "cancel", "id": utt.id}


async def hang_up(ws, msg):
    if msg["type"] == "speak":
        await ws.close()


async def test_connection_loss_ends_running_utterances():
    async with Peer(hang_up) as peer, RealtimeClient(peer.url, reconnect=False) as client:
        utt = await client.speak("hi")
        with pytest.raises(ConnectionLost):
            await asyncio.wait_for(utt.result(), 5)
        with pytest.raises(ConnectionLost):
            await client.speak("again")


async def test_handshake_refusal_and_bearer_token():
    async with Peer(refuse, status=401) as peer:
        with pytest.raises(HandshakeRefused) as info:
            async with RealtimeClient(peer.url, token="wrong"):
                pass
        assert info.value.status == 401
        assert peer.headers["Authorization"] == "Bearer wrong"


async def test_checkpoint_weights_give_no_warning():
    hello = dict(HELLO, model={"name": "chattts", "weights": "checkpoint", "device": "cuda"})
    async with Peer(refuse, hello=hello) as peer, RealtimeClient(peer.url) as client:
        assert client.weights_warning is None


async def unknown_message(ws, msg):
    await ws.send(json.dumps({"type": "from_the_future", "id": msg["id"]}))
    await speak_two_segments(ws, msg)


async def test_unknown_server_message_is_skipped():
    async with Peer(unknown_message) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("x")
        pcm, done = await utt.collect()
    assert done.segments == 2 and len(pcm) == 3 * 480


async def skip_a_frame(ws, msg):
    if msg["type"] != "speak":
        return
    uid = msg["id"]
    await ws.send(json.dumps({"type": "started", "id": uid, "stream": 5, "lane": "interactive",
                              "format": "pcm_s16le", "sample_rate": 24000}))
    await ws.send(frame(5, 0))
    await ws.send(frame(5, 2))  # seq 1 never came


async def test_a_server_breaking_the_ordering_rules_fails_the_utterance():
    async with Peer(skip_a_frame) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("hello")
        with pytest.raises(ProtocolViolation, match="seq 2, expected 1"):
            await utt.result()
        assert client.active == []
