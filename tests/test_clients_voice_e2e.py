"""The voice-agent features against the real server (tone runner): idle connections
(a short --idle-timeout: the Python client, the Pipecat service and the LiveKit plugin
keep their socket alive between turns with `ping`, and reconnect transparently when the
server closed an idle one), word timings and spoken text, flush acknowledgements, the
CLI's --timestamps and the probe's word score."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys

from clients_fixtures import ROOT

from clients import RealtimeClient
from clients.events import caller_word
from clients.livekit_tts import ChatTTSRealtimeTTS
from clients.probe import main as probe_main
from examples.livekit_example import speak_turn
from examples.pipecat_example import run_pipeline
from protocol import Segment
from realtime.engine.tone import ToneRunner

IDLE = 0.4  # the server's idle timeout in these tests


def url(server) -> str:
    return f"ws://127.0.0.1:{server.port}/v1/stream"


async def idle_server(server_factory):
    return await server_factory(runner=ToneRunner(step_seconds=0.005), idle_timeout=IDLE)


async def test_keepalive_holds_the_connection_across_idle_timeouts(server_factory):
    server = await idle_server(server_factory)
    async with RealtimeClient(url(server)) as client:
        assert client.idle_timeout_s == IDLE
        await asyncio.sleep(4 * IDLE)
        assert client.connected and client.pings >= 3
        assert 0 <= await client.ping() < 1000
        pcm, done = await (await client.speak("Still here.")).collect()
    assert client.reconnects == 0 and done.segments == 1 and pcm


async def test_the_next_speak_reconnects_after_the_server_closed_an_idle_socket(server_factory):
    server = await idle_server(server_factory)
    async with RealtimeClient(url(server), keepalive=False) as client:
        await asyncio.sleep(IDLE + 0.6)
        assert not client.connected and client.close_code == 1000
        pcm, done = await (await client.speak("Back again.")).collect()
    assert client.reconnects == 1 and done.segments == 1 and pcm


async def test_pipecat_keeps_its_socket_between_turns(server_factory):
    server = await idle_server(server_factory)
    collector = await run_pipeline(url(server), None, ["First turn.", "Second turn."],
                                   token_delay_s=0.002, pause_s=4 * IDLE)
    client = collector.tts.last_client  # closed at the end of the pipeline
    assert collector.tts.turns_done == collector.tts.turns_opened and len(collector.tts.turns_done) == 2
    assert client.reconnects == 0 and client.pings >= 2


async def test_pipecat_reconnects_when_the_server_closed_its_idle_socket(server_factory):
    server = await idle_server(server_factory)
    collector = await run_pipeline(url(server), None, ["First turn.", "Second turn."],
                                   token_delay_s=0.002, pause_s=IDLE + 0.6, keepalive=False)
    tts_done = collector.tts.turns_done
    assert len(tts_done) == 2 and collector.stopped == 2
    assert collector.tts.last_client.reconnects == 1


async def test_livekit_keeps_its_socket_and_reconnects_after_an_idle_close(server_factory):
    server = await idle_server(server_factory)
    for keepalive, reconnects in ((True, 0), (False, 1)):
        tts = ChatTTSRealtimeTTS(url=url(server), keepalive=keepalive)
        try:
            first = await speak_turn(tts, "First turn.", token_delay_s=0.002)
            await asyncio.sleep(IDLE + 0.6)
            second = await speak_turn(tts, "Second turn.", token_delay_s=0.002)
            client = await tts.connection()
        finally:
            await tts.aclose()
        assert first.seconds > 0 and second.seconds > 0
        assert client.reconnects == reconnects, keepalive


async def test_word_timings_and_spoken_text_from_the_real_server(server_factory):
    server = await idle_server(server_factory)
    async with RealtimeClient(url(server)) as client:
        utt = await client.speak("It costs twenty dollars today. See you soon.", timestamps=True)
        items = [item async for item in utt]
    segments = [i for i in items if isinstance(i, Segment)]
    assert len(segments) == 2
    for k in range(2):  # sentence chunking: a segment's words come before its first frame
        kinds = [type(i).__name__ for i in items
                 if getattr(i, "segment", getattr(i, "index", None)) == k]
        assert kinds[0] == "Words" and "AudioChunk" in kinds
    assert [w.start_ms for w in utt.words] == sorted(w.start_ms for w in utt.words)
    assert [caller_word(w).strip(".,") for w in utt.words] == \
        ["It", "costs", "twenty", "dollars", "today", "See", "you", "soon"]
    assert utt.words[-1].end_ms <= segments[-1].offset_ms + segments[-1].audio_ms + 1e-3
    assert utt.spoken == " ".join(s.spoken or s.text for s in segments)
    assert [w.word for w in utt.heard_words(segments[0].audio_ms)] == \
        ["It", "costs", "twenty", "dollars", "today"]


async def test_flush_waits_for_the_servers_acknowledgement(server_factory):
    server = await idle_server(server_factory)
    async with RealtimeClient(url(server)) as client:
        utt = await client.speak("The first part of a long", final=False)
        ack = await asyncio.wait_for(utt.flush("part-1", wait=True), 10)
        assert ack is not None and ack.flush_id == "part-1"
        # Acknowledged once all audio of the flushed text was sent: it is here.
        assert utt.frames > 0 and utt.audio_ms > 0
        await utt.append("sentence.", final=True)
        await utt.result()


def test_cli_prints_word_timings(server, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "clients.say", "It costs ten.", "-o", str(tmp_path / "x.wav"),
         "--url", server.ws, "--timestamps"],
        capture_output=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    rows = [line.split() for line in proc.stderr.decode().splitlines()
            if re.match(r"\s*\d+\.\d\s+\d+\.\d\s+\S", line)]
    assert [r[2] for r in rows] == ["It", "costs", "ten"], rows
    starts = [float(r[0]) for r in rows]
    assert starts == sorted(starts) and all(float(r[1]) >= float(r[0]) for r in rows)


def test_probe_scores_word_timings(server, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hi there, how are you today?\nGood morning. The weather is fine.\n")
    out = tmp_path / "probe"
    rc = probe_main(["--url", server.ws, "--levels", "1", "--per-level", "2", "--timestamps",
                     "--background-share", "0", "--corpus", str(corpus), "--max-seconds", "60",
                     "--out", str(out), "--no-plots"])
    assert rc == 0
    doc = json.loads((out / "probe.json").read_text())
    words = doc["levels"][0]["lanes"]["interactive"]["words"]
    assert words["words"] >= 10
    # Sentence chunking: every timing comes before its segment's audio, so before the
    # audio was due to play.
    assert words["late"] == 0 and words["lead_ms_min"] >= 0 and words["margin_ms_min"] >= 0
    assert all(r["words"] > 0 and r["words_late"] == 0 for r in doc["utterances"])
