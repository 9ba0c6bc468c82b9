"""A Pipecat TTS service that speaks this server's protocol.

`ChatTTSRealtimeTTSService` keeps one connection (a `RealtimeClient`) for the whole
pipeline and opens ONE utterance per assistant turn: the first piece of text of a turn
becomes a `speak` with `final:false`, every later piece an `append`; at the end of the
turn (`flush_audio`) the input is ended with `append(final:true)`. The server splits the
text into sentences itself, so by default the service hands the LLM's tokens straight
through (`TextAggregationMode.TOKEN`) instead of waiting for whole sentences.
Audio frames are pushed into the turn's audio context as they arrive; a user
interruption cancels the utterance (barge-in) and drops audio still in flight.

Needs pipecat-ai (1.14); everything runs on the pipeline's event loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    ErrorFrame,
    Frame,
    StartFrame,
    TTSAudioRawFrame,
    TTSStoppedFrame,
)
from pipecat.services.settings import TTSSettings
from pipecat.services.tts_service import TextAggregationMode, TTSService

from clients.client import DEFAULT_URL, RealtimeClient
from clients.errors import TTSError, UtteranceCancelled
from clients.utterance import AudioChunk, Utterance

log = logging.getLogger(__name__)


class ChatTTSRealtimeTTSService(TTSService):
    """Pipecat TTS over the realtime WebSocket protocol.

    Args: `url` (ws://.../v1/stream), `token`, `voice` (a name from hello.voices,
    `seed:<int>` or an encoded speaker), `lane` ("interactive" for conversation),
    `chunking` ("token" sends audio while a sentence is still decoding),
    `frame_ms` (audio per frame), `text_aggregation_mode` (TOKEN by default: the
    server does the sentence splitting), `stop_frame_timeout_s` (how long a turn may
    go without audio before Pipecat closes its audio context), plus TTSService kwargs.
    """

    def __init__(self, *, url: str = DEFAULT_URL, token: str | None = None,
                 voice: str | None = None, lane: str = "interactive",
                 chunking: str = "sentence", frame_ms: int = 40,
                 text_aggregation_mode: TextAggregationMode = TextAggregationMode.TOKEN,
                 stop_frame_timeout_s: float = 15.0, **kwargs) -> None:
        kwargs.setdefault("settings", TTSSettings(model="chattts", voice=voice, language=None))
        super().__init__(text_aggregation_mode=text_aggregation_mode, push_start_frame=True,
                         pause_frame_processing=False,
                         stop_frame_timeout_s=stop_frame_timeout_s, **kwargs)
        self._url = url
        self._token = token
        self._voice = voice
        self._lane = lane
        self._chunking = chunking
        self._frame_ms = frame_ms
        self._client: RealtimeClient | None = None
        self._turns: dict[str, Utterance] = {}
        self._readers: dict[str, asyncio.Task] = {}
        self._connect_lock = asyncio.Lock()
        # Outcomes per turn, for applications and tests: ids of turns opened, completed
        # (done) and cancelled (barge-in).
        self.turns_opened: list[str] = []
        self.turns_done: list[str] = []
        self.turns_cancelled: list[str] = []

    def can_generate_metrics(self) -> bool:
        return True

    # ---- lifecycle -----------------------------------------------------------------

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self._ensure_connected()

    async def stop(self, frame: EndFrame) -> None:
        await super().stop(frame)
        await self._close()

    async def cancel(self, frame: CancelFrame) -> None:
        await super().cancel(frame)
        await self._close()

    async def _ensure_connected(self) -> RealtimeClient:
        async with self._connect_lock:
            if self._client is None or self._client._closed_reason is not None:
                client = RealtimeClient(self._url, token=self._token)
                await client.connect()
                self._client = client
                await self._call_event_handler("on_connected")
            return self._client

    async def _close(self) -> None:
        for task in list(self._readers.values()):
            await self.cancel_task(task)
        self._readers.clear()
        self._turns.clear()
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
            await self._call_event_handler("on_disconnected")

    def _wire_rate(self, client: RealtimeClient) -> int:
        # Ask for the pipeline's rate when the server offers it, else take its native rate.
        hello = client.hello
        assert hello is not None  # a connected client has its hello
        if self.sample_rate and self.sample_rate in hello.sample_rates:
            return int(self.sample_rate)
        return hello.sample_rate

    # ---- TTSService hooks ------------------------------------------------------------

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        """First text of a turn opens the utterance; later text is appended to it."""
        try:
            utt = self._turns.get(context_id)
            if utt is None or utt.finished:
                client = await self._ensure_connected()
                await self.start_tts_usage_metrics(text)
                utt = await client.speak(text, id=context_id, final=False, lane=self._lane,
                                         voice=self._voice, format="pcm_s16le",
                                         sample_rate=self._wire_rate(client),
                                         frame_ms=self._frame_ms, chunking=self._chunking)
                self._turns[context_id] = utt
                self.turns_opened.append(context_id)
                self._readers[context_id] = self.create_task(
                    self._read_turn(context_id, utt), f"chattts-turn-{context_id[:8]}")
            elif not utt.final:
                await utt.append(text)
        except (TTSError, OSError) as exc:
            yield ErrorFrame(error=f"chattts realtime: {exc}")
            return
        # Audio arrives through _read_turn; None tells the base class so.
        yield None

    async def flush_audio(self, context_id: str | None = None) -> None:
        """End of the turn: end the input so the server speaks the rest and finishes."""
        context_id = context_id or self.get_active_audio_context_id()
        utt = self._turns.get(context_id) if context_id else None
        if utt is None or utt.final or utt.finished:
            return
        try:
            await utt.end_input()
        except TTSError as exc:
            log.warning("ending turn %s failed: %s", context_id, exc)

    async def on_audio_context_interrupted(self, context_id: str) -> None:
        """User barged in: cancel the turn's utterance; audio in flight is dropped."""
        utt = self._turns.pop(context_id, None)
        if utt is not None:
            try:
                await utt.cancel()
            except TTSError as exc:
                log.debug("cancel of %s failed: %s", context_id, exc)
        await self.stop_all_metrics()
        await super().on_audio_context_interrupted(context_id)

    # ---- audio ---------------------------------------------------------------------

    async def _read_turn(self, context_id: str, utt: Utterance) -> None:
        """Move one utterance's audio into its audio context until it ends."""
        first = True
        try:
            async for item in utt:
                if not isinstance(item, AudioChunk):
                    continue
                if first:
                    await self.stop_ttfb_metrics()
                    first = False
                frame = TTSAudioRawFrame(audio=item.pcm, sample_rate=item.sample_rate,
                                         num_channels=1, context_id=context_id)
                await self.append_to_audio_context(context_id, frame)
            await utt.result()
            self.turns_done.append(context_id)
            await self._end_context(context_id)
        except UtteranceCancelled:
            log.debug("turn %s cancelled", context_id)
            self.turns_cancelled.append(context_id)
        except TTSError as exc:
            await self.push_error(error_msg=f"chattts realtime: {exc}")
            await self._end_context(context_id)
        finally:
            self._readers.pop(context_id, None)
            if self._turns.get(context_id) is utt:
                del self._turns[context_id]

    async def _end_context(self, context_id: str) -> None:
        if self.audio_context_available(context_id):
            await self.append_to_audio_context(context_id, TTSStoppedFrame(context_id=context_id))
            await self.remove_audio_context(context_id)
