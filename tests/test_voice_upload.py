"""POST /v1/voices over a real socket, against the tiny-random runtime: uploads in
JSON and multipart (WAV, FLAC, Ogg Opus; any rate and channel count), the voice
string spoken on the WebSocket and the OpenAI endpoint, named voices listed,
and every refusal with its status, code and field."""

from __future__ import annotations

import base64
import io
import json
import wave

import av
import numpy as np
import pytest
from conftest import async_http_get
from raw_http import raw_post

from protocol.voices import sample_of
from realtime.engine.vocoder.encoder import decode_codes

TINY = dict(weights="tiny-random", device="cpu", batch_sizes=(1, 2), kv_buckets=(256, 512),
            max_slots=4, admission="queue-only")


def tone(seconds: float, rate: int = 24000, channels: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    mono = 0.3 * np.sin(2 * np.pi * 220 * t) * (1 + 0.5 * np.sin(2 * np.pi * 2 * t))
    return np.repeat(mono[:, None], channels, axis=1).astype(np.float32)


def wav_file(seconds: float, rate: int = 24000, channels: int = 1) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((tone(seconds, rate, channels) * 32767).astype("<i2").tobytes())
    return out.getvalue()


def encoded_file(seconds: float, fmt: str, codec: str, rate: int) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format=fmt) as container:
        stream = container.add_stream(codec, rate=rate, layout="mono")
        samples = tone(seconds, rate)[:, 0]
        frame = av.AudioFrame.from_ndarray(samples[None, :], format="flt", layout="mono")
        frame.sample_rate = rate
        resampler = av.AudioResampler(format=stream.format.name, layout="mono", rate=rate)
        for chunk in resampler.resample(frame):
            for packet in stream.encode(chunk):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


async def post(port: int, body: bytes, content_type: str = "application/json",
               headers: dict[str, str] | None = None, length: int | None = None) -> tuple[int, dict]:
    status, _, payload = await raw_post(port, body, headers, path="/v1/voices",
                                        content_type=content_type, length=length)
    return status, json.loads(payload)


def upload(audio: bytes, transcript: str | None = "Hello there, this is my voice.", **extra) -> bytes:
    body = {"audio": base64.b64encode(audio).decode(), **extra}
    if transcript is not None:
        body["transcript"] = transcript
    return json.dumps(body).encode()


def multipart(audio: bytes, transcript: str, filename: str) -> tuple[bytes, str]:
    boundary = "b0undary-7f3a"
    parts = [(f'name="audio"; filename="{filename}"', audio), ('name="transcript"', transcript.encode())]
    body = b"".join(f"--{boundary}\r\nContent-Disposition: form-data; {d}\r\n\r\n".encode() + v + b"\r\n"
                    for d, v in parts)
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


@pytest.fixture
async def tiny(server_factory):
    return await server_factory(**TINY)


async def test_a_named_upload_speaks_everywhere(tiny, ws_connect):
    status, answer = await post(tiny.port, upload(wav_file(3.5, 48000, 2), name="my-voice"))
    assert status == 200, answer
    assert answer["name"] == "my-voice"
    spk_smp, txt_smp = sample_of(answer["voice"])
    assert txt_smp == "Hello there, this is my voice."
    codes = decode_codes(spk_smp)
    assert codes.shape[0] == 4 and abs(codes.shape[1] - 3.5 * 46.875) <= 2  # resampled to 24 kHz
    _, _, listed = await async_http_get(tiny.port, "/v1/voices")
    assert "my-voice" in json.loads(listed)["voices"]
    client = await ws_connect(tiny)
    assert "my-voice" in client.hello.voices
    for i, voice in enumerate(("my-voice", answer["voice"])):
        t = await client.speak_and_collect(f"u{i}", "Good morning.", voice=voice, timeout=120)
        t.check_done()
        assert t.audio_ms() > 0
    from test_openai_speech import client_for
    speech = await client_for(tiny).audio.speech.create(model="chattts", voice=answer["voice"],
                                                        input="Hi.", response_format="pcm")
    assert len(speech.content) > 0


async def test_multipart_flac_and_opus_uploads(tiny):
    for fmt, codec, rate, name in (("flac", "flac", 16000, "a.flac"), ("ogg", "libopus", 48000, "a.opus")):
        body, ctype = multipart(encoded_file(4.0, fmt, codec, rate), "Four seconds of me.", name)
        status, answer = await post(tiny.port, body, ctype)
        assert status == 200, (fmt, answer)
        assert "name" not in answer and sample_of(answer["voice"])[1] == "Four seconds of me."


@pytest.mark.parametrize("body, param, words", [
    (upload(b"RIFF not really a wav file at all" * 10), "audio", "not a readable audio file"),
    (upload(wav_file(1.0)), "audio", "3-30 s"),
    (upload(wav_file(31.0, 8000)), "audio", "over"),
    (upload(wav_file(3.5), transcript=None), "transcript", "transcript is missing"),
    (upload(wav_file(3.5), transcript=" ... "), "transcript", "transcript is missing"),
    (upload(wav_file(3.5), name="bad name!"), "name", "name must be"),
    (upload(wav_file(3.5), name="ash"), "name", "server's own voices"),
    (json.dumps({"audio": "%%%not base64", "transcript": "x y"}).encode(), "audio", "not base64"),
    (b"{not json", None, "neither JSON"),
    (json.dumps({"transcript": "hi there"}).encode(), "audio", "audio is missing"),
])
async def test_bad_uploads_are_400s_naming_the_field(tiny, body, param, words):
    status, answer = await post(tiny.port, body)
    assert status == 400, answer
    assert answer["error"]["param"] == param and words in answer["error"]["message"]
    assert answer["error"]["code"] == "bad_message"


async def test_too_large_is_413_and_the_server_goes_on(tiny):
    status, answer = await post(tiny.port, b"0" * 65536, length=8 << 20 | 1)  # declared: refused at once
    assert status == 413 and answer["error"]["type"] == "invalid_request_error"
    status, _ = await post(tiny.port, upload(wav_file(3.0)))
    assert status == 200


async def test_tokens_and_quotas_hold_as_elsewhere(server_factory):
    server = await server_factory(auth_tokens=("sesame",), token_text_chars_per_minute=40, **TINY)
    status, answer = await post(server.port, upload(b"tiny"))  # refused before its body is read
    assert status == 401 and answer["error"]["code"] == "invalid_api_key"
    auth = {"Authorization": "Bearer sesame"}
    status, _ = await post(server.port, upload(wav_file(3.2)), headers=auth)
    assert status == 200
    status, answer = await post(server.port, upload(wav_file(3.2)), headers=auth)  # 2 x 30 chars > 40
    assert status == 429 and answer["error"]["code"] == "overloaded"


async def test_the_tone_server_says_it_cannot(tone_server):
    status, answer = await post(tone_server.port, upload(wav_file(3.5)))
    assert status == 400 and answer["error"]["code"] == "unsupported"
    assert "DVAE" in answer["error"]["message"]
