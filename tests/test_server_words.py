"""Word timings and flush acknowledgements over a real socket (tone runner).

The test client's ``protocol.stream.ClientConnection`` already fails a test
when words come after their segment's last frame, go backwards, or fall
outside their segment; these tests add what the rules alone do not say.
"""

from __future__ import annotations

import pytest
from word_checks import check_words_precede_their_audio

from protocol import Cancelled, Done, Error, Segment, Started
from protocol.stream import Kind
from realtime.engine.tone import ToneRunner

TEXT = "It costs twenty dollars, today. And then some more words follow here!"


def segment_words(t) -> list[list]:
    """The words of each segment, in segment order."""
    out: list[list] = [[] for _ in t.segments]
    for message in t.words:
        out[message.segment].extend(message.words)
    return out


def check_cover(t, rate: int = 24000) -> None:
    """Every segment's words start at its start and end at its end (within
    one output sample); the spoken words are the segment's words."""
    sample_ms = 1000 / rate
    for seg, words in zip(t.segments, segment_words(t), strict=True):
        assert words, f"segment {seg.index} has no words"
        assert words[0].start_ms == pytest.approx(seg.offset_ms, abs=1e-6)
        end = seg.offset_ms + seg.audio_ms
        assert end - sample_ms - 1e-6 <= words[-1].end_ms <= end + 1e-6
        spoken = seg.text.replace(",", " ").replace(".", " ").replace("!", " ").split()
        assert [w.word for w in words] == spoken
    assert all(m.method == "estimated" for m in t.words)


@pytest.mark.parametrize("rate", [24000, 16000, 44100])
async def test_sentence_chunking_sends_a_segments_words_before_its_first_frame(
        server_factory, ws_connect, rate):
    server = await server_factory(runner=ToneRunner(step_seconds=0.001))
    client = await ws_connect(server)
    t = await client.speak_and_collect("u", TEXT, timestamps=True, sample_rate=rate)
    t.check_done(rate=rate)
    assert len(t.segments) == 2 and len(t.words) == 2
    check_cover(t, rate)
    kinds = [k for k, _ in t.events if k in (Kind.WORDS, Kind.AUDIO, Kind.SEGMENT)]
    first_frames = [i for i, k in enumerate(kinds) if k is Kind.AUDIO
                    and (i == 0 or kinds[i - 1] is not Kind.AUDIO)]
    assert all(kinds[i - 1] is Kind.WORDS for i in first_frames)


async def test_without_timestamps_no_words_come(server_factory, ws_connect):
    client = await ws_connect(await server_factory())
    t = await client.speak_and_collect("u", TEXT)
    t.check_done()
    assert t.words == []


@pytest.mark.parametrize(("rate", "frame_ms"), [(24000, 20), (16000, 20), (44100, 100),
                                               (24000, 100)])
async def test_token_chunking_sends_every_word_before_the_frame_its_start_is_in(
        server_factory, ws_connect, rate, frame_ms):
    server = await server_factory(runner=ToneRunner(step_seconds=0.002))
    client = await ws_connect(server)
    t = await client.speak_and_collect("u", TEXT * 2, timestamps=True, chunking="token",
                                       frame_ms=frame_ms, sample_rate=rate)
    t.check_done(rate=rate)
    check_cover(t, rate)
    assert check_words_precede_their_audio(t, rate=rate) > 0


async def test_token_chunking_knows_every_started_word_but_one_without_pending(
        server_factory, ws_connect):
    """A client that ignores `pending` (written before it existed): at each
    frame received, the committed words cover every word (by the final times)
    that starts before the end of the audio received so far, except at most one."""
    server = await server_factory(runner=ToneRunner(step_seconds=0.002))
    client = await ws_connect(server)
    t = await client.speak_and_collect("u", TEXT * 2, timestamps=True, chunking="token",
                                       frame_ms=20)
    t.check_done()
    check_cover(t)
    final = [w for words in segment_words(t) for w in words]
    assert len(t.words) > len(t.segments)  # sent as the audio went out, not all at once
    known, received_ms = 0, 0.0
    for kind, item in t.events:
        if kind is Kind.WORDS:
            known += len(item.words)
        elif kind is Kind.AUDIO:
            received_ms += len(item.payload) / 2 / 24
            started = sum(1 for w in final if w.start_ms < received_ms - 1e-6)
            assert known >= started - 1, (received_ms, known, started)


async def test_flushed_follows_the_flushed_texts_audio_and_comes_at_once_when_none_is_left(
        server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.002))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "u", "text": "Hello there", "final": False})
    await client.next_message(Started)
    await client.send({"type": "flush", "id": "u", "flush_id": "f1"})
    await client.send({"type": "flush", "id": "u", "flush_id": "f2"})  # nothing new
    await client.send({"type": "flush", "id": "u"})  # no id: no answer
    # wait for f1's answer, then flush again with nothing pending: answered at once
    while len(client.transcript("u").flushed) < 2:
        await client.recv()
    await client.send({"type": "flush", "id": "u", "flush_id": "f3"})
    while len(client.transcript("u").flushed) < 3:
        await client.recv()
    await client.send({"type": "append", "id": "u", "text": " and goodbye.", "final": True})
    t = (await client.collect(["u"]))["u"]
    t.check_done()
    assert [f.flush_id for f in t.flushed] == ["f1", "f2", "f3"]
    kinds = [(k, getattr(i, "flush_id", None)) for k, i in t.events]
    first_segment = kinds.index((Kind.SEGMENT, None))
    assert kinds[first_segment + 1] == (Kind.FLUSHED, "f1")  # right after its audio and segment
    assert kinds[first_segment + 2] == (Kind.FLUSHED, "f2")
    f3 = kinds.index((Kind.FLUSHED, "f3"))
    assert all(k is not Kind.AUDIO for k, _ in kinds[first_segment:f3])  # nothing was pending
    assert isinstance(t.events[-1][1], Done)


async def test_a_cancel_drops_the_pending_flushed(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.05))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "u", "final": False,
                       "text": "A long sentence that the tone runner takes a while to say"})
    await client.send({"type": "flush", "id": "u", "flush_id": "f1"})
    await client.next_message(Started)
    await client.send({"type": "cancel", "id": "u"})
    t = (await client.collect(["u"]))["u"]
    assert isinstance(t.terminal, Cancelled) and t.flushed == [] and t.after_terminal == []


async def test_a_bad_flush_id_ends_its_utterance_with_bad_message(server_factory, ws_connect):
    client = await ws_connect(await server_factory(runner=ToneRunner(step_seconds=0.01)))
    await client.send({"type": "speak", "id": "u", "text": "Hello", "final": False})
    await client.send({"type": "flush", "id": "u", "flush_id": "not valid!"})
    t = (await client.collect(["u"]))["u"]
    assert isinstance(t.terminal, Error)
    assert (t.terminal.code, t.terminal.field) == ("bad_message", "flush_id")
    # and a flush naming no utterance is still unknown_id
    await client.send({"type": "flush", "id": "gone", "flush_id": "f"})
    error = await client.next_message(Error)
    assert (error.code, error.id) == ("unknown_id", "gone")


async def test_segments_carry_no_words_of_the_next_one(server_factory, ws_connect):
    client = await ws_connect(await server_factory(runner=ToneRunner(step_seconds=0.001)))
    t = await client.speak_and_collect("u", "One. Two. Three.", timestamps=True,
                                       chunking="token")
    t.check_done()
    assert [[w.word for w in ws] for ws in segment_words(t)] == [["One"], ["Two"], ["Three"]]
    assert all(isinstance(s, Segment) for s in t.segments)

