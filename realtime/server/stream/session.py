"""One WebSocket connection: client messages in, utterances, messages and frames out.

The session decodes each client message with ``protocol.decode_client``,
applies the per-connection rules (active ids, ``max_active``, quotas,
draining) and drives its ``ServerUtterance`` objects; everything it sends goes
through one bounded ``Outbox``. Refusals of client messages become ``error``
messages here; refusals of admitted work come from the worker through the
utterance.

Thread: event loop.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from dataclasses import replace

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from protocol import (
    Append,
    Cancel,
    Error,
    ErrorCode,
    Flush,
    Ping,
    Pong,
    ProtocolError,
    ServerMessage,
    Speak,
    decode_client,
    encode,
    load_object,
)
from realtime.audio.formats import AudioOut, framer_for
from realtime.server.accounting import Accounting
from realtime.server.config import ServerConfig
from realtime.server.http.gate import quota_for
from realtime.server.ratelimit import QuotaBook
from realtime.server.retry import active_retry_s, quota_retry_ms, to_ms
from realtime.server.state import ServiceState
from realtime.server.stream.intake import TextReader
from realtime.server.stream.outbox import Outbox
from realtime.server.stream.segment_request import lane_params
from realtime.server.stream.send_batch import StreamConnection
from realtime.server.stream.utterance import ServerUtterance
from realtime.server.stream.utterance_link import Outcome, UtteranceMessage
from realtime.server.work.worker import ModelWorker

log = logging.getLogger(__name__)

# Close code when a client floods us with messages it never reads answers to.
_CLOSE_POLICY = 1008


class Session:
    def __init__(self, ws: ServerConnection, config: ServerConfig, state: ServiceState,
                 accounting: Accounting, worker: ModelWorker, quotas: QuotaBook,
                 text: TextReader | None = None) -> None:
        """``text`` reads the utterances' sentences (the server's text thread)."""
        self.ws = ws
        self.text = text
        self.config = config
        self.state = state
        self.accounting = accounting
        self.worker = worker
        self.utterances: dict[str, ServerUtterance] = {}
        self._streams = itertools.count(1)
        self.outbox = Outbox(ws.send, config.send_queue_bytes, self._on_overflow,
                             ws if isinstance(ws, StreamConnection) else None)
        self._idle_timer: asyncio.TimerHandle | None = None
        self._last_activity = time.monotonic()  # a client message, or the last utterance's end
        self.quota = quota_for(quotas, config, ws.request)

    # -- lifecycle -----------------------------------------------------------------

    async def run(self) -> None:
        """Serve the connection until it closes; always cleans up."""
        writer = asyncio.create_task(self.outbox.run(), name="outbox")
        assert self.state.hello is not None  # the gate opens streams only once ready
        self._send(self.state.hello)
        self._arm_idle_timer()
        try:
            async for frame in self.ws:
                self._on_frame(frame)
                if self.outbox.queued_bytes - self.outbox.audio_bytes > 4 * self.config.send_queue_bytes:
                    log.warning("closing a connection that does not read its replies")
                    await self.ws.close(_CLOSE_POLICY, "not reading replies")
                    break
        except ConnectionClosed:
            pass
        finally:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            for utterance in list(self.utterances.values()):
                utterance.drop()
            self.quota.close()
            self.outbox.close()
            writer.cancel()
            try:
                await writer
            except asyncio.CancelledError:
                pass

    async def shut_down(self, message: str, flush_s: float = 1.0) -> None:
        """Draining ran out of time: end every utterance with ``shutting_down``
        and give the messages up to ``flush_s`` to leave."""
        for utterance in list(self.utterances.values()):
            utterance.fail(ErrorCode.SHUTTING_DOWN, message)
        await self.flushed(flush_s)

    async def flushed(self, timeout: float) -> None:
        """Until everything queued was written, or ``timeout``."""
        try:
            await asyncio.wait_for(self.outbox.wait_flushed(), timeout)
        except TimeoutError:
            pass

    # -- client messages --------------------------------------------------------------

    def _on_frame(self, frame: str | bytes) -> None:
        received = self._last_activity = time.monotonic()  # the idle timer reads it
        if not isinstance(frame, str):
            self._error(None, ErrorCode.BINARY_NOT_ALLOWED, "send JSON text frames only")
            return
        try:
            message = decode_client(frame, self.state.offer)
        except ProtocolError as exc:
            self._refuse(frame, exc)
            return
        if isinstance(message, Speak):
            self._speak(message, received)
        elif isinstance(message, Append):
            self._append(message)
        elif isinstance(message, Flush):
            self._flush(message)
        elif isinstance(message, Cancel):
            self._cancel(message)
        elif isinstance(message, Ping):
            self._send(Pong(message.data))

    def _refuse(self, frame: str, exc: ProtocolError) -> None:
        """Refuse a message the protocol rejects. An error naming an active
        utterance ends it (PROTOCOL.md: a request-level error ends its
        utterance), except for a ``speak`` reusing the id: a duplicate."""
        utterance = self.utterances.get(exc.id) if exc.id is not None else None
        if utterance is None:
            self._send(exc.to_message())
        elif load_object(frame).get("type") == Speak.TYPE:
            self._error(exc.id, ErrorCode.DUPLICATE_ID,
                        "an utterance with this id is still active", "id")
        else:
            utterance.fail(exc.code, exc.message, exc.field)

    def _speak(self, speak: Speak, received: float) -> None:
        if self.state.draining or self.state.failure is not None:
            self._error(speak.id, ErrorCode.SHUTTING_DOWN, "the server is shutting down")
            return
        if speak.id in self.utterances:
            self._error(speak.id, ErrorCode.DUPLICATE_ID,
                        "an utterance with this id is still active", "id")
            return
        if len(self.utterances) >= self.config.max_active:
            self._error(speak.id, ErrorCode.TOO_MANY_ACTIVE,
                        f"at most {self.config.max_active} active utterances per connection",
                        retry_after_ms=self._active_retry_ms(received))
            return
        refusal = self.quota.admit_speak(len(speak.text))
        if refusal is not None:
            self._error(speak.id, refusal.code, refusal.message,
                        retry_after_ms=quota_retry_ms(refusal, self.utterances.values(), received))
            return
        speak = replace(speak, params=lane_params(speak.lane, speak.params,
                                                  self.config.refine_background))
        utterance = ServerUtterance(
            speak, next(self._streams), self, self.worker, received,
            default_deadline_ms=self.config.default_deadline_ms,
            max_text_chars=self.config.max_text_chars, samples=self.state.samples,
            text=self.text,
        )
        self.utterances[speak.id] = utterance
        self.accounting.utterance_started()
        utterance.begin()

    def _known(self, msg_id: str) -> ServerUtterance | None:
        utterance = self.utterances.get(msg_id)
        if utterance is None:
            self._error(msg_id, ErrorCode.UNKNOWN_ID, "no active utterance has this id", "id")
        return utterance

    def _append(self, append: Append) -> None:
        utterance = self._known(append.id)
        if utterance is None:
            return
        if utterance.input_final:
            self._error(append.id, ErrorCode.INPUT_CLOSED, "this utterance's input already ended")
            return
        refusal = self.quota.take_text(len(append.text))
        if refusal is not None:  # ends the utterance: its text is never silently dropped
            utterance.fail(refusal.code, refusal.message, retry_after_ms=to_ms(refusal.retry_after_s))
            return
        utterance.append(append.text, append.final)

    def _flush(self, flush: Flush) -> None:
        utterance = self._known(flush.id)
        if utterance is None:
            return
        if utterance.input_final:
            self._error(flush.id, ErrorCode.INPUT_CLOSED, "this utterance's input already ended")
            return
        utterance.flush(flush.flush_id)

    def _cancel(self, cancel: Cancel) -> None:
        utterance = self._known(cancel.id)
        if utterance is not None:
            utterance.cancel()

    # -- the Transport side (the model side is the worker itself) ---------------------

    def send_message(self, message: UtteranceMessage, owner: ServerUtterance | None = None) -> None:
        self._send(message, owner)

    def send_json(self, data: bytes, owner: ServerUtterance) -> None:
        self.outbox.put_control(data, owner)

    def audio_out(self, speak: Speak) -> AudioOut:
        return framer_for(speak.format, speak.sample_rate, speak.frame_ms)

    def send_audio(self, utterance: ServerUtterance, header: bytes, payload: bytes) -> None:
        self.outbox.put_audio(utterance, header + payload)

    def purge(self, utterance: ServerUtterance) -> None:
        self.outbox.purge(utterance)

    def utterance_ended(self, utterance: ServerUtterance, outcome: Outcome, code: str | None) -> None:
        if self.utterances.get(utterance.id) is utterance:
            del self.utterances[utterance.id]
            self.quota.utterance_ended()
            self.accounting.utterance_ended(utterance, outcome, code)
            if not self.utterances:
                self._last_activity = time.monotonic()

    # -- helpers -------------------------------------------------------------------------------

    def _send(self, message: ServerMessage, owner: ServerUtterance | None = None) -> None:
        if isinstance(message, Error):
            self.accounting.error_sent(message.code)
        self.outbox.put_control(encode(message), owner)

    def _error(self, msg_id: str | None, code: ErrorCode, message: str,
               field: str | None = None, retry_after_ms: int | None = None) -> None:
        """Refuse one client message (the utterance it names, if any, goes on);
        ``retry_after_ms`` only when load caused the refusal."""
        self._send(Error(msg_id, code.value, message, field, retry_after_ms))

    def _active_retry_ms(self, now: float) -> int | None:
        """Retry hint of ``too_many_active``: when one of this connection's
        utterances is expected to end (realtime.server.retry)."""
        return to_ms(active_retry_s(self.utterances.values(), now))

    def _on_overflow(self) -> None:
        """The send queue is over its bound: stop the utterances whose audio is
        stuck (their queued audio goes, an error follows). A finished
        utterance's audio stays: its segment and done messages are queued
        behind it, and what it sent is complete."""
        for owner in self.outbox.owners_with_audio():
            if isinstance(owner, ServerUtterance) and not owner.ended:
                log.info("utterance %s: client is not reading; slow_consumer", owner.id)
                owner.fail(ErrorCode.SLOW_CONSUMER, "the client is not reading its audio")

    def _arm_idle_timer(self, delay: float | None = None) -> None:
        """Close the connection once it has been idle for ``idle_timeout``: no
        active utterance and no client message. The timer is not moved per
        message (that would cost a timer per frame): when it fires it compares
        the last activity with the clock and waits again for the rest."""
        timeout = self.config.idle_timeout
        if timeout <= 0:
            return
        self._idle_timer = asyncio.get_running_loop().call_later(
            timeout if delay is None else delay, self._idle_expired)

    def _idle_expired(self) -> None:
        self._idle_timer = None
        timeout = self.config.idle_timeout
        if self.utterances:  # still speaking: idle means no client input *and* no work
            self._arm_idle_timer()  # the last one's end counts as activity
            return
        left = self._last_activity + timeout - time.monotonic()
        if left > 0:
            self._arm_idle_timer(left)
            return
        log.info("closing a connection idle for %.0f s", timeout)
        asyncio.get_running_loop().create_task(
            self.ws.close(1000, f"idle for {timeout:g} s (send ping to keep it open)"))
