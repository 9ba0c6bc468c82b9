"""``POST /v1/voices``: a voice from a 3-30 s recording and its transcript.

The body is JSON ``{"audio": base64 of a WAV/FLAC/MP3/Ogg-Opus file,
"transcript": "...", "name": optional}`` or ``multipart/form-data`` with the
fields ``audio`` (the file), ``transcript`` and ``name``. The answer is 200
``{"voice": "sample:<spk_smp>:<txt_smp>", "name": ...}`` (``name`` only when
one was given; the voice is self-contained: any server with the same
checkpoint speaks it), or an OpenAI-style error: 400 (not audio, shorter than
3 s or longer than 30 s, no transcript, a bad name, weights without a DVAE
encoder), 413 (a body over ``MAX_UPLOAD_BYTES``), 401/403/429/503 as the
speech endpoint answers them (the same gate, tokens and quotas: an upload
spends its transcript's characters and counts as an active utterance while
it runs).

Where the work runs: parsing on the event loop (bounded by the body size);
decoding (PyAV: any rate and channel count, mixed to mono, resampled to
24 kHz with soxr) and the DVAE encode on the encoder's own thread
(``realtime.server.voices.samples``: one at a time, a bounded queue, 429 beyond it), never
on the model thread and never on the loop. Bad input fails before the
encoder sees it.

Thread: event loop.
"""

from __future__ import annotations

import base64
import binascii
import http
import io
import logging
import time
from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import HTTP

import numpy as np
import orjson

from protocol import ErrorCode
from protocol.voices import TRANSCRIPT_MAX_CHARS, sample_voice
from realtime.engine.api import SAMPLE_RATE
from realtime.server.config import ServerConfig
from realtime.server.http.api_error import ApiError
from realtime.server.http.exchange import json, refusal
from realtime.server.http.gate import Gate, quota_for
from realtime.server.http.http1 import Exchange
from realtime.server.ratelimit import QuotaBook
from realtime.server.retry import quota_retry_ms
from realtime.server.state import ServiceState
from realtime.server.voices.samples import NAME_RE, EncoderBusy
from realtime.speech.script import has_words

log = logging.getLogger(__name__)

MAX_UPLOAD_BYTES = 8 << 20  # 30 s of 48 kHz stereo 16-bit WAV is 5.8 MB
MIN_SECONDS, MAX_SECONDS = 3.0, 30.0
_BAD = ErrorCode.BAD_MESSAGE.value


@dataclass(frozen=True)
class Upload:
    audio: bytes
    transcript: str
    name: str | None


def _bad(message: str, param: str | None = None, status: int = 400) -> ApiError:
    return ApiError(status, _BAD, message, param=param)


def parse_upload(body: bytes, content_type: str) -> Upload:
    """The upload's fields (JSON or multipart); ``ApiError`` 400 naming the field."""
    if content_type.split(";")[0].strip().lower() == "multipart/form-data":
        fields = _multipart(body, content_type)
    else:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise _bad("the body is neither JSON nor multipart/form-data") from None
        if not isinstance(obj, dict):
            raise _bad("the body must be a JSON object")
        fields = {}
        for key in ("audio", "transcript", "name"):
            value = obj.get(key)
            if value is not None and not isinstance(value, str):
                raise _bad(f"{key} must be a string", key)
            if value is not None:
                fields[key] = value.encode()
        if "audio" in fields:
            try:
                fields["audio"] = base64.b64decode(fields["audio"], validate=True)
            except (binascii.Error, ValueError):
                raise _bad("audio is not base64", "audio") from None
    if not fields.get("audio"):
        raise _bad("audio is missing: a 3-30 s WAV, FLAC, MP3 or Ogg Opus file", "audio")
    try:
        transcript = " ".join(fields.get("transcript", b"").decode().split())
        name = fields["name"].decode().strip() if fields.get("name") else None
    except UnicodeDecodeError:
        raise _bad("transcript and name must be UTF-8 text") from None
    if not transcript or not has_words(transcript):
        raise _bad("transcript is missing: the words the recording says", "transcript")
    if len(transcript) > TRANSCRIPT_MAX_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in transcript):
        raise _bad(f"transcript must be at most {TRANSCRIPT_MAX_CHARS} characters of text",
                   "transcript")
    if name is not None and not NAME_RE.fullmatch(name):
        raise _bad("name must be 1-64 characters of A-Za-z0-9._- starting with a letter or digit",
                   "name")
    return Upload(fields["audio"], transcript, name)


