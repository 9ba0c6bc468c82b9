"""End to end with the vocoder overlapped (``--vocoder-overlap on``) on the CPU:
the delayed audio path (realtime/engine/vocoder/overlap.py) behind the real
server. The audio is the synchronous server's, of the same length and
within float rounding once chunks follow the schedule alone (the listener's
early and held chunks move seams by the clock, and a moved seam moves samples
near it by ~1e-3: seen in CI; the runner-level tests are bit for bit: here the
servers' timing may also pack windows differently, which moves a sample by a
rounding step at most, seen: one 16-bit step); a flush is
answered after its text's audio; a cancel ends the utterance and frees its
slot while audio may be in flight; the worker ends idle.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from protocol import Cancelled
from protocol.pcm import decode_samples
from protocol.stream import Kind
from realtime.server.config import ServerConfig

SEED = {"seed": 7}
ROUNDING = 4 / 32768  # a few 16-bit steps; a lost or shifted chunk differs by ~0.1


@pytest.fixture(scope="module")
def overlap_server():
    from realtime.server.embedded import ServerThread

    # The session's tiny_server's shapes, with the overlap on.
    thread = ServerThread(ServerConfig(port=0, weights="tiny-random", device="cpu",
                                       batch_sizes=(1, 2, 4), kv_buckets=(256, 512),
                                       max_slots=8, admission="queue-only",
                                       vocoder_overlap="on"))
    thread.start(timeout=180)
    yield thread
    thread.stop()


async def _idle(worker) -> bool:
    for _ in range(600):
        if worker.stats.in_flight == 0 and worker.scheduler.idle:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_the_overlapped_servers_audio_is_the_synchronous_ones(overlap_server, tiny_server,
                                                                     ws_connect, monkeypatch):
    from realtime.engine.vocoder.listener import Listener

    # Both servers' chunks on the schedule alone (module docstring).
    monkeypatch.setattr(Listener, "holds", lambda self, steps, largest: False)
    monkeypatch.setattr(Listener, "hurries", lambda self, codes, steps: False)
    assert overlap_server.server.worker.runner.audio.delivery.delayed
    assert not tiny_server.server.worker.runner.audio.delivery.delayed
    audio = {}
    for name, server in (("on", overlap_server), ("off", tiny_server)):
        client = await ws_connect(server.url)
        t = await client.speak_and_collect(name, "Hi there. Bye.", timeout=240, params=SEED,
                                           chunking="token", frame_ms=20)
        done = t.check_done()
        assert done.segments == 2 and t.frames[-1].header.utterance_end
        audio[name] = t.audio
    on, off = (decode_samples(audio[k], "pcm_s16le") for k in ("on", "off"))
    assert len(on) == len(off) > 0 and float(np.abs(on - off).max()) <= ROUNDING


async def test_a_flush_is_answered_after_its_texts_audio(overlap_server, ws_connect):
    client = await ws_connect(overlap_server.url)
    await client.send({"type": "speak", "id": "t", "text": "Hi there, friend", "final": False,
                       "params": SEED, "chunking": "token", "frame_ms": 20})
    await client.send({"type": "flush", "id": "t", "flush_id": "f1"})
    await client.send({"type": "append", "id": "t", "text": ". Bye.", "final": True})
    t = (await client.collect(["t"], timeout=240))["t"]
    t.check_done()
    kinds = [kind for kind, _ in t.events]
    flushed = [i for i, k in enumerate(kinds) if k is Kind.FLUSHED]
    segments = [i for i, k in enumerate(kinds) if k is Kind.SEGMENT]
    assert len(flushed) == 1 and segments[0] < flushed[0] < segments[1]


async def test_a_cancel_with_audio_in_flight_ends_cleanly(overlap_server, ws_connect):
    worker = overlap_server.server.worker
    client = await ws_connect(overlap_server.url)
    t = await client.cancel_once_started("c", "A sentence to cut short, much later.",
                                         chunking="token", frame_ms=20, params=SEED)
    assert isinstance(t.terminal, Cancelled)
    assert await _idle(worker)
    again = await client.speak_and_collect("again", "Still here.", timeout=240, params=SEED)
    again.check_done()
    assert await _idle(worker) and not worker.runner.jobs
