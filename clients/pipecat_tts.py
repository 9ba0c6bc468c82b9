"""A Pipecat TTS service that speaks this server's protocol.

`ChatTTSRealtimeTTSService` keeps one connection (a `RealtimeClient`) for the whole
pipeline and opens ONE utterance per assistant turn: the first piece of text of a turn
becomes a `speak` with `final:false`, every later piece an `append`; at the end of the
turn (`flush_audio`) the input is ended with `append(final:true)`. The server splits the
text into sentences itself, so by default the service hands the LLM's tokens straight
through (`TextAggregationMode.TOKEN`) instead of waiting for whole sentences.
Audio frames are pushed into the turn's audio context as they arrive; a user
interruption cancels the utterance (barge-in) and drops audio still in flight.

Word timings (`timestamps=True`, the default): the turn's utterance asks for `words`, and
each word goes to Pipecat's `add_word_timestamps` (seconds from the turn's first audio:
the server's clock) just before the audio frame in which it starts, in the same audio
context. Pipecat then builds the assistant's message from the words played, so an
interrupted turn's context holds only what the user heard, not the whole reply.
A segment the model read differently from its text (numbers, symbols) is logged with
its spoken text; sentences it could not speak are logged as warnings.

The connection stays open between turns (the client pings before the server's idle
timeout) and is opened again by the next turn when the server closed it anyway.

When the server refuses a turn for load (`overloaded`, `too_many_active`) before it
started, the service waits as its `Backoff` says (the server's `retry_after_ms` first,
with jitter, bounded: by default 3 attempts within 2 s, since a turn that starts much
later is worse than an error the application can act on) and speaks the turn's text so
far again, under a fresh id; text that arrives meanwhile is kept for that retry.

Needs pipecat-ai (1.14); everything runs on the pipeline's event loop.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

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

from clients.backoff import Backoff
from clients.client import DEFAULT_URL, RealtimeClient
from clients.errors import TTSError, UtteranceCancelled
from clients.events import WordCursor, Words, caller_word
from clients.utterance import AudioChunk, Utterance
from protocol import Done, Segment

log = logging.getLogger(__name__)

# A turn waits at most this long for the server to admit it.
TURN_BACKOFF = Backoff(max_attempts=3, max_total_s=2.0, max_delay_s=1.0)


@dataclass(eq=False)
class _Turn:
    """One assistant turn: its text so far and the utterance speaking it."""

    context_id: str
    parts: list[str]
    final: bool = False
    utt: Utterance | None = None
    attempt: int = 1
    waited_s: float = 0.0
    retrying: bool = False  # refused for load: text waits for the next speak
    readers: list[asyncio.Task] = field(default_factory=list)
    words: WordCursor = field(default_factory=WordCursor)  # timed, not yet handed on
    audio_ms: float = 0.0  # audio handed to Pipecat so far

    @property
    def wire_id(self) -> str:
        # A retry gets a fresh id: late answers to the refused one cannot reach it.
        base = self.context_id[:56]
        return base if self.attempt == 1 else f"{base}.r{self.attempt}"


class ChatTTSRealtimeTTSService(TTSService):
    """Pipecat TTS over the realtime WebSocket protocol.

    Args: `url` (ws://.../v1/stream), `token`, `voice` (a name from hello.voices,
    `seed:<int>` or an encoded speaker), `lane` ("interactive" for conversation),
    `chunking` ("token" sends audio while a sentence is still decoding),
    `frame_ms` (audio per frame), `text_aggregation_mode` (TOKEN by default: the
    server does the sentence splitting), `stop_frame_timeout_s` (how long a turn may
    go without audio before Pipecat closes its audio context), `backoff` (how a turn
    refused for load is retried; None: not at all), `timestamps` (word timings for
    Pipecat's context: on by default), `keepalive` (ping between turns so the server
    does not close the socket as idle), plus TTSService kwargs.
    """

    def __init__(self, *, url: str = DEFAULT_URL, token: str | None = None,
                 voice: str | None = None, lane: str = "interactive",
                 chunking: str = "sentence", frame_ms: int = 40,
                 text_aggregation_mode: TextAggregationMode = TextAggregationMode.TOKEN,
                 stop_frame_timeout_s: float = 15.0, backoff: Backoff | None = TURN_BACKOFF,
                 timestamps: bool = True, keepalive: bool = True, **kwargs) -> None:
        kwargs.setdefault("settings", TTSSettings(model="chattts", voice=voice, language=None))
        # With word timings Pipecat builds the turn's text frames from them; without,
        # it pushes the text it sent as it goes.
        super().__init__(text_aggregation_mode=text_aggregation_mode, push_start_frame=True,
                         pause_frame_processing=False, push_text_frames=not timestamps,
                         stop_frame_timeout_s=stop_frame_timeout_s, **kwargs)
        self._timestamps = timestamps
        self._keepalive = keepalive
        self._url = url
        self._token = token
        self._voice = voice
        self._lane = lane
        self._chunking = chunking
        self._frame_ms = frame_ms
        self._backoff = backoff
        self._client: RealtimeClient | None = None
        # The connection last opened (kept after the pipeline closes it): its `pings`
        # and `reconnects` say how it was kept alive.
        self.last_client: RealtimeClient | None = None
        self._turns: dict[str, _Turn] = {}
        self._readers: dict[str, asyncio.Task] = {}
        self._connect_lock = asyncio.Lock()
        # Outcomes per turn, for applications and tests: ids of turns opened, completed
        # (done) and cancelled (barge-in).
        self.turns_opened: list[str] = []
        self.turns_done: list[str] = []
        self.turns_cancelled: list[str] = []
        # The last turns' utterances (their words, spoken text, outcome), newest last.
        self.utterances: collections.deque[Utterance] = collections.deque(maxlen=16)

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
        # Once connected, the client keeps the socket alive between turns and its next
        # speak reconnects after an idle close; a new client only after _close().
        async with self._connect_lock:
            if self._client is None:
                client = RealtimeClient(self._url, token=self._token, keepalive=self._keepalive)
                await client.connect()
                self._client = self.last_client = client
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
        """First text of a turn opens the utterance; later text is appended to it
        (or kept for the retry of a turn the server refused for load)."""
        try:
            turn = self._turns.get(context_id)
            if turn is None:
                turn = self._turns[context_id] = _Turn(context_id, [text])
                self.turns_opened.append(context_id)
                await self.start_tts_usage_metrics(text)
                await self._speak(turn)
                self._readers[context_id] = self.create_task(
                    self._read_turn(turn), f"chattts-turn-{context_id[:8]}")
            elif not turn.final:
                turn.parts.append(text)
                if not turn.retrying and turn.utt is not None:
                    await turn.utt.append(text)
        except (TTSError, OSError) as exc:
            yield ErrorFrame(error=f"chattts realtime: {exc}")
            return
        # Audio arrives through _read_turn; None tells the base class so.
        yield None

    async def _speak(self, turn: _Turn) -> None:
        client = await self._ensure_connected()
        turn.utt = await client.speak("".join(turn.parts), id=turn.wire_id, final=turn.final,
                                      lane=self._lane, voice=self._voice, format="pcm_s16le",
                                      sample_rate=self._wire_rate(client),
                                      frame_ms=self._frame_ms, chunking=self._chunking,
                                      timestamps=self._timestamps)
        self.utterances.append(turn.utt)
        turn.retrying = False

    async def flush_audio(self, context_id: str | None = None) -> None:
        """End of the turn: end the input so the server speaks the rest and finishes."""
        context_id = context_id or self.get_active_audio_context_id()
        turn = self._turns.get(context_id) if context_id else None
        if turn is None or turn.final:
            return
        turn.final = True
        if turn.retrying or turn.utt is None or turn.utt.finished:
            return  # the retry's speak carries final=true
        try:
            await turn.utt.end_input()
        except TTSError as exc:
            log.warning("ending turn %s failed: %s", context_id, exc)

    async def on_audio_context_interrupted(self, context_id: str) -> None:
        """User barged in: cancel the turn's utterance; audio in flight is dropped."""
        turn = self._turns.pop(context_id, None)
        if turn is not None and turn.utt is not None and not turn.retrying:
            try:
                await turn.utt.cancel()
            except TTSError as exc:
                log.debug("cancel of %s failed: %s", context_id, exc)
        await self.stop_all_metrics()
        await super().on_audio_context_interrupted(context_id)

    # ---- audio ---------------------------------------------------------------------

    async def _read_turn(self, turn: _Turn) -> None:
        """Move one turn's audio into its audio context until it ends; retry a
        refusal for load as the backoff says."""
        context_id = turn.context_id
        first = True
        try:
            while True:
                utt = turn.utt
                assert utt is not None
                try:
                    async for item in utt:
                        if not isinstance(item, AudioChunk):
                            self._on_event(turn, item)
                            continue
                        if first:
                            await self.stop_ttfb_metrics()
                            first = False
                        # Words that start in this frame go just before it.
                        turn.audio_ms += item.duration_ms
                        await self._hand_on_words(turn, turn.audio_ms)
                        frame = TTSAudioRawFrame(audio=item.pcm, sample_rate=item.sample_rate,
                                                 num_channels=1, context_id=context_id)
                        await self.append_to_audio_context(context_id, frame)
                    await self._hand_on_words(turn, float("inf"))
                    await utt.result()
                    break
                except UtteranceCancelled:
                    raise
                except TTSError as exc:
                    if not await self._retry(turn, utt, exc):
                        raise
                    if self._turns.get(context_id) is not turn:  # interrupted while waiting
                        self.turns_cancelled.append(context_id)
                        return
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
            if self._turns.get(context_id) is turn:
                del self._turns[context_id]

    def _on_event(self, turn: _Turn, item: object) -> None:
        if isinstance(item, Words):
            turn.words.add(item.words, item.pending)
        elif isinstance(item, Segment):
            spoken = item.spoken
            if spoken is not None and spoken != item.text:
                log.info("turn %s: segment %d read as %r", turn.context_id, item.index, spoken)
        for sentence in item.unspoken if isinstance(item, Done) else ():
            log.warning("turn %s: not spoken (nothing to read): %r", turn.context_id, sentence)

    async def _hand_on_words(self, turn: _Turn, until_ms: float) -> None:
        """Give Pipecat the turn's timed words that start before `until_ms` of audio, as
        the LLM wrote them (Pipecat matches them against its text), in seconds."""
        times = [(caller_word(w), w.start_ms / 1000.0) for w in turn.words.take(until_ms)]
        if times:
            await self.add_word_timestamps(times, turn.context_id)

    async def _retry(self, turn: _Turn, utt: Utterance, exc: TTSError) -> bool:
        """Wait and speak the turn again if ``exc`` refused it for load before it
        started and the backoff allows; False: let the error stand."""
        if self._backoff is None or utt.started_at is not None:
            return False
        wait = self._backoff.delay(exc, turn.attempt, turn.waited_s)
        if wait is None:
            return False
        log.info("turn %s refused (%s); retrying in %.0f ms", turn.context_id, exc.code,
                 1000 * wait)
        turn.retrying = True
        turn.attempt += 1
        turn.waited_s += wait
        await asyncio.sleep(wait)
        if self._turns.get(turn.context_id) is turn:
            await self._speak(turn)
        return True

    async def _end_context(self, context_id: str) -> None:
        if self.audio_context_available(context_id):
            await self.append_to_audio_context(context_id, TTSStoppedFrame(context_id=context_id))
            await self.remove_audio_context(context_id)
