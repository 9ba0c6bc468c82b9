"""The client library, the CLI and the probe against real servers: most tests use the
synthetic tone runner (fast, audio length follows the text); one runs the real model
runtime with tiny-random weights on CPU."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from clients_fixtures import ROOT

from clients import AudioChunk, RealtimeClient, Unsupported, UtteranceCancelled
from clients.probe import main as probe_main
from clients.wav import read_wav
from protocol import Done, Params, Segment

SHORT = "Hello there."
TIMEOUT = 60


async def test_speak_on_tiny_random_model_collects_audio_matching_done(model_server):
    async with RealtimeClient(model_server.ws) as client:
        assert client.hello.model.weights == "tiny-random"
        assert client.weights_warning
        # Random weights stop at a random step; a fixed seed keeps the length (and the
        # test's time) steady.
        utt = await client.speak(SHORT, frame_ms=50, params=Params(seed=3))
        items = [item async for item in utt]
        done = await utt.result()
    chunks = [i for i in items if isinstance(i, AudioChunk)]
    assert isinstance(items[-1], Done) and done is items[-1]
    assert chunks, "no audio"
    assert [c.seq for c in chunks] == list(range(len(chunks)))
    assert all(len(c.pcm) % 2 == 0 and len(c.pcm) > 0 for c in chunks)
    assert chunks[-1].last_in_segment
    assert sum(1 for i in items if isinstance(i, Segment)) == done.segments >= 1
    # audio_ms is exact to the bytes sent: within one sample.
    assert abs(done.audio_ms - utt.audio_ms) <= 1000 / 24000 + 1e-6
    samples = np.concatenate([c.samples for c in chunks])
    assert samples.dtype == np.float32 and np.abs(samples).max() <= 1.0


async def test_concurrent_and_streamed_utterances_on_one_connection(server):
    async with RealtimeClient(server.ws) as client:
        plain = await client.speak("One short line.", format="pcm_f32le")
        streamed = await client.speak("Second", final=False, format="pcm_mulaw")
        await streamed.append(" line")
        await streamed.flush()
        await streamed.end_input()
        (pcm_a, done_a), (pcm_b, done_b) = await _gather(plain.collect(), streamed.collect())
    assert plain.stream != streamed.stream
    assert len(pcm_a) > 0 and len(pcm_b) > 0
    assert abs(len(pcm_a) / 4 / 24 - done_a.audio_ms) < 1.0  # f32: 4 bytes a sample
    assert abs(len(pcm_b) / 24 - done_b.audio_ms) < 1.0  # mu-law: 1 byte a sample


async def _gather(*aws):
    import asyncio

    return await asyncio.wait_for(asyncio.gather(*aws), TIMEOUT)


async def test_cancel_mid_stream(server):
    async with RealtimeClient(server.ws) as client:
        utt = await client.speak("This one is cancelled. " * 4, chunking="token", frame_ms=20)
        got = 0
        with pytest.raises(UtteranceCancelled):
            async for item in utt:
                if isinstance(item, AudioChunk):
                    got += 1
                    await utt.cancel()
            await utt.result()
        assert got >= 1
        # The connection stays usable after a barge-in.
        assert len((await (await client.speak("Ok.")).collect())[0]) > 0


async def test_refusals_raise_typed_errors(server):
    async with RealtimeClient(server.ws) as client:
        with pytest.raises(Unsupported) as info:
            await (await client.speak("x", sample_rate=12345)).result()
        assert info.value.field == "sample_rate"
        with pytest.raises(Unsupported):
            await (await client.speak("x", voice="no-such-voice")).result()


def test_cli_reads_stdin_streams_and_writes_wav(server, tmp_path):
    out = tmp_path / "out.wav"
    proc = subprocess.run(
        [sys.executable, "-m", "clients.say", "-o", str(out), "--stream", "--url", server.ws,
         "--rate", "16000", "--frame-ms", "40"],
        input=SHORT.encode(), capture_output=True, cwd=ROOT, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr.decode()
    samples, rate = read_wav(out)
    assert rate == 16000 and len(samples) > 0
    assert proc.stdout == (samples * 32768).round().astype("<i2").tobytes()
    summary = proc.stderr.decode()
    assert "first audio" in summary and "RTF" in summary and "warning" in summary


def test_cli_reports_server_error(server, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "clients.say", "hi", "-o", str(tmp_path / "x.wav"),
         "--url", server.ws, "--voice", "no-such-voice"],
        capture_output=True, cwd=ROOT, timeout=TIMEOUT)
    assert proc.returncode == 1
    assert "unsupported" in proc.stderr.decode()


def test_probe_tiny_sweep(server, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hi there.\nGood morning.\nThanks a lot.\n")
    out = tmp_path / "probe"
    rc = probe_main(["--url", server.ws, "--levels", "1,2", "--per-level", "2",
                     "--background-share", "0.5", "--deadline-ms", "120000",
                     "--corpus", str(corpus), "--max-seconds", "90", "--out", str(out)])
    assert rc == 0
    doc = json.loads((out / "probe.json").read_text())
    assert [lvl["level"] for lvl in doc["levels"]] == [1, 2]
    records = doc["utterances"]
    assert len(records) == 4
    assert {r["lane"] for r in records} <= {"interactive", "background"}
    for r in records:
        assert r["error"] is None, r
        assert 0 < r["connect_ms"] < 10_000
        assert 0 < r["first_audio_ms"] <= r["total_ms"]
        assert r["audio_ms"] > 0 and r["frames"] >= 1 and r["rtf"] > 0
        assert r["stall_ms"] >= 0 and r["underruns"] >= 0
    for lvl in doc["levels"]:
        p = lvl["first_audio_ms"]
        assert p["p50"] <= p["p95"] <= p["p99"]
    for name in ("first_audio.png", "stall.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"


def test_probe_sweeps_offered_load_too(server, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("Hi there.\nGood morning.\n")
    out = tmp_path / "probe"
    rc = probe_main(["--url", server.ws, "--rates", "4", "--seconds-per-rate", "1",
                     "--background-share", "0", "--corpus", str(corpus), "--max-seconds", "60",
                     "--out", str(out), "--no-plots"])
    assert rc == 0
    doc = json.loads((out / "probe.json").read_text())
    [point] = doc["levels"]
    assert point["sweep"] == "rate" and point["rate"] == 4.0
    assert point["lanes"]["interactive"]["utterances"] == point["utterances"] >= 1
    assert all(r["sweep"] == "rate" and r["rate"] == 4.0 for r in doc["utterances"])
