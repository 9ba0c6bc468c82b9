"""End-to-end sessions over real sockets with the ToneRunner: one per message type,
the ordering guarantees, streamed text, cancel, several utterances and connections."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from protocol import FLAG_SEGMENT_END, FLAG_UTTERANCE_END, Cancelled, Done, Started
from protocol.pcm import decode_samples
from realtime.engine.tone import ToneRunner

THREE = "Hello there. How are you today? I am fine, thanks."


async def test_hello_describes_the_server(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    hello = client.hello
    assert hello.protocol == 1 and hello.sample_rate == 24000
    assert "pcm_s16le" in hello.formats and 24000 in hello.sample_rates
    assert hello.voices == ("default", "alice", "bob")
    assert hello.limits.max_text_chars == 5000 and hello.limits.max_active == 8
    assert hello.model.weights == "tone" and hello.model.device == "cpu"


async def test_speak_streams_ordered_segments_and_done(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    t = await client.speak_and_collect("u1", THREE)
    done = t.check_done()
    assert t.started.lane == "interactive" and t.started.format == "pcm_s16le"
    assert [s.text for s in t.segments] == ["Hello there.", "How are you today?",
                                            "I am fine, thanks."]
    assert [s.index for s in t.segments] == [0, 1, 2]
    offsets = [s.offset_ms for s in t.segments]
    assert offsets[0] == 0 and offsets == sorted(offsets)
    # bit 0 exactly on the last frame of each segment; bit 1 only on the very last frame
    ends = [i for i, f in enumerate(t.frames) if f.header.flags & FLAG_SEGMENT_END]
    assert len(ends) == 3 and ends[-1] == len(t.frames) - 1
    assert [f.header.flags & FLAG_UTTERANCE_END for f in t.frames].count(FLAG_UTTERANCE_END) == 1
    assert t.frames[-1].header.flags == FLAG_SEGMENT_END | FLAG_UTTERANCE_END
    # every frame but a segment's last is exactly frame_ms long
    for f in t.frames:
        if not f.header.segment_end:
            assert len(f.payload) == 2400 * 2
    assert done.timing.total_ms >= done.timing.first_audio_ms >= done.timing.queued_ms >= 0
    assert done.timing.rtf == pytest.approx(done.timing.total_ms / done.audio_ms, rel=1e-3)
    assert done.deadline_met is None
    assert not t.after_terminal


async def test_audio_is_the_runner_tone_in_each_format(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    for i, fmt in enumerate(("pcm_s16le", "pcm_f32le", "pcm_mulaw")):
        t = await client.speak_and_collect(f"f{i}", "One sentence only.", format=fmt,
                                           frame_ms=40)
        t.check_done(fmt)
        samples = decode_samples(t.audio, fmt)
        assert 0.2 < np.max(np.abs(samples)) <= 0.31  # the runner's amplitude 0.3
        assert len(samples) == len("One sentence only.") * 512


@pytest.mark.parametrize("rate", [8000, 16000, 48000])
async def test_resampled_audio_lengths_match_done(tone_server, ws_connect, rate):
    client = await ws_connect(tone_server)
    t = await client.speak_and_collect("r", THREE, sample_rate=rate, frame_ms=20)
    done = t.check_done("pcm_s16le", rate)
    assert t.started.sample_rate == rate
    expected_ms = sum(len(s.text) for s in t.segments) * 512 / 24
    assert done.audio_ms == pytest.approx(expected_ms, abs=3 * 1000 / rate * 3)


async def test_streamed_text_with_append_flush_and_final(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "speak", "id": "s", "text": "The first sen", "final": False})
    started = await client.next_message(Started)
    assert started.id == "s"
    await client.send({"type": "append", "id": "s", "text": "tence is here. The sec"})
    await client.send({"type": "append", "id": "s", "text": "ond one waits"})
    await client.send({"type": "flush", "id": "s"})
    await client.send({"type": "append", "id": "s", "text": " and a tail", "final": True})
    t = (await client.collect(["s"]))["s"]
    t.check_done()
    assert [s.text for s in t.segments] == ["The first sentence is here.", "The second one waits",
                                            "and a tail"]
    assert t.frames[-1].header.utterance_end  # the input was final when the last frame went


async def test_stream_that_ends_after_its_audio_is_marked_by_done(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "speak", "id": "s", "text": "A whole sentence. ", "final": False})
    # wait for that sentence's segment, then end the input with no more text
    while not client.transcript("s").segments:
        await client.recv()
    await client.send({"type": "append", "id": "s", "text": "", "final": True})
    t = (await client.collect(["s"]))["s"]
    t.check_done()
    assert len(t.segments) == 1
    assert not t.frames[-1].header.utterance_end  # the input was still open when it was sent


@pytest.mark.parametrize("text", ["", "   ", "... !!! ..."])
async def test_text_without_words_ends_with_done_and_no_audio(tone_server, ws_connect, text):
    client = await ws_connect(tone_server)
    t = await client.speak_and_collect("e", text)
    done = t.check_done()
    assert t.started is not None
    assert done.audio_ms == 0 and done.segments == 0 and not t.frames
    assert done.timing.first_audio_ms is None and done.timing.rtf is None


async def test_empty_segments_are_skipped(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    t = await client.speak_and_collect("m", "First one.\n...\nLast one.\n!!!")
    t.check_done()
    assert [s.text for s in t.segments] == ["First one.", "Last one."]
    assert [s.index for s in t.segments] == [0, 1]
    # a silent trailing piece does not hide the end: the last frame says so
    assert t.frames[-1].header.utterance_end
    assert not any(f.header.utterance_end for f in t.frames[:-1])


async def test_cancel_mid_stream_stops_audio_at_once(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.005))
    client = await ws_connect(server)
    long_text = "This is a long sentence that keeps on going for quite a while. " * 4
    await client.send({"type": "speak", "id": "c", "text": long_text, "chunking": "token",
                       "frame_ms": 20})
    while len(client.transcript("c").frames) < 3:
        await client.recv()
    await client.send({"type": "cancel", "id": "c"})
    t = (await client.collect(["c"]))["c"]
    assert isinstance(t.terminal, Cancelled)
    # nothing for it afterwards, even after waiting a few steps
    await client.send({"type": "speak", "id": "probe", "text": "Short."})
    await client.collect(["probe"])
    assert not t.after_terminal
    assert t.audio_ms() < len(long_text) * 512 / 24 / 2
    stats = server.worker.stats
    for _ in range(100):
        if stats.active_slots == 0:
            break
        await asyncio.sleep(0.01)
    assert stats.active_slots == 0


async def test_cancel_before_admission_answers_started_then_cancelled(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "speak", "id": "x", "text": "Some words here."})
    await client.send({"type": "cancel", "id": "x"})
    t = (await client.collect(["x"]))["x"]
    assert t.started is not None
    assert isinstance(t.terminal, (Cancelled, Done))


async def test_several_utterances_interleave_on_one_connection(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.001))
    client = await ws_connect(server)
    ids = [f"u{i}" for i in range(4)]
    for i, msg_id in enumerate(ids):
        lane = "background" if i % 2 else "interactive"
        await client.send({"type": "speak", "id": msg_id, "text": THREE, "lane": lane,
                           "chunking": "token" if i < 2 else "sentence", "frame_ms": 50})
    transcripts = await client.collect(ids)
    streams = {t.started.stream for t in transcripts.values()}
    assert len(streams) == 4
    for t in transcripts.values():
        done = t.check_done()
        assert done.segments == 3
    assert transcripts["u1"].terminal.deadline_met is True
    assert transcripts["u0"].terminal.deadline_met is None


async def test_two_connections_with_interleaved_utterances(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.001))
    a, b = await ws_connect(server), await ws_connect(server)
    for i in range(3):
        await a.send({"type": "speak", "id": f"a{i}", "text": THREE, "chunking": "token"})
        await b.send({"type": "speak", "id": f"a{i}", "text": THREE})  # same ids: per connection
    ta, tb = await asyncio.gather(a.collect(["a0", "a1", "a2"]), b.collect(["a0", "a1", "a2"]))
    for t in list(ta.values()) + list(tb.values()):
        assert t.check_done().segments == 3
    assert server.active_utterances == 0


async def test_voice_names_and_seeds_are_accepted(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    t1 = await client.speak_and_collect("v1", "Hi there.", voice="alice")
    t2 = await client.speak_and_collect("v2", "Hi there.", voice="seed:42")
    assert isinstance(t1.terminal, Done) and isinstance(t2.terminal, Done)


async def test_id_can_be_reused_after_its_utterance_ended(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    first = await client.speak_and_collect("same", "One.")
    assert isinstance(first.terminal, Done)
    client.transcripts.pop("same")
    second = await client.speak_and_collect("same", "Two.")
    assert isinstance(second.terminal, Done)
    assert second.started.stream != first.started.stream