def _multipart(body: bytes, content_type: str) -> dict[str, bytes]:
    head = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1", "replace")
    message = BytesParser(policy=HTTP).parsebytes(head + body)
    if not message.is_multipart():
        raise _bad("the multipart body has no parts (is its boundary right?)")
    fields = {}
    for part in message.iter_parts():
        key = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if isinstance(key, str) and isinstance(payload, bytes) and key not in fields:
            fields[key] = payload
    return fields


def decode_audio(data: bytes) -> np.ndarray:
    """Mono float32 samples at 24 kHz from an audio file; ``ApiError`` 400 when
    it is not audio or lasts under 3 s or over 30 s (decoding stops there)."""
    import av
    import soxr
    chunks, rate = [], 0
    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            stream = container.streams.audio[0] if container.streams.audio else None
            if stream is None or not stream.rate:
                raise _bad("the file holds no audio stream", "audio")
            rate = stream.rate
            mono = av.AudioResampler(format="flt", layout="mono", rate=rate)
            total = 0
            for frame in container.decode(stream):
                if not isinstance(frame, av.AudioFrame):
                    continue
                for out in mono.resample(frame):
                    chunks.append(out.to_ndarray().reshape(-1))
                    total += chunks[-1].shape[0]
                if total > MAX_SECONDS * rate + rate:  # no need to decode the rest
                    break
            chunks += [out.to_ndarray().reshape(-1) for out in mono.resample(None)]
    except (av.FFmpegError, ValueError, IndexError) as exc:
        raise _bad(f"audio is not a readable audio file ({type(exc).__name__})", "audio") from None
    wav = np.concatenate(chunks).astype(np.float32) if chunks else np.zeros(0, np.float32)
    seconds = wav.shape[0] / rate
    if not MIN_SECONDS <= seconds <= MAX_SECONDS:
        raise _bad(f"the recording must last {MIN_SECONDS:.0f}-{MAX_SECONDS:.0f} s, "
                   f"not {'over ' if seconds > MAX_SECONDS else ''}{seconds:.1f} s", "audio")
    if rate != SAMPLE_RATE:
        wav = soxr.resample(wav, rate, SAMPLE_RATE).astype(np.float32)
    return wav


class VoiceUploads:
    """The ``POST /v1/voices`` handler (a ``realtime.server.http.http1`` ``Handler``)."""

    def __init__(self, state: ServiceState, quotas: QuotaBook, gate: Gate, config: ServerConfig) -> None:
        self.state, self.quotas, self.gate, self.config = state, quotas, gate, config

    async def __call__(self, ex: Exchange) -> None:
        access = self.gate.access(ex.request)
        started = time.perf_counter()
        try:
            answer = await self._create(ex)
        except ApiError as exc:
            log.info("voice upload refused: %s %s", exc.status, exc.message)
            await ex.respond(refusal(exc, access))
            return
        log.info("voice from a sample made in %.2f s%s", time.perf_counter() - started,
                 f" and named {answer['name']!r}" if "name" in answer else "")
        response = json(http.HTTPStatus.OK, answer)
        response.headers += access
        await ex.respond(response)

    async def _create(self, ex: Exchange) -> dict[str, str]:
        refused = self.gate.refusal(ex.request, stream=False)
        if refused is not None:
            raise refused
        body = await ex.body()  # read first: a refusal then reaches a client still sending
        samples = self.state.samples
        if samples.encoder is None:
            raise ApiError(400, ErrorCode.UNSUPPORTED.value, "this server's weights have no DVAE "
                           "encoder (asset/DVAE.safetensors): no voices from a sample")
        upload = parse_upload(body, ex.request.headers.get("Content-Type", ""))
        if upload.name is not None and upload.name in self.state.model_voices:
            raise _bad(f"{upload.name!r} is one of the server's own voices", "name")
        quota = quota_for(self.quotas, self.config, ex.request)
        try:
            refused_quota = quota.admit_speak(len(upload.transcript))
            if refused_quota is not None:
                hint = quota_retry_ms(refused_quota, (), time.monotonic())
                raise ApiError.from_wire(refused_quota.code.value, refused_quota.message, None, hint)
            encoder = samples.encoder
            spk_smp = await samples.run(lambda: encoder.encode(decode_audio(upload.audio)))
        except EncoderBusy as exc:
            raise ApiError(429, ErrorCode.OVERLOADED.value, f"{exc}; retry shortly") from None
        finally:
            quota.close()
        try:
            voice = sample_voice(spk_smp, upload.transcript)
        except ValueError:
            raise _bad("the recording is too long for a voice string", "audio") from None
        if upload.name is None:
            return {"voice": voice}
        self.state.name_voice(upload.name, voice)
        return {"voice": voice, "name": upload.name}
