"""The client's voice-agent features against a scripted peer (exact bytes): word timings,
flush acknowledgements, keepalive pings and the reconnect after an idle close.

Each peer plays the server's side of docs/protocol.md's second set of additions, so each
test pins one client behaviour; tests/test_clients_voice_e2e.py drives the real server.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest
from test_clients_library import HELLO, TIMING, Peer, frame
from websockets.exceptions import ConnectionClosed

from clients import ConnectionLost, RealtimeClient
from clients.events import Flushed, WordCursor, Words, WordStart, caller_word
from protocol.frames import FLAG_SEGMENT_END, FLAG_UTTERANCE_END
from protocol.words import WordTiming

WORDS = [{"word": "twenty", "start_ms": 0.0, "end_ms": 6.0, "original": "$20"},
         {"word": "dollars", "start_ms": 6.0, "end_ms": 10.0, "original": "$20"},
         {"word": "now", "start_ms": 12.0, "end_ms": 20.0}]


async def speak_with_words(ws, msg):
    """One segment of two 10 ms frames; its words before its first frame."""
    if msg["type"] == "ping":
        await ws.send(json.dumps({"type": "pong"}))
    if msg["type"] == "flush" and msg.get("flush_id"):
        await ws.send(json.dumps({"type": "flushed", "id": msg["id"],
                                  "flush_id": msg["flush_id"]}))
    if msg["type"] != "speak":
        return
    uid = msg["id"]
    await ws.send(json.dumps({"type": "started", "id": uid, "stream": 3, "lane": "interactive",
                              "format": "pcm_s16le", "sample_rate": 24000}))
    if msg.get("timestamps"):
        await ws.send(json.dumps({"type": "words", "id": uid, "segment": 0, "words": WORDS,
                                  "method": "estimated"}))
    if not msg.get("final", True):
        return  # the rest comes with the end of the input
    await finish(ws, uid)


async def finish(ws, uid):
    await ws.send(frame(3, 0))
    await ws.send(frame(3, 1, flags=FLAG_SEGMENT_END | FLAG_UTTERANCE_END))
    await ws.send(json.dumps({"type": "segment", "id": uid, "index": 0, "text": "$20 now.",
                              "spoken": "twenty dollars now.", "offset_ms": 0,
                              "audio_ms": 20}))
    await ws.send(json.dumps({"type": "done", "id": uid, "audio_ms": 20, "segments": 1,
                              "timing": TIMING, "unspoken": ["Привет."]}))


async def test_word_timings_come_in_order_before_their_audio():
    async with Peer(speak_with_words) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("$20 now.", timestamps=True)
        items = [item async for item in utt]
        plain = await client.speak("no words")
        await plain.collect()
    kinds = [type(i).__name__ for i in items]
    assert kinds == ["Words", "AudioChunk", "AudioChunk", "Segment", "Done"]
    words = items[0]
    assert isinstance(words, Words) and words.segment == 0 and words.method == "estimated"
    assert [w.word for w in utt.words] == ["twenty", "dollars", "now"]
    assert [caller_word(w) for w in utt.words] == ["$20", "$20", "now"]
    assert utt.words[2].start_ms == 12.0 and utt.words[2].end_ms == 20.0
    # Stopped after 11 ms of audio, the listener heard the first two words, not "now".
    assert [w.word for w in utt.heard_words(11.0)] == ["twenty", "dollars"]
    assert len(utt.heard_words()) == 3  # all 20 ms came
    assert peer.received[0]["timestamps"] is True
    assert "timestamps" not in peer.received[1] and plain.words == []


def test_the_word_cursor_hands_a_pending_word_on_once_at_its_start():
    cursor = WordCursor()
    cursor.add([WordTiming("a", 0.0, 4.0)], (WordStart("twenty", 5.0, "$20"),))
    assert [w.word for w in cursor.take(5.0)] == ["a"]  # "twenty" starts at 5.0, not before
    [begun] = cursor.take(6.0)
    assert isinstance(begun, WordStart) and caller_word(begun) == "$20"
    cursor.add([], (WordStart("twenty", 5.0, "$20"),))  # still in progress
    assert cursor.take(9.0) == []
    cursor.add([WordTiming("twenty", 5.0, 8.0, "$20"), WordTiming("dollars", 8.0, 9.0, "$20"),
                WordTiming("now", 9.5, 12.0)], (WordStart("ok", 12.0),))
    # "dollars" came from the same "$20": handed on with "twenty" already
    assert [w.word for w in cursor.take(13.0)] == ["now", "ok"]
    cursor.add([WordTiming("ok", 12.0, 14.0)])
    assert cursor.take(100.0) == []


async def test_a_pending_words_timing_counts_from_when_its_start_came():
    async def peer_side(ws, msg):
        if msg["type"] != "speak":
            return
        await ws.send(json.dumps({"type": "started", "id": "u", "stream": 3,
                                  "lane": "interactive", "format": "pcm_s16le",
                                  "sample_rate": 24000}))
        await ws.send(json.dumps({"type": "words", "id": "u", "segment": 0, "words": [],
                                  "method": "estimated",
                                  "pending": [{"word": "hi", "start_ms": 0.0}]}))
        await ws.send(frame(3, 0))
        await asyncio.sleep(0.05)
        await ws.send(json.dumps({"type": "words", "id": "u", "segment": 0, "method": "estimated",
                                  "words": [{"word": "hi", "start_ms": 0.0, "end_ms": 15.0},
                                            {"word": "you", "start_ms": 15.0, "end_ms": 20.0}]}))
        await finish_second_frame(ws)

    async def finish_second_frame(ws):
        await ws.send(frame(3, 1, flags=FLAG_SEGMENT_END | FLAG_UTTERANCE_END))
        await ws.send(json.dumps({"type": "segment", "id": "u", "index": 0, "text": "Hi you.",
                                  "offset_ms": 0, "audio_ms": 20}))
        await ws.send(json.dumps({"type": "done", "id": "u", "audio_ms": 20, "segments": 1,
                                  "timing": TIMING}))

    async with Peer(peer_side) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("Hi you.", id="u", timestamps=True)
        pending_seen = []
        async for item in utt:
            if isinstance(item, Words):
                pending_seen.append([w.word for w in utt.pending])
        assert pending_seen == [["hi"], []]
        assert [w.word for w in utt.words] == ["hi", "you"]
        hi, you = utt.words_received_at
        assert you - hi >= 0.04  # "hi"'s start came with the first message


async def test_flush_waits_for_its_acknowledgement():
    async with Peer(speak_with_words) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("Hello", final=False)
        ack = await asyncio.wait_for(utt.flush("turn-1.a", wait=True), 5)
        assert ack == Flushed(utt.id, "turn-1.a")
        assert await utt.flush() is None  # no id: nothing to wait for
        auto = await asyncio.wait_for(utt.flush(wait=True), 5)
        assert auto is not None and auto.flush_id
        with pytest.raises(KeyError):
            await utt.flushed("never-sent")
        await utt.cancel()
    flushes = [m for m in peer.received if m["type"] == "flush"]
    assert flushes[0] == {"type": "flush", "id": utt.id, "flush_id": "turn-1.a"}
    assert "flush_id" not in flushes[1]


async def test_spoken_text_and_unspoken_sentences_are_exposed():
    async with Peer(speak_with_words) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("$20 now. Привет.")
        await utt.collect()
    assert utt.spoken == "twenty dollars now."
    assert utt.unspoken == ("Привет.",)


def idle_hello(timeout_s):
    return dict(HELLO, limits=dict(HELLO["limits"], idle_timeout_s=timeout_s))


async def test_keepalive_pings_an_idle_connection_before_the_timeout():
    async with Peer(speak_with_words, hello=idle_hello(0.25)) as peer, \
            RealtimeClient(peer.url) as client:
        assert client.idle_timeout_s == 0.25
        await asyncio.sleep(0.6)
        pings = [m for m in peer.received if m["type"] == "ping"]
        # At 40 % of the timeout: at least two in 0.6 s, and no flood.
        assert 2 <= len(pings) <= 7 and client.pings == len(pings)
        assert await client.ping() >= 0
    async with Peer(speak_with_words, hello=idle_hello(0.25)) as peer, \
            RealtimeClient(peer.url, keepalive=False) as client:
        await asyncio.sleep(0.3)
    assert not [m for m in peer.received if m["type"] == "ping"]


class IdleCloser(Peer):
    """Closes a connection with 1000 after `idle_s` without a message, or at once on
    the first speak of its first connection when `cross` (the close crossing it)."""

    def __init__(self, idle_s=None, cross=False):
        super().__init__(speak_with_words, hello=idle_hello(idle_s or 30))
        self.idle_s, self.cross, self.connections = idle_s, cross, 0

    async def handler(self, ws):
        self.connections += 1
        first = self.connections == 1
        await ws.send(json.dumps(self.hello))
        while True:
            try:
                raw = await asyncio.wait_for(ws.recv(), self.idle_s)
            except TimeoutError:
                await ws.close(1000, "idle for too long")
                return
            except ConnectionClosed:
                return
            msg = json.loads(raw)
            self.received.append(msg)
            if first and self.cross and msg["type"] == "speak":
                await ws.close(1000, "idle for too long")
                return
            await self.script(ws, msg)


async def test_keepalive_holds_a_connection_the_server_would_close_as_idle():
    async with IdleCloser(idle_s=0.25) as peer, RealtimeClient(peer.url) as client:
        await asyncio.sleep(1.0)
        assert client.connected and peer.connections == 1 and client.pings >= 2
        pcm, _ = await asyncio.wait_for((await client.speak("$20 now.")).collect(), 5)
    assert client.reconnects == 0 and len(pcm) == 2 * 480


async def test_the_next_speak_reconnects_after_an_idle_close():
    async with IdleCloser(idle_s=0.2) as peer, RealtimeClient(peer.url, keepalive=False) as client:
        await asyncio.sleep(0.5)
        assert not client.connected and client.close_code == 1000
        utt = await client.speak("$20 now.", timestamps=True)
        pcm, done = await asyncio.wait_for(utt.collect(), 5)
    assert client.reconnects == 1 and peer.connections == 2
    assert done.segments == 1 and len(pcm) == 2 * 480


async def test_a_speak_crossing_the_idle_close_is_sent_again():
    async with IdleCloser(cross=True) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("$20 now.", timestamps=True)
        pcm, done = await asyncio.wait_for(utt.collect(), 5)
    assert utt.replayed and client.reconnects == 1 and peer.connections == 2
    speaks = [m for m in peer.received if m["type"] == "speak"]
    assert len(speaks) == 2 and speaks[0] == speaks[1]
    assert len(utt.words) == 3 and done.segments == 1


async def test_a_streamed_speak_is_sent_again_with_its_text_so_far():
    async with IdleCloser(cross=True) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("Hello ", final=False)
        await utt.append("there", final=False)  # may cross the close too
        await asyncio.sleep(0.3)
        assert utt.replayed
        await utt.end_input()
    speaks = [m for m in peer.received if m["type"] == "speak"]
    assert speaks[-1]["text"] == "Hello there" and speaks[-1]["final"] is False


async def test_a_server_closing_on_every_speak_ends_the_utterance_loudly():
    async def hang_up(ws, msg):
        if msg["type"] == "speak":
            await ws.close(1000, "bye")

    async with Peer(hang_up) as peer, RealtimeClient(peer.url) as client:
        utt = await client.speak("hi")
        with pytest.raises(ConnectionLost):
            await asyncio.wait_for(utt.result(), 5)
    assert utt.replayed  # sent again once, then given up
    assert len([m for m in peer.received if m["type"] == "speak"]) == 2


async def test_livekit_logs_spoken_text_and_unspoken_sentences(caplog):
    from clients.livekit_tts import ChatTTSRealtimeTTS

    caplog.set_level(logging.INFO, logger="clients.livekit_tts")
    async with Peer(speak_with_words) as peer:
        tts = ChatTTSRealtimeTTS(url=peer.url, keepalive=False)
        try:
            frame = await tts.synthesize("$20 now. Привет.").collect()
        finally:
            await tts.aclose()
    assert frame.duration > 0
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "read as 'twenty dollars now.'" in logged
    assert "not spoken (nothing to read): 'Привет.'" in logged
    assert peer.received[0]["timestamps"] is True
