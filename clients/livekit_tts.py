"""A LiveKit Agents TTS plugin that speaks this server's WebSocket protocol.

`ChatTTSRealtimeTTS` keeps one `RealtimeClient` connection per TTS instance and
multiplexes every request over it:

- `stream()` (streaming capability): the LLM's text goes out as it comes, the first
  piece of a segment as a `speak` with `final:false`, every later piece as an
  `append`; LiveKit's flush (the end of a segment) ends that utterance's input
  (`append` with `final:true`), so the server speaks the rest and finishes. The
  server splits sentences itself, so tokens go straight through. Audio is pushed
  into the segment as it arrives. Closing the stream early (an interruption: the
  agent calls `aclose()`) sends `cancel` for the utterances still running.
- `synthesize(text)`: a one-shot utterance (`final:true`) whose audio streams into a
  chunked stream.

Aligned transcripts (`timestamps=True`, the default): the plugin declares
`aligned_transcript=True`, asks for word timings and pushes each word as a `TimedString`
(seconds from the segment's first audio) just before the audio in which it starts, so
LiveKit's transcription follows the audio and an interrupted turn's transcript holds
the words played. Segments read differently from their text and sentences the server
could not speak are logged. The connection is kept alive between turns (ping) and
opened again by the next request after the server closed it as idle.

Errors map to LiveKit's: refusals for load (`overloaded`, `too_many_active`) are
retryable `APIStatusError`s with status 429, a lost or refused connection an
`APIConnectionError`, everything else a non-retryable `APIError`.

Needs livekit-agents (1.8); everything runs on the agent's event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from livekit.agents import (
    DEFAULT_API_CONNECT_OPTIONS,
    APIConnectionError,
    APIConnectOptions,
    APIError,
    APIStatusError,
    tts,
)
from livekit.agents.types import TimedString

from clients.client import DEFAULT_URL, RealtimeClient
from clients.errors import (
    ConnectionLost,
    HandshakeRefused,
    Overloaded,
    TooManyActive,
    TTSError,
)
from clients.events import Word, WordCursor, Words, WordStart, caller_word
from clients.utterance import AudioChunk, Utterance
from protocol import Segment

log = logging.getLogger(__name__)

SAMPLE_RATE = 24000


class ChatTTSRealtimeTTS(tts.TTS):
    """LiveKit TTS over the realtime WebSocket protocol.

    Args: `url` (ws://.../v1/stream), `token`, `voice` (a name from hello.voices,
    `seed:<int>` or an encoded speaker), `lane` ("interactive" for conversation),
    `chunking` ("token": audio while a sentence is still decoding), `frame_ms` (audio
    per frame), `sample_rate` (one the server offers; 24000 is the model's own),
    `timestamps` (word-aligned transcripts; on by default), `keepalive` (ping between
    turns so the server does not close the socket as idle).
    """

    def __init__(self, *, url: str = DEFAULT_URL, token: str | None = None,
                 voice: str | None = None, lane: str = "interactive",
                 chunking: str = "sentence", frame_ms: int = 40,
                 sample_rate: int = SAMPLE_RATE, timestamps: bool = True,
                 keepalive: bool = True) -> None:
        super().__init__(capabilities=tts.TTSCapabilities(streaming=True,
                                                          aligned_transcript=timestamps),
                         sample_rate=sample_rate, num_channels=1)
        self.timestamps = timestamps
        self.keepalive = keepalive
        self.url = url
        self.token = token
        self.voice = voice
        self.lane = lane
        self.chunking = chunking
        self.frame_ms = frame_ms
        self._client: RealtimeClient | None = None
        self._connect_lock = asyncio.Lock()

    @property
    def model(self) -> str:
        return "chattts"

    @property
    def provider(self) -> str:
        return "chattts-realtime"

    async def connection(self) -> RealtimeClient:
        """The shared connection, opened when there is none. Once open, the client keeps
        it alive between turns and its next speak reconnects after an idle close."""
        async with self._connect_lock:
            if self._client is None:
                client = RealtimeClient(self.url, token=self.token, keepalive=self.keepalive)
                try:
                    await client.connect()
                except (TTSError, OSError, TimeoutError) as exc:
                    raise APIConnectionError(f"chattts realtime: {exc}") from exc
                self._client = client
            return self._client

    async def speak(self, text: str, final: bool) -> Utterance:
        """Open one utterance with this instance's settings."""
        client = await self.connection()
        try:
            return await client.speak(text, final=final, lane=self.lane, voice=self.voice,
                                      format="pcm_s16le", sample_rate=self.sample_rate,
                                      frame_ms=self.frame_ms, chunking=self.chunking,
                                      timestamps=self.timestamps)
        except (OSError, TimeoutError) as exc:  # the reconnect after an idle close failed
            raise APIConnectionError(f"chattts realtime: {exc}") from exc
        except TTSError as exc:
            raise api_error(exc) from exc

    def synthesize(self, text: str, *,
                   conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> ChunkedStream:
        return ChunkedStream(tts=self, input_text=text, conn_options=conn_options)

    def stream(self, *,
               conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS) -> SynthesizeStream:
        return SynthesizeStream(tts=self, conn_options=conn_options)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


class ChunkedStream(tts.ChunkedStream):
    """One text, one utterance, audio as it comes."""

    def __init__(self, *, tts: ChatTTSRealtimeTTS, input_text: str,
                 conn_options: APIConnectOptions) -> None:
        super().__init__(tts=tts, input_text=input_text, conn_options=conn_options)
        self._chattts = tts

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        utt = await self._chattts.speak(self.input_text, final=True)
        output_emitter.initialize(request_id=utt.id, sample_rate=self._chattts.sample_rate,
                                  num_channels=1, mime_type="audio/pcm")
        try:
            await _pump(utt, output_emitter)
        finally:
            await _cancel_if_running(utt)
        output_emitter.flush()


class SynthesizeStream(tts.SynthesizeStream):
    """LLM text in (push_text/flush/end_input), one utterance per segment."""

    def __init__(self, *, tts: ChatTTSRealtimeTTS, conn_options: APIConnectOptions) -> None:
        super().__init__(tts=tts, conn_options=conn_options)
        self._chattts = tts
        self.utterances: list[Utterance] = []  # every utterance this stream opened

    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        output_emitter.initialize(request_id=f"chattts-{id(self):x}",
                                  sample_rate=self._chattts.sample_rate, num_channels=1,
                                  mime_type="audio/pcm", stream=True)
        segments: asyncio.Queue[Utterance | None] = asyncio.Queue()
        sender = asyncio.create_task(self._send_text(segments), name="chattts-livekit-text")
        reader = asyncio.create_task(self._read_audio(segments, output_emitter),
                                     name="chattts-livekit-audio")
        try:
            await asyncio.gather(sender, reader)
        finally:
            for task in (sender, reader):
                task.cancel()
            for utt in self.utterances:  # an interruption: stop what is still speaking
                await _cancel_if_running(utt)

    async def _send_text(self, segments: asyncio.Queue[Utterance | None]) -> None:
        utt: Utterance | None = None
        try:
            async for data in self._input_ch:
                if isinstance(data, self._FlushSentinel):
                    if utt is not None:  # the segment ends: the server speaks the rest
                        await utt.end_input()
                        utt = None
                    continue
                if utt is None:
                    self._mark_started()
                    utt = await self._chattts.speak(data, final=False)
                    self.utterances.append(utt)
                    segments.put_nowait(utt)
                else:
                    await utt.append(data)
            if utt is not None:
                await utt.end_input()
        except TTSError as exc:
            raise api_error(exc) from exc
        finally:
            segments.put_nowait(None)

    async def _read_audio(self, segments: asyncio.Queue[Utterance | None],
                          output_emitter: tts.AudioEmitter) -> None:
        while (utt := await segments.get()) is not None:
            output_emitter.start_segment(segment_id=utt.id)
            await _pump(utt, output_emitter)
            output_emitter.end_segment()


async def _pump(utt: Utterance, output_emitter: tts.AudioEmitter) -> None:
    """Push the utterance's audio, each timed word just before the audio in which it
    starts, until it is done; raise LiveKit's error otherwise."""
    words = WordCursor()
    audio_ms = 0.0
    try:
        async for item in utt:
            if isinstance(item, AudioChunk):
                audio_ms += item.duration_ms
                timed = [timed_string(w) for w in words.take(audio_ms)]
                if timed:
                    output_emitter.push_timed_transcript(timed)
                output_emitter.push(item.pcm)
            elif isinstance(item, Words):
                words.add(item.words, item.pending)
            elif isinstance(item, Segment):
                spoken = item.spoken
                if spoken is not None and spoken != item.text:
                    log.info("%s: segment %d read as %r", utt.id, item.index, spoken)
        for sentence in utt.unspoken:
            log.warning("%s: not spoken (nothing to read): %r", utt.id, sentence)
        await utt.result()
    except TTSError as exc:
        raise api_error(exc) from exc


def timed_string(word: Word | WordStart) -> TimedString:
    """A word as LiveKit's transcript wants it: the caller's word, with the space that
    follows it (none after a CJK character), times in seconds (a word still in
    progress, a `WordStart`, has no end yet)."""
    text = caller_word(word)
    if text and not _is_cjk(text[-1]):
        text += " "
    if isinstance(word, WordStart):
        return TimedString(text, start_time=word.start_ms / 1000.0)
    return TimedString(text, start_time=word.start_ms / 1000.0, end_time=word.end_ms / 1000.0)


def _is_cjk(char: str) -> bool:
    return "\u2e80" <= char <= "\u9fff" or "\uf900" <= char <= "\ufaff" or "\u3000" <= char <= "\u303f"


async def _cancel_if_running(utt: Utterance) -> None:
    if not utt.finished:
        with contextlib.suppress(TTSError):
            await utt.cancel()


def api_error(exc: TTSError) -> APIError:
    """LiveKit's exception for one of the client library's."""
    message = f"chattts realtime: {exc}"
    if isinstance(exc, (Overloaded, TooManyActive)):
        return APIStatusError(message, status_code=429, retryable=True)
    if isinstance(exc, (ConnectionLost, HandshakeRefused)):
        return APIConnectionError(message)
    return APIError(message, retryable=False)
