"""Retry hints in the client library and the Pipecat service (scripted peers)."""

from __future__ import annotations

import json
import random

import pytest
from test_clients_library import TIMING, Peer, frame

from clients import Backoff, Overloaded, RealtimeClient, Unsupported, speak_admitted
from clients.errors import TooManyActive, from_message
from protocol import Error
from protocol.frames import FLAG_SEGMENT_END, FLAG_UTTERANCE_END


def overloaded(retry_after_ms=None):
    return Overloaded("no capacity", retry_after_ms=retry_after_ms)


def test_the_wait_is_the_servers_hint_with_jitter_and_bounded():
    rng = random.Random(1)
    backoff = Backoff(max_attempts=5, base_s=0.1, max_delay_s=2.0, max_total_s=3.0, jitter=0.2)
    for _ in range(50):
        assert 0.3 <= backoff.delay(overloaded(300), 1, 0.0, rng) <= 0.36
    # No hint: exponential from base_s.
    assert 0.4 <= backoff.delay(overloaded(), 3, 0.0, rng) <= 0.48
    assert backoff.delay(overloaded(60_000), 1, 0.0, rng) == 2.0  # never above max_delay_s
    assert backoff.delay(overloaded(300), 5, 0.0, rng) is None  # out of attempts
    assert backoff.delay(overloaded(1500), 2, 2.0, rng) is None  # out of time
    assert backoff.delay(TooManyActive("8 active", retry_after_ms=10), 1, 0.0, rng) is not None
    assert backoff.delay(Unsupported("voice"), 1, 0.0, rng) is None  # retrying will not help


def test_errors_carry_the_hint_from_the_wire():
    exc = from_message(Error("u1", "overloaded", "full", retry_after_ms=250))
    assert isinstance(exc, Overloaded) and exc.retry_after_ms == 250
    assert "retry_after_ms=250" in str(exc)
    assert from_message(Error("u1", "internal", "boom")).retry_after_ms is None


class RefuseThenSpeak:
    """A peer that refuses the first ``refusals`` speaks for load (with a hint),
    then speaks every utterance once its input is final: a frame per character."""

    def __init__(self, refusals: int = 1, retry_after_ms: int = 30, code: str = "overloaded"):
        self.refusals = refusals
        self.retry_after_ms = retry_after_ms
        self.code = code
        self.texts: dict[str, str] = {}
        self.speaks: list[str] = []

    async def __call__(self, ws, msg):
        kind, uid = msg["type"], msg["id"]
        if kind == "speak":
            self.speaks.append(uid)
            if len(self.speaks) <= self.refusals:
                await ws.send(json.dumps({"type": "error", "id": uid, "code": self.code,
                                          "message": "busy", "retry_after_ms": self.retry_after_ms}))
                return
            self.texts[uid] = msg["text"]
            await ws.send(json.dumps({"type": "started", "id": uid, "stream": len(self.speaks),
                                      "lane": "interactive", "format": "pcm_s16le",
                                      "sample_rate": 24000}))
        elif kind == "append" and uid in self.texts:
            self.texts[uid] += msg["text"]
        else:
            return  # e.g. an append that crossed the refusal of its speak
        if msg.get("final", True):
            await self._speak_out(ws, uid, len(self.speaks))

    async def _speak_out(self, ws, uid, stream):
        count = max(len(self.texts[uid]), 1)
        for seq in range(count):
            last = seq == count - 1
            await ws.send(frame(stream, seq, flags=(FLAG_SEGMENT_END | FLAG_UTTERANCE_END) if last else 0))
        audio_ms = count * 10.0
        await ws.send(json.dumps({"type": "segment", "id": uid, "index": 0, "text": self.texts[uid],
                                  "offset_ms": 0, "audio_ms": audio_ms}))
        await ws.send(json.dumps({"type": "done", "id": uid, "audio_ms": audio_ms, "segments": 1,
                                  "timing": TIMING}))


async def test_speak_admitted_waits_the_hint_and_speaks_again():
    waits = []

    async def sleep(seconds):
        waits.append(seconds)

    peer_script = RefuseThenSpeak(refusals=2, retry_after_ms=40)
    async with Peer(peer_script) as peer, RealtimeClient(peer.url) as client:
        utt = await speak_admitted(client, "Hello.", backoff=Backoff(jitter=0.0), sleep=sleep)
        pcm, done = await utt.collect()
    assert len(peer_script.speaks) == 3 and waits == [0.04, 0.04]
    assert done.id == utt.id and len(pcm) > 0


async def test_speak_admitted_gives_up_with_the_last_refusal():
    peer_script = RefuseThenSpeak(refusals=10, retry_after_ms=1)
    async with Peer(peer_script) as peer, RealtimeClient(peer.url) as client:
        with pytest.raises(Overloaded) as info:
            await speak_admitted(client, "Hello.", backoff=Backoff(max_attempts=3))
    assert len(peer_script.speaks) == 3 and info.value.retry_after_ms == 1


async def test_speak_admitted_does_not_retry_what_load_did_not_cause():
    peer_script = RefuseThenSpeak(refusals=10, code="unsupported")
    async with Peer(peer_script) as peer, RealtimeClient(peer.url) as client:
        with pytest.raises(Unsupported):
            await speak_admitted(client, "Hello.")
    assert len(peer_script.speaks) == 1


async def test_pipecat_retries_a_refused_turn_with_all_its_text():
    pytest.importorskip("pipecat")
    from examples.llm_script import REPLY
    from examples.pipecat_example import run_pipeline

    peer_script = RefuseThenSpeak(refusals=1, retry_after_ms=30)
    async with Peer(peer_script) as peer:
        collector = await run_pipeline(peer.url, None, REPLY, token_delay_s=0.002)
    tts = collector.tts
    assert len(tts.turns_opened) == 1 and tts.turns_done == tts.turns_opened
    refused, admitted = peer_script.speaks
    assert admitted == f"{refused}.r2"  # a fresh id: late answers to the first cannot reach it
    assert peer_script.texts[admitted] == REPLY  # nothing said meanwhile was lost
    assert len(collector.audio) > 0
