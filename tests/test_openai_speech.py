"""POST /v1/audio/speech with the official `openai` package against a real server
(in-process, tone runner): every response format streamed to a file, both stream
formats, OpenAI-style refusals, tokens, load, disconnects and metrics."""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import wave

import av
import numpy as np
import openai
import pytest
from conftest import wait_until
from raw_http import raw_post

from protocol.pcm import decode_samples
from realtime.audio.encoders import available_formats
from realtime.engine.tone import ToneRunner

TEXT = "Hello there. This is the speech endpoint speaking."


def client_for(server, api_key: str = "unused") -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key=api_key,
                              max_retries=0)


async def ws_audio_ms(server, ws_connect, text: str = TEXT) -> float:
    """What the WebSocket path makes of the same text: the reference length."""
    client = await ws_connect(server)
    return (await client.speak_and_collect("ref", text, voice="alice")).check_done().audio_ms


def decoded_seconds(path) -> float:
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        return sum(frame.samples for frame in container.decode(stream)) / stream.rate


# -- the official client ------------------------------------------------------------------------


@pytest.mark.parametrize("response_format", ["pcm", "wav", "mp3", "opus", "flac", "aac"])
async def test_openai_client_streams_each_format_to_a_file(tone_server, ws_connect, tmp_path,
                                                           response_format):
    assert response_format in available_formats()
    expected_s = await ws_audio_ms(tone_server, ws_connect) / 1000
    path = tmp_path / f"speech.{response_format}"
    client = client_for(tone_server)
    async with client, client.audio.speech.with_streaming_response.create(
            model="tts-1", voice="alice", input=TEXT, response_format=response_format) as response:
        assert response.status_code == 200
        await response.stream_to_file(path)
    if response_format == "pcm":
        seconds = path.stat().st_size / 2 / 24000
    elif response_format == "wav":
        with wave.open(str(path)) as w:  # a streamed header: sizes unknown, read to the end
            assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
        seconds = (path.stat().st_size - 44) / 2 / 24000
    else:
        seconds = decoded_seconds(path)
    # codecs add their frame padding and delay (at most ~0.1 s); nothing is lost
    assert expected_s - 0.01 <= seconds <= expected_s + 0.15


async def test_openai_client_reads_server_sent_events(tone_server, ws_connect):
    expected_ms = await ws_audio_ms(tone_server, ws_connect)
    client = client_for(tone_server)
    async with client, client.audio.speech.with_streaming_response.create(
            model="gpt-4o-mini-tts", voice="seed:7", input=TEXT, response_format="pcm",
            stream_format="sse") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(line[len("data: "):]) async for line in response.iter_lines()
                  if line.startswith("data: ")]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "speech.audio.done" and set(kinds[:-1]) == {"speech.audio.delta"}
    assert len(kinds) > 3  # streamed in pieces, not one blob
    pcm = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert len(pcm) / 2 / 24 == pytest.approx(expected_ms, abs=0.1)
    usage = events[-1]["usage"]
    assert usage["input_tokens"] == len(TEXT)
    assert usage["output_tokens"] == round(len(pcm) / 2 / 512)
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


async def test_sse_and_audio_carry_the_same_audio(tone_server):
    async with client_for(tone_server) as client:
        plain = await client.audio.speech.create(model="tts-1", voice="bob", input=TEXT,
                                                 response_format="pcm")
        sse = await client.audio.speech.create(model="tts-1", voice="bob", input=TEXT,
                                               response_format="pcm", stream_format="sse")
    events = [json.loads(line[6:]) for line in sse.text.splitlines() if line.startswith("data: ")]
    joined = b"".join(base64.b64decode(e["audio"]) for e in events if "audio" in e)
    # the tone runner's pitch changes per job, its length and level do not
    assert len(joined) == len(plain.content) > 0
    assert np.max(np.abs(decode_samples(joined, "pcm_s16le"))) == pytest.approx(0.3, abs=0.01)
    samples = decode_samples(plain.content, "pcm_s16le")
    assert 0.2 < np.max(np.abs(samples)) <= 0.31  # the tone runner's amplitude


# -- refusals -------------------------------------------------------------------------------------


