"""End to end with the real model runtime: `--weights tiny-random --device cpu`.

One shared server for the module (session fixture ``tiny_server``); short texts,
because every model step is real work on the CPU.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from word_checks import check_words_precede_their_audio

from protocol import Cancelled, Started
from protocol.pcm import decode_samples
from protocol.stream import Kind

SEED = {"seed": 7}


async def test_hello_reports_tiny_random_weights(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    assert client.hello.model.weights == "tiny-random"
    assert client.hello.model.device == "cpu"
    assert client.hello.voices  # the runtime's named voices


async def test_sentence_and_token_chunking_produce_matching_audio(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    await client.send({"type": "speak", "id": "s", "text": "Hi there. Bye.", "params": SEED})
    await client.send({"type": "speak", "id": "t", "text": "Hi there. Bye.", "params": SEED,
                       "chunking": "token", "frame_ms": 50})
    result = await client.collect(["s", "t"], timeout=240)
    for t in result.values():
        done = t.check_done()
        assert done.segments == 2 and done.audio_ms > 0
        assert t.frames[-1].header.utterance_end
        samples = decode_samples(t.audio, "pcm_s16le")
        assert np.all(np.isfinite(samples)) and np.max(np.abs(samples)) > 0
    # same seed, same text: the same number of codes, so the same length
    assert result["s"].terminal.audio_ms == result["t"].terminal.audio_ms


async def test_cancel_and_disconnect_free_the_runtime_slots(tiny_server, ws_connect):
    worker = tiny_server.server.worker
    client = await ws_connect(tiny_server.url)
    t = await client.cancel_once_started("c", "A sentence to cut short.", chunking="token",
                                         frame_ms=20, params=SEED)
    assert isinstance(t.terminal, Cancelled)
    other = await ws_connect(tiny_server.url)
    await other.send({"type": "speak", "id": "d", "text": "Going away now.", "params": SEED})
    await other.next_message(Started, timeout=60)
    other.ws.transport.abort()
    for _ in range(600):
        if worker.stats.in_flight == 0 and worker.scheduler.idle:
            break
        await asyncio.sleep(0.05)
    assert worker.stats.in_flight == 0 and worker.scheduler.idle
    # and the model still serves
    again = await client.speak_and_collect("again", "Still here.", timeout=240, params=SEED)
    again.check_done()


async def test_unknown_encoded_voice_is_unsupported(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    t = await client.speak_and_collect("v", "Hello.", voice="\u4e00" * 20, timeout=60)
    assert t.terminal.code == "unsupported" and t.started is None


async def test_word_timings_with_the_real_runtime(tiny_server, ws_connect):
    """Words are the segment's words, inside it and monotonic (the client's
    protocol checks), covering it, in both chunkings; a flush_id is answered
    after its text's audio."""
    client = await ws_connect(tiny_server.url)
    await client.send({"type": "speak", "id": "s", "text": "Hi there, friend. Bye.",
                       "params": SEED, "timestamps": True})
    await client.send({"type": "speak", "id": "t", "text": "Hi there, friend", "final": False,
                       "params": SEED, "timestamps": True, "chunking": "token", "frame_ms": 20})
    await client.send({"type": "flush", "id": "t", "flush_id": "f1"})
    await client.send({"type": "append", "id": "t", "text": ". Bye.", "final": True})
    result = await client.collect(["s", "t"], timeout=240)
    for t in result.values():
        t.check_done()
        by_segment: dict[int, list] = {}
        for message in t.words:
            by_segment.setdefault(message.segment, []).extend(message.words)
        assert sorted(by_segment) == list(range(len(t.segments)))
        for seg in t.segments:
            words = by_segment[seg.index]
            assert [w.word for w in words] == seg.text.replace(",", "").replace(".", "").split()
            assert words[0].start_ms == pytest.approx(seg.offset_ms, abs=1e-6)
            assert words[-1].end_ms == pytest.approx(seg.offset_ms + seg.audio_ms, abs=1e-6)
    flushed = [i for i, (kind, _) in enumerate(result["t"].events) if kind is Kind.FLUSHED]
    segments = [i for i, (kind, _) in enumerate(result["t"].events) if kind is Kind.SEGMENT]
    assert len(flushed) == 1 and segments[0] < flushed[0] < segments[1]


async def test_words_are_the_text_as_spoken_with_their_original(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    t = await client.speak_and_collect("w", "It costs $20.", timestamps=True, params=SEED,
                                       timeout=240)
    t.check_done()
    words = [(w.word, w.original) for m in t.words for w in m.words]
    assert ("twenty", "$20") in words and ("dollars", "$20") in words, words
    assert words[0] == ("It", None)


@pytest.mark.parametrize("chunking", ["token", "sentence"])
async def test_every_word_is_received_before_the_frame_its_start_is_in(
        tiny_server, ws_connect, chunking):
    """Frame by frame: every word whose start lies before the frame's end came
    before the frame (token chunking: through `pending` for the word in progress)."""
    client = await ws_connect(tiny_server.url)
    t = await client.speak_and_collect(
        "p", "Hi there, my good friend. How are you doing today? Bye now.", timeout=240,
        timestamps=True, params=SEED, chunking=chunking, frame_ms=20)
    t.check_done()
    through_pending = check_words_precede_their_audio(t)
    if chunking == "token":
        assert through_pending > 0  # the first word starts in the first frame, at least
    else:
        assert through_pending == 0 and all(not m.pending for m in t.words)
