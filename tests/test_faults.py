"""Fault behaviour: model failures, OOM, a dying model loop, vanishing and slow
clients, and SIGTERM in the middle of streams.

Every test ends by checking the server still serves and holds nothing: no
active utterances, no jobs in the worker, no KV slots in scheduler or runner.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
import time

import orjson
import pytest
from conftest import Frame, async_http_get, free_port, start_server_process, wait_ready, wait_until
from waits import until_status
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from protocol import Cancelled, Done, Error, Started, decode_server
from realtime.engine.tone import ToneRunner

LONG = "This sentence keeps the model busy for a while. " * 3


async def wait_idle(server, timeout: float = 5.0) -> None:
    """Until the server holds no utterance, job or slot (fails after ``timeout``)."""
    runner = server.worker.runner
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        sched = server.worker.scheduler
        state = {
            "active_utterances": server.active_utterances,
            "worker_jobs": len(server.worker._jobs),
            "scheduler_slots": sched.active_slots if sched is not None else 0,
            "scheduler_queued": sum(sched.depth(lane) for lane in _lanes()) if sched else 0,
            "runner_slots": runner.slots_in_use,
        }
        if not any(state.values()):
            return
        if loop.time() > end:
            raise AssertionError(f"server not idle: {state}")
        await asyncio.sleep(0.02)


def _lanes():
    from scheduler import Lane

    return tuple(Lane)


async def still_serves(server, ws_connect) -> None:
    """A new utterance completes, at once or after the retry hint of a load
    refusal (capacity admission may still see the storm just over), as a
    well-behaved client would do."""
    client = await ws_connect(server)
    for attempt in range(5):
        t = await client.speak_and_collect(f"probe{attempt}", "Still serving, thank you.")
        if not (isinstance(t.terminal, Error) and t.terminal.retry_after_ms is not None):
            break
        await asyncio.sleep(t.terminal.retry_after_ms / 1000.0)
    t.check_done()
    await client.close()


# -- model failures ---------------------------------------------------------------------------


async def test_failure_mid_batch_fails_only_that_utterance(server_factory, ws_connect):
    runner = ToneRunner(step_seconds=0.005)
    server = await server_factory(runner=runner)
    client = await ws_connect(server)
    texts = {"ok1": "A fine background sentence.", "bad": "This one will FAIL in the batch.",
             "ok2": "Another fine background sentence."}
    for msg_id, text in texts.items():
        await client.send({"type": "speak", "id": msg_id, "text": text, "lane": "background"})
    got = await client.collect(texts)
    assert runner.max_batch_seen >= 2  # the failure really happened inside a batch
    assert isinstance(got["bad"].terminal, Error) and got["bad"].terminal.code == "internal"
    got["ok1"].check_done()
    got["ok2"].check_done()
    await wait_idle(server)
    await still_serves(server, ws_connect)


async def test_out_of_memory_splits_the_batch_and_completes(server_factory, ws_connect):
    runner = ToneRunner(step_seconds=0.002)
    server = await server_factory(runner=runner)
    client = await ws_connect(server)
    ids = [f"b{i}" for i in range(4)]
    for i, msg_id in enumerate(ids):
        text = "This sentence triggers OOM in a batch." if i == 1 else f"Plain sentence {i}."
        await client.send({"type": "speak", "id": msg_id, "text": text, "lane": "background"})
    got = await client.collect(ids)
    for msg_id in ids:
        got[msg_id].check_done()
        assert got[msg_id].frames
    await wait_idle(server)
    await still_serves(server, ws_connect)


async def test_model_loop_crash_restarts_and_keeps_serving(server_factory, ws_connect):
    runner = ToneRunner(step_seconds=0.005)
    server = await server_factory(runner=runner)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "bystander", "text": LONG})
    await client.next_message(Started)
    await client.send({"type": "speak", "id": "crash", "text": "Please CRASH the loop."})
    got = await client.collect(["bystander", "crash"])
    assert server.worker.stats.restarts == 1
    # Jobs in flight when the loop died end with internal, never silence.
    for t in got.values():
        assert isinstance(t.terminal, (Done, Error))
        if isinstance(t.terminal, Error):
            assert t.terminal.code == "internal"
    assert isinstance(got["crash"].terminal, Error)
    await wait_idle(server)
    await still_serves(server, ws_connect)


async def test_model_thread_exception_outside_the_runner(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.005))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "victim", "text": LONG})
    await client.next_message(Started)

    def boom(now: float) -> None:
        raise RuntimeError("injected loop failure")

    # A bug in the loop outside the runner; the recovery's fresh scheduler
    # leaves the broken one behind.
    server.worker.scheduler.schedule = boom
    server.worker.cancel((10**9,))  # wake the thread so the loop plans now
    t = (await client.collect(["victim"]))["victim"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "internal"
    assert server.worker.stats.restarts == 1
    await wait_idle(server)
    await still_serves(server, ws_connect)


# -- a lost device -----------------------------------------------------------------------------


async def test_a_lost_device_fails_every_job_and_stops_serving(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.005))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "bystander", "text": LONG})
    await client.next_message(Started)
    await client.send({"type": "speak", "id": "trigger", "text": "CUDAERROR strikes here."})
    got = await client.collect(["bystander", "trigger"])
    # Unlike a crash of the loop, nothing recovers: the CUDA context is gone.
    assert all(isinstance(t.terminal, Error) and t.terminal.code == "internal"
               for t in got.values())
    assert server.worker.stats.restarts == 0 and server.worker.device_lost is not None
    status, _, body = await async_http_get(server.port, "/readyz")
    assert status == 503 and orjson.loads(body)["error"] == "DeviceFailure"
    await client.send({"type": "speak", "id": "after", "text": "Anyone there?"})
    t = (await client.collect(["after"]))["after"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "shutting_down"
    # A submission that raced the failure is refused by the worker, not left hanging.
    from realtime.engine.api import SegmentRequest
    from realtime.server.work.handoff import SegmentWork, Submission
    from scheduler import Lane

    answered = asyncio.Event()

    class Sink:
        def on_worker_update(self, update):
            self.update = update
            answered.set()

    sink = Sink()
    server.worker.submit(Submission(sink, Lane.INTERACTIVE, time.monotonic(), None,
                                    (SegmentWork(10**6, 0, SegmentRequest("Late."), 8),), True))
    await asyncio.wait_for(answered.wait(), 5)
    assert sink.update.code == "internal"


def test_a_lost_device_ends_the_process_for_a_restart():
    port = free_port()
    proc = start_server_process(port, "--tone-step-ms", "5", log_level="warning")
    try:
        wait_ready(port, proc)
        from websockets.sync.client import connect as sync_connect

        with sync_connect(f"ws://127.0.0.1:{port}/v1/stream") as ws:
            ws.recv()  # hello
            ws.send(orjson.dumps({"type": "speak", "id": "x", "text": "CUDAERROR now."}).decode())
            messages = []
            try:
                while True:
                    raw = ws.recv(timeout=10)
                    if isinstance(raw, str):
                        messages.append(decode_server(raw))
            except ConnectionClosed:
                pass
        errors = [m for m in messages if isinstance(m, Error)]
        assert [(e.id, e.code) for e in errors] == [("x", "internal")]
        assert proc.wait(timeout=20) == 3  # EXIT_DEVICE_LOST: the supervisor restarts it
        assert b"device failed" in proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- clients that vanish -------------------------------------------------------------------------

STAGES = ("before_started", "after_started", "mid_frames", "after_done")


@pytest.mark.parametrize("stage", STAGES)
@pytest.mark.parametrize("lane", ["interactive", "background"])
async def test_client_vanishing_frees_everything(server_factory, ws_connect, stage, lane):
    runner = ToneRunner(step_seconds=0.003)
    server = await server_factory(runner=runner)
    ws = await connect(f"ws://127.0.0.1:{server.port}/v1/stream", max_size=None)
    await ws.recv()  # hello
    text = "Short." if stage == "after_done" else LONG
    for i in range(3):  # several utterances, several segments each
        await ws.send(orjson.dumps({"type": "speak", "id": f"u{i}", "text": text,
                                    "lane": lane, "chunking": "token"}).decode())
    if stage != "before_started":
        wanted = {"after_started": Started, "mid_frames": Frame, "after_done": Done}[stage]
        done = 0
        while True:
            raw = await asyncio.wait_for(ws.recv(), 10)
            item = Frame if isinstance(raw, bytes) else type(decode_server(raw))
            done += item is Done
            if item is wanted and (stage != "after_done" or done == 3):
                break
    ws.transport.abort()  # vanish: no close handshake
    await wait_idle(server)
    assert server.connection_count == 0 or await _drops(server)
    await still_serves(server, ws_connect)


async def _until_disconnected(server, timeout: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while server.connection_count:
        assert loop.time() < end, "the server never noticed the client was gone"
        await asyncio.sleep(0.01)


async def _drops(server) -> bool:
    for _ in range(100):
        if server.connection_count == 0:
            return True
        await asyncio.sleep(0.02)
    return False


async def _slow_consumer_session(server, ws_connect):
    """A client that stops reading; returns its transcripts once it reads again."""
    # Tiny receive queue, and no recv until the server has given up on it.
    slow = await ws_connect(server, max_queue=1, read_hello=False)
    ids = [f"s{i}" for i in range(6)]
    for msg_id in ids:
        await slow.send({"type": "speak", "id": msg_id, "text": "x" * 4000,
                         "format": "pcm_f32le", "params": {"seed": 1}})
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while server.active_utterances and loop.time() < end:
        await asyncio.sleep(0.05)
    assert server.active_utterances == 0  # the server stopped them without the client
    await still_serves(server, ws_connect)
    await slow.recv()  # hello
    got = await slow.collect(ids, timeout=20)
    try:  # whatever is left on the socket
        while True:
            await slow.recv(timeout=0.5)
    except (TimeoutError, ConnectionClosed):
        pass
    await wait_idle(server)
    return slow, got


async def test_slow_consumer_is_stopped_and_others_go_on(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(max_codes=4096), send_queue_bytes=64 * 1024)
    _, got = await _slow_consumer_session(server, ws_connect)
    codes = {t.terminal.code for t in got.values() if isinstance(t.terminal, Error)}
    assert "slow_consumer" in codes
    # Each utterance ended with exactly one terminal message.
    assert all(isinstance(t.terminal, (Done, Error)) for t in got.values())
    assert all(not any(isinstance(x, (Done, Cancelled, Error)) for x in t.after_terminal)
               for t in got.values())


async def test_an_overflow_never_drops_the_audio_of_a_finished_utterance(server_factory,
                                                                       ws_connect):
    # A finished utterance's frames may still wait in the send queue, behind a
    # stuck stream, with its segment and done messages after them: dropping
    # them would send a segment without its last frame.
    # The filler's audio comes in bursts (a segment's audio waits for the one
    # before it), so a fixed limit could overflow before the socket is seen
    # full: the queue starts roomy and is narrowed once "short" is queued behind
    # the filler, and the filler (its input still open) is then given more text.
    server = await server_factory(runner=ToneRunner(step_seconds=0.001, max_codes=4096),
                                  send_queue_bytes=256 << 20)
    client = await ws_connect(server, max_queue=1)
    client.ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
    await client.send({"type": "speak", "id": "filler", "text": "x" * 4000, "final": False,
                       "chunking": "token", "format": "pcm_f32le"})
    session = next(iter(server.sessions))
    # Full: the kernel takes no more (asyncio buffers the rest) and frames wait
    # in the queue; the client reads nothing until collect.
    await wait_until(lambda: session.ws.transport.get_write_buffer_size() > 0
                     and session.outbox.audio_bytes > 100_000)
    await client.send({"type": "speak", "id": "short", "text": "Hi there.", "format": "pcm_f32le"})
    await wait_until(lambda: any(owner.id == "short" and owner.ended  # done, queued behind
                                 for owner in session.outbox.owners_with_audio()), timeout=30)
    session.outbox.limit_bytes = 1 << 20  # the filler's next frame overflows
    await client.send({"type": "append", "id": "filler", "text": " More text.", "final": True})
    await wait_until(lambda: "filler" not in session.utterances)  # overflow: slow_consumer
    got = await client.collect(["filler", "short"], timeout=20)
    got["short"].check_done("pcm_f32le")
    assert isinstance(got["filler"].terminal, Error)
    assert got["filler"].terminal.code == "slow_consumer"


async def test_no_audio_after_slow_consumer_error(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(max_codes=4096), send_queue_bytes=64 * 1024)
    _, got = await _slow_consumer_session(server, ws_connect)
    late = {i: len(t.after_terminal) for i, t in got.items() if t.after_terminal}
    assert not late, f"frames after the terminal message: {late}"


# -- SIGTERM mid-stream -----------------------------------------------------------------------------


async def test_sigterm_mid_stream_ends_every_utterance(ws_connect):
    port = free_port()
    # 20 ms per step, one code per character: the long texts outlive the 1 s drain.
    proc = start_server_process(port, "--tone-step-ms", "20", "--drain-timeout", "1",
                                log_level="warning")
    try:
        await asyncio.to_thread(wait_ready, port, proc)
        client = await ws_connect(f"ws://127.0.0.1:{port}/v1/stream")
        ids = {"short": "Short one.", "long1": "y" * 400, "long2": "z" * 400,
               "bg": "A background sentence."}
        for msg_id, text in ids.items():
            lane = "background" if msg_id == "bg" else "interactive"
            await client.send({"type": "speak", "id": msg_id, "text": text, "lane": lane,
                               "chunking": "token"})
        await client.next_message(Frame)
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(until_status, port, "/readyz", 503)  # new work is refused now
        await client.send({"type": "speak", "id": "late", "text": "Too late."})
        await client.send({"type": "cancel", "id": "long2"})
        close_code = None
        try:
            while True:
                await client.recv(timeout=15)
        except ConnectionClosed as exc:
            close_code = exc.rcvd.code if exc.rcvd else None
        assert close_code == 1001
        allowed = {"done", "cancelled", "error"}
        for msg_id in [*ids, "late"]:
            t = client.transcript(msg_id)
            assert t.kind in allowed, f"{msg_id} ended in silence"
            if isinstance(t.terminal, Error):
                assert t.terminal.code == "shutting_down", (msg_id, t.terminal)
        assert isinstance(client.transcript("late").terminal, Error)
        assert client.transcript("late").started is None
        assert isinstance(client.transcript("long2").terminal, Cancelled)
        assert isinstance(client.transcript("long1").terminal, Error)  # outlived the drain
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


class StallOnOom(ToneRunner):
    """Out of memory takes a while to come back, so a client can vanish
    meanwhile: the first OOM step sets ``stalled`` and waits until the test
    sets ``resume`` (at most 10 s)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.stalled = threading.Event()
        self.resume = threading.Event()

    def execute(self, plan):
        out = super().execute(plan)
        if out.oom and not self.stalled.is_set():
            self.stalled.set()
            self.resume.wait(10)
        return out


async def test_cancel_after_out_of_memory_leaves_nothing_held(server_factory):
    server = await server_factory(runner=StallOnOom(step_seconds=0.001))
    ws = await connect(f"ws://127.0.0.1:{server.port}/v1/stream", max_size=None)
    await ws.recv()
    for i, text in enumerate(["A plain sentence here.", "This one has OOM inside."]):
        await ws.send(orjson.dumps({"type": "speak", "id": f"x{i}", "text": text,
                                    "lane": "background"}).decode())
    runner = server.worker.runner
    try:
        assert await asyncio.to_thread(runner.stalled.wait, 10)  # the batched step hit its OOM
        ws.transport.abort()
        await _until_disconnected(server)
    finally:
        runner.resume.set()
    await wait_idle(server, timeout=5)


def test_soak_small():
    from bench.soak import SoakOptions, run_soak

    report = run_soak(SoakOptions(utterances=60, load=0.8, connections=4, cancel_share=0.2,
                                  disconnect_share=0.05, seed=3, grace_s=20))
    assert report.utterances == 60
    assert report.lost == 0, report
    assert report.terminal_violations == 0, report.violation_examples
    assert report.leaked_slots == 0, report
    assert report.done > 0 and report.cancelled + report.vanished > 0