BAD_REQUESTS = [
    (b"{not json", 400, "bad_json", None),
    (b"[1, 2]", 400, "bad_json", None),
    (b'{"model": "tts-1", "voice": "alice"}', 400, "bad_message", "input"),
    (b'{"model": "tts-1", "voice": "alice", "input": "   "}', 400, "bad_message", "input"),
    (b'{"model": "tts-1", "voice": "alice", "input": 5}', 400, "bad_message", "input"),
    (b'{"voice": "alice", "input": "Hi."}', 400, "bad_message", "model"),
    (b'{"model": "tts-1", "input": "Hi."}', 400, "bad_message", "voice"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "nobody"}', 400, "unsupported", "voice"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": {"id": "voice_1234"}}', 400, "unsupported",
     "voice"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "alice", "response_format": "ogg"}', 400,
     "unsupported", "response_format"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "alice", "speed": 0.24}', 400, "bad_message",
     "speed"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "alice", "speed": 9}', 400, "bad_message",
     "speed"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "alice", "refine": true}', 400, "unsupported",
     "refine"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "alice", "top_k": 0}', 400, "bad_message",
     "top_k"),
    (b'{"model": "tts-1", "input": "Hi.", "voice": "alice", "stream_format": "ws"}', 400,
     "unsupported", "stream_format"),
]


@pytest.mark.parametrize(("body", "status", "code", "param"), BAD_REQUESTS)
async def test_malformed_requests_get_openai_style_errors(tone_server, body, status, code, param):
    got, headers, payload = await raw_post(tone_server.port, body)
    assert got == status and headers["content-type"] == "application/json"
    error = json.loads(payload)["error"]
    assert error["code"] == code and error["param"] == param
    assert error["type"] == "invalid_request_error" and error["message"]


async def test_openai_client_raises_its_own_errors(server_factory):
    server = await server_factory(max_text_chars=20)
    async with client_for(server) as client:
        with pytest.raises(openai.BadRequestError) as too_long:
            await client.audio.speech.create(model="tts-1", voice="alice", input="x" * 21)
        assert too_long.value.body["code"] == "text_too_long"
        assert too_long.value.body["param"] == "input"


async def test_wrong_method_and_path(tone_server):
    # GETs go to websockets' routes (404 there); other methods reach the endpoint
    status, _, payload = await raw_post(tone_server.port, b"", method="PUT")
    assert status == 405 and json.loads(payload)["error"]["code"] == "bad_message"
    status, _, payload = await raw_post(tone_server.port, b"{}", path="/v1/audio/nothing")
    assert status == 404 and json.loads(payload)["error"]["type"] == "invalid_request_error"


async def test_tokens_are_required_like_on_the_websocket(server_factory):
    server = await server_factory(auth_tokens=("sesame",))
    async with client_for(server, api_key="wrong") as client:
        with pytest.raises(openai.AuthenticationError) as refused:
            await client.audio.speech.create(model="tts-1", voice="alice", input="Hi there.")
        assert refused.value.status_code == 401
        assert refused.value.body["code"] == "invalid_api_key"
    async with client_for(server, api_key="sesame") as client:
        ok = await client.audio.speech.create(model="tts-1", voice="alice", input="Hi there.",
                                              response_format="pcm")
        assert len(ok.content) > 0


async def test_overload_is_a_429_with_retry_after(server_factory):
    server = await server_factory(runner=ToneRunner(step_seconds=0.02),
                                  scheduler_options={"max_queue_interactive": 2})
    body = json.dumps({"model": "tts-1", "voice": "alice", "input": "One sentence. Another one.",
                       "response_format": "pcm"}).encode()
    results = await asyncio.gather(*(raw_post(server.port, body) for _ in range(6)))
    statuses = sorted(r[0] for r in results)
    assert 200 in statuses and 429 in statuses
    for status, headers, payload in results:
        if status == 429:
            assert int(headers["retry-after"]) >= 1
            error = json.loads(payload)["error"]
            assert error["code"] == "overloaded" and error["type"] == "rate_limit_error"
    metrics = server.metrics.render().decode()
    refused = statuses.count(429)
    assert f'chattts_errors_total{{code="overloaded"}} {refused}.0' in metrics  # once each
    assert f'chattts_speech_requests_total{{status="429"}} {refused}.0' in metrics


async def test_a_failure_mid_stream_is_an_sse_error_event_or_a_cut_body(tone_server):
    body = {"model": "tts-1", "voice": "alice", "response_format": "pcm",
            "input": "This sentence is fine. This one will FAIL now."}
    status, _, payload = await raw_post(tone_server.port,
                                        json.dumps({**body, "stream_format": "sse"}).encode())
    assert status == 200
    events = [json.loads(line[6:]) for line in payload.decode().splitlines()
              if line.startswith("data: ")]
    assert events[-1]["type"] == "error" and events[-1]["error"]["code"] == "internal"
    assert {e["type"] for e in events[:-1]} <= {"speech.audio.delta"}
    status, _, payload = await raw_post(tone_server.port, json.dumps(body).encode())
    assert status == 200 and not payload.endswith(b"0\r\n\r\n")  # no last chunk: incomplete


