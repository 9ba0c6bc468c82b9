"""Slow consumers and abrupt disconnects: memory stays bounded, slots come back."""

from __future__ import annotations

import socket
import time

import numpy as np
from conftest import wait_until

from protocol import Done, Error, ErrorCode, Speak
from realtime.audio.formats import framer_for
from realtime.engine.tone import ToneRunner
from realtime.server.stream.utterance import ServerUtterance
from realtime.server.work.handoff import UpdateKind, WorkerUpdate


async def test_slow_consumer_is_stopped_and_memory_stays_bounded(server_factory, ws_connect):
    limit = 256 * 1024
    runner = ToneRunner(codes_per_char=40, max_codes=4000)
    server = await server_factory(runner=runner, send_queue_bytes=limit)
    # The client stops reading after a few messages: tiny receive queue and buffer.
    client = await ws_connect(server, max_queue=1)
    client.ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    text = "A very long stream of audio for nobody. " * 40
    steps = server.worker.stats.steps
    await client.send({"type": "speak", "id": "slow", "text": text, "format": "pcm_f32le",
                       "sample_rate": 48000, "frame_ms": 1000})
    session = next(iter(server.sessions))
    # Its steps ran, then the utterance ended. Not "present, then gone": the whole
    # utterance can start and end between two polls of a busy loop.
    await wait_until(lambda: server.worker.stats.steps > steps and "slow" not in session.utterances,
                     timeout=20)
    assert session.outbox.audio_bytes <= limit
    # now read: frames that were already queued, then the terminal error
    t = (await client.collect(["slow"], timeout=20))["slow"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "slow_consumer"
    await wait_until(lambda: server.worker.stats.active_slots == 0)
    # the connection still works
    ok = await client.speak_and_collect("next", "Ok.")  # one burst below the bound
    assert isinstance(ok.terminal, Done)


async def test_abrupt_disconnect_frees_the_model_slots(server_factory, ws_connect):
    runner = ToneRunner(step_seconds=0.005)
    server = await server_factory(runner=runner)
    client = await ws_connect(server)
    for i in range(4):
        await client.send({"type": "speak", "id": f"d{i}", "text": "Long enough to be running. " * 5,
                           "lane": "background" if i % 2 else "interactive"})
    await client.recv()
    await wait_until(lambda: server.worker.stats.active_slots > 0)
    client.ws.transport.abort()  # no close frame
    await wait_until(lambda: server.active_utterances == 0)
    await wait_until(lambda: server.worker.stats.active_slots == 0
                           and server.worker.stats.in_flight == 0)
    await wait_until(lambda: runner.slots_in_use == 0 and not server.worker._jobs)
    assert server.worker.scheduler.idle
    assert not server.sessions


class _OverflowingLink:
    """A Transport (and model side) whose outbox overflows at the ``overflow_at``-th frame:
    like the session, it fails the utterance (slow_consumer) from inside send_audio."""

    def __init__(self, overflow_at: int) -> None:
        self.overflow_at = overflow_at
        self.sent: list[object] = []  # messages and frames (bytes), in order
        self.submissions = []
        self._job_ids = iter(range(1, 1000))

    def send_message(self, message: object, owner=None) -> None:
        self.sent.append(message)

    def audio_out(self, speak):
        return framer_for(speak.format, speak.sample_rate, speak.frame_ms)

    def send_audio(self, utterance, header: bytes, payload: bytes) -> None:
        self.sent.append(header + payload)
        if sum(isinstance(x, bytes) for x in self.sent) == self.overflow_at:
            utterance.fail(ErrorCode.SLOW_CONSUMER, "the client is not reading its audio")

    def submit(self, submission) -> None:
        self.submissions.append(submission)

    def cancel(self, job_ids, sink=None) -> None:
        pass

    def purge(self, utterance) -> None:
        pass

    def utterance_ended(self, utterance, outcome, code) -> None:
        pass

    def new_job_id(self) -> int:
        return next(self._job_ids)


def test_no_frame_or_segment_follows_a_slow_consumer_error_mid_burst():
    # One chunk completes many frames; the outbox overflows on the third of them.
    link = _OverflowingLink(overflow_at=3)
    speak = Speak("u1", "One sentence here. And a second one.", frame_ms=20)
    utterance = ServerUtterance(speak, 1, link, link, time.monotonic(), default_deadline_ms=10_000,
                          max_text_chars=1000)
    utterance.begin()
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.ADMITTED))
    first_job = link.submissions[0].segments[0].job_id
    audio = np.full(24000, 0.1, np.float32)  # 50 frames of 20 ms
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.AUDIO, first_job, audio=audio))
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.FINISHED, first_job))

    terminal = [i for i, x in enumerate(link.sent) if isinstance(x, (Done, Error))]
    assert len(terminal) == 1
    assert link.sent[terminal[0]].code == "slow_consumer"
    assert link.sent[terminal[0] + 1:] == []  # no frame, no segment after it
    assert sum(isinstance(x, bytes) for x in link.sent) == 3
    assert utterance.ended
