"""One speech request as an utterance: the same path as a WebSocket ``speak``.

A ``SpeechJob`` builds a ``Speak`` (final; its audio format is the response's)
and drives a ``ServerUtterance`` with itself as the utterance's link: segment
jobs go to the same ``ModelWorker`` and scheduler, ends are counted by the
same ``Accounting`` (utterances, first audio, audio seconds, errors), and
token quotas apply. The utterance's samples go straight into the response's
encoder (``audio_out``: ``realtime.audio.formats.response_stream``, a piece
per ``PIECE_MS``), never through the WebSocket's frames; the encoded pieces
wait in a bounded queue that the HTTP response drains, and a response that
falls more than ``limit_bytes`` behind ends the utterance with
``slow_consumer``, as on the WebSocket.

``admitted()`` resolves when the scheduler accepted the work (the response
may start) or raises the refusal as an ``ApiError``; ``chunks()`` then yields
the encoded audio until ``done``, raising ``StreamFailed`` when the utterance
ends otherwise. ``abandon()`` (the client went away) cancels the jobs.

Thread: event loop only.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import uuid
from collections.abc import AsyncIterator

from protocol import Cancelled, Done, Error, ErrorCode, Speak, Started
from realtime.audio.formats import AudioOut, response_stream
from realtime.engine.api import SAMPLE_RATE
from realtime.server.accounting import Accounting
from realtime.server.http.api_error import ApiError
from realtime.server.openai.request import SpeechRequest
from realtime.server.ratelimit import ConnectionQuota
from realtime.server.stream.intake import TextReader
from realtime.server.stream.utterance import ServerUtterance
from realtime.server.stream.utterance_link import Outcome, UtteranceMessage
from realtime.server.voices.samples import SampleVoices
from realtime.server.work.worker import ModelWorker

log = logging.getLogger(__name__)

UTTERANCE_ID = "speech"
PIECE_MS = 100  # audio per response chunk or SSE event (a codec may hold some back)


class StreamFailed(Exception):
    """The utterance ended without ``done`` after the response started."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class SpeechJob:
    def __init__(self, request: SpeechRequest, worker: ModelWorker, accounting: Accounting,
                 quota: ConnectionQuota, *, default_deadline_ms: int, max_text_chars: int,
                 limit_bytes: int, samples: SampleVoices | None = None,
                 text: TextReader | None = None) -> None:
        self.request = request
        self.worker = worker
        self.accounting = accounting
        self.quota = quota
        self.limit_bytes = limit_bytes
        self.audio = response_stream(request.response_format, PIECE_MS)
        self.content_type = self.audio.encoder.content_type
        self.request_id = "speech-" + uuid.uuid4().hex  # x-request-id, as OpenAI's responses carry
        speak = Speak(id=UTTERANCE_ID, text=request.input, final=True, lane=request.lane,
                      voice=request.voice, format="pcm_f32le", sample_rate=SAMPLE_RATE,
                      frame_ms=PIECE_MS, chunking=request.chunking, params=request.params)
        # The input is final: a first submission without a segment means every
        # sentence normalized to nothing, which fails naming ``input``.
        self.utterance = ServerUtterance(speak, 1, self, worker, time.monotonic(),
                                         default_deadline_ms=default_deadline_ms,
                                         max_text_chars=max_text_chars, samples=samples,
                                         text=text, unspoken_field="input")
        loop = asyncio.get_running_loop()
        self._admitted: asyncio.Future[None] = loop.create_future()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._queued = 0
        self._end: Done | StreamFailed | None = None
        self._wake = asyncio.Event()

    # -- the HTTP side -------------------------------------------------------------------

    def start(self) -> None:
        """Submit the text (call once)."""
        self.accounting.utterance_started()
        self.utterance.begin()

    async def admitted(self) -> None:
        """Until the scheduler took the work; raises ``ApiError`` when refused."""
        await self._admitted

    async def chunks(self) -> AsyncIterator[bytes]:
        """Encoded audio as it is produced; raises ``StreamFailed`` unless it ends with done."""
        while True:
            while self._chunks:
                chunk = self._chunks.popleft()
                self._queued -= len(chunk)
                yield chunk
            if self._end is not None:
                break
            self._wake.clear()
            await self._wake.wait()
        if isinstance(self._end, StreamFailed):
            raise self._end
        tail = self.audio.finish()
        if tail:
            yield tail

    @property
    def ended(self) -> bool:
        return self.utterance.ended

    def abandon(self) -> None:
        """The client went away: stop the jobs, send nothing more."""
        self.utterance.drop()
        self._finish(StreamFailed("disconnected", "the client went away"))

    def shut_down(self, message: str) -> None:
        self.utterance.fail(ErrorCode.SHUTTING_DOWN, message)

    # -- the Transport side (the model side is the worker itself) ---------------------

    def send_message(self, message: UtteranceMessage, owner: ServerUtterance | None = None) -> None:
        if isinstance(message, Started):
            _resolve(self._admitted)
        elif isinstance(message, Done):
            self._finish(message)
        elif isinstance(message, Error):
            self.accounting.error_sent(message.code)
            refusal = ApiError.from_wire(message.code, message.message, message.field,
                                         message.retry_after_ms)
            if not self._admitted.done():
                self._admitted.set_exception(refusal)
            self._finish(StreamFailed(message.code, message.message))
        elif isinstance(message, Cancelled):
            self._finish(StreamFailed("cancelled", "the utterance was cancelled"))

    def send_json(self, data: bytes, owner: ServerUtterance) -> None:
        """Never called: a speech request's ``Speak`` asks for no word timings."""

    def audio_out(self, speak: Speak) -> AudioOut:
        return self.audio

    def send_audio(self, utterance: ServerUtterance, header: bytes, payload: bytes) -> None:
        if not payload:
            return  # the codec holds this piece back
        self._chunks.append(payload)
        self._queued += len(payload)
        self._wake.set()
        if self._queued > self.limit_bytes:
            log.info("speech request is not reading its audio; slow_consumer")
            utterance.fail(ErrorCode.SLOW_CONSUMER, "the client is not reading its audio")

    @property
    def audio_samples(self) -> int:
        """24 kHz samples taken so far (the usage's output)."""
        return self.audio.samples_sent

    def purge(self, utterance: ServerUtterance) -> None:
        self._chunks.clear()
        self._queued = 0

    def utterance_ended(self, utterance: ServerUtterance, outcome: Outcome, code: str | None) -> None:
        self.quota.utterance_ended()
        self.accounting.utterance_ended(utterance, outcome, code)

    def _finish(self, end: Done | StreamFailed) -> None:
        if self._end is None:
            self._end = end
        if not self._admitted.done():  # ended before admission: a refusal
            failure = end if isinstance(end, StreamFailed) else None
            code = failure.code if failure else ErrorCode.INTERNAL.value
            self._admitted.set_exception(ApiError.from_wire(code, str(end)))
            self._admitted.exception()  # retrieved: a request gone before admission awaits nothing
        self._wake.set()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