# -- the same path: scheduler, cancellation, metrics, keep-alive ------------------------------------


async def test_a_client_disconnect_cancels_the_jobs(server_factory):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01))
    body = json.dumps({"model": "tts-1", "voice": "alice", "response_format": "pcm",
                       "chunking": "token", "input": "A long sentence that goes on. " * 20})
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(f"POST /v1/audio/speech HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
                 f"\r\n{body}".encode())
    await writer.drain()
    assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).startswith(b"HTTP/1.1 200")
    await asyncio.wait_for(reader.read(1000), 10)  # audio is flowing
    assert server.accounting.active_utterances == 1 and server.worker.stats.in_flight > 0
    writer.close()
    await wait_until(lambda: server.accounting.active_utterances == 0)
    await wait_until(lambda: server.worker.stats.in_flight == 0)
    metrics = server.metrics.render().decode()
    assert 'chattts_utterances_total{outcome="disconnected"} 1.0' in metrics


async def test_requests_count_in_the_same_metrics(tone_server):
    async with client_for(tone_server) as client:
        await client.audio.speech.create(model="tts-1", voice="alice", input="Hi there.",
                                         response_format="pcm")
        with pytest.raises(openai.BadRequestError):
            await client.audio.speech.create(model="tts-1", voice="nobody", input="Hi there.")
    metrics = tone_server.metrics.render().decode()
    assert 'chattts_speech_requests_total{status="200"} 1.0' in metrics
    assert 'chattts_speech_requests_total{status="400"} 1.0' in metrics
    assert 'chattts_utterances_total{outcome="done"} 1.0' in metrics
    assert 'chattts_errors_total{code="unsupported"} 1.0' in metrics
    assert 'chattts_first_audio_seconds_count{lane="interactive"} 1.0' in metrics


async def test_a_kept_alive_connection_goes_on_with_gets(tone_server):
    async with client_for(tone_server) as client:
        await client.audio.speech.create(model="tts-1", voice="alice", input="Hi.",
                                         response_format="pcm")
        # the same pooled connection, now for plain GET routes
        voices = await client.get("/voices", cast_to=object)
        health = await client.get("/../healthz", cast_to=str)
    assert voices == {"voices": ["default", "alice", "bob"]}
    assert health.strip() == "ok"


async def test_a_connection_that_says_nothing_is_closed(server_factory):
    server = await server_factory(handshake_timeout=0.2)
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.settimeout(5)
        assert await asyncio.to_thread(sock.recv, 10) == b""


async def test_drain_lets_requests_finish_then_ends_the_rest(server_factory):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01), drain_timeout=0.3)
    long = json.dumps({"model": "tts-1", "voice": "alice", "response_format": "pcm",
                       "stream_format": "sse", "chunking": "token",
                       "input": "This goes on for a long while. " * 30}).encode()
    running = asyncio.create_task(raw_post(server.port, long))
    await wait_until(lambda: server.accounting.active_utterances == 1)
    drain = asyncio.create_task(server.drain())
    await wait_until(lambda: server.state.draining)
    status, _, payload = await raw_post(server.port, b'{"model":"m","voice":"alice","input":"Hi."}')
    assert status == 503 and json.loads(payload)["error"]["code"] == "shutting_down"
    status, _, payload = await running
    events = [json.loads(line[6:]) for line in payload.decode().splitlines()
              if line.startswith("data: ")]
    assert status == 200 and events[-1]["type"] == "error"
    assert events[-1]["error"]["code"] == "shutting_down"
    await asyncio.wait_for(drain, 10)


async def test_the_websocket_path_is_unchanged_beside_it(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    (await client.speak_and_collect("ws", TEXT)).check_done()


async def test_the_endpoint_can_be_turned_off(server_factory):
    server = await server_factory(disable_speech_api=True)
    status, _, body = await raw_post(server.port, b"{}")
    # One parser reads every request: an OpenAI-style 404 that says why.
    assert status == 404 and b"POST /v1/audio/speech is off on this server" in body
    assert server.speech is None


def test_the_real_runtime_answers_the_openai_client(model_server, tmp_path):
    """One request through the real model runtime (tiny-random weights, CPU)."""
    client = openai.OpenAI(base_url=f"{model_server.http}/v1", api_key="unused", max_retries=0,
                           timeout=120)
    path = tmp_path / "tiny.wav"
    with client.audio.speech.with_streaming_response.create(
            model="chattts", voice="seed:3", input="Hello from the model.",
            response_format="wav") as response:
        assert response.headers["x-request-id"].startswith("speech-")
        response.stream_to_file(path)
    client.close()
    with wave.open(str(path)) as w:
        assert w.getframerate() == 24000
    assert path.stat().st_size > 44 + 2 * 512  # the header and at least one step of audio


async def test_the_openai_client_lists_and_retrieves_the_models(tone_server):
    client = client_for(tone_server)
    async with client:
        listed = [m.id async for m in client.models.list()]
        assert listed[0] == "chattts" and "tts-1" in listed
        model = await client.models.retrieve("tts-1")
        assert model.id == "tts-1" and model.owned_by == "chattts-realtime"
        with pytest.raises(openai.NotFoundError) as refused:
            await client.models.retrieve("whisper-1")
    assert refused.value.code == "model_not_found"
    # Every listed name is one the speech endpoint takes.
    for name in listed:
        status, _, _ = await raw_post(tone_server.port, json.dumps(
            {"model": name, "input": "Hi.", "voice": "alice", "response_format": "pcm"}).encode())
        assert status == 200, name


# -- pages on other origins (CORS) ---------------------------------------------------------------

APP, EVIL = "https://app.example", "https://evil.example"
PREFLIGHT = {"Access-Control-Request-Method": "POST",
             "Access-Control-Request-Headers": "authorization, content-type"}


async def test_a_browser_preflight_is_answered_for_allowed_origins(server_factory):
    server = await server_factory(allowed_origins=(APP,))
    status, headers, body = await raw_post(server.port, b"", method="OPTIONS",
                                           headers={"Origin": APP, **PREFLIGHT})
    assert status == 204 and body == b""
    assert headers["access-control-allow-origin"] == APP and headers["vary"] == "Origin"
    assert "POST" in headers["access-control-allow-methods"]
    allowed = {h.strip() for h in headers["access-control-allow-headers"].split(",")}
    assert {"authorization", "content-type"} <= allowed
    assert int(headers["access-control-max-age"]) > 0
    status, headers, body = await raw_post(server.port, b"", method="OPTIONS",
                                           headers={"Origin": EVIL, **PREFLIGHT})
    assert status == 403 and "access-control-allow-origin" not in headers
    assert json.loads(body)["error"]["message"] == "origin not allowed"
    status, headers, _ = await raw_post(server.port, b"", method="OPTIONS", path="/v1/models",
                                        headers={"Origin": APP, **PREFLIGHT})
    assert status == 204 and headers["access-control-allow-origin"] == APP
    status, headers, _ = await raw_post(server.port, b"", method="OPTIONS", path="/v1/models/tts-1",
                                        headers={"Origin": APP, **PREFLIGHT})
    assert status == 204 and headers["access-control-allow-origin"] == APP


async def test_responses_to_an_allowed_origin_name_it(server_factory):
    server = await server_factory(allowed_origins=(APP,))
    body = json.dumps({"model": "tts-1", "voice": "alice", "input": "Hi there.",
                       "response_format": "pcm"}).encode()
    status, headers, payload = await raw_post(server.port, body, headers={"Origin": APP})
    assert status == 200 and len(payload) > 0
    assert headers["access-control-allow-origin"] == APP
    assert "retry-after" in headers["access-control-expose-headers"]
    # An error is readable too: the page can show why.
    status, headers, _ = await raw_post(server.port, b"{}", headers={"Origin": APP})
    assert status == 400 and headers["access-control-allow-origin"] == APP
    # No Origin (not a browser), or one off the list: no CORS headers.
    status, headers, _ = await raw_post(server.port, body)
    assert status == 200 and "access-control-allow-origin" not in headers
    status, headers, _ = await raw_post(server.port, body, headers={"Origin": EVIL})
    assert status == 403 and "access-control-allow-origin" not in headers
    # The model list, fetched on a fresh connection (websockets' routes).
    status, headers, payload = await raw_post(server.port, b"", method="GET", path="/v1/models",
                                              headers={"Origin": APP})
    assert status == 200 and headers["access-control-allow-origin"] == APP
    assert json.loads(payload)["object"] == "list"
