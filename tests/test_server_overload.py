"""Admission by capacity over real sockets: refusals at once, retry hints, /load."""

from __future__ import annotations

import asyncio
import math
import time

import orjson
import pytest
from conftest import wait_until
from websockets.asyncio.client import connect

from protocol import Error, Started
from realtime.engine.tone import ToneRunner
from realtime.server.config import ServerConfig
from realtime.server.retry import active_retry_s, to_ms
from realtime.server.work.policy import scheduler_policy

LONG = "A long sentence that keeps its stream busy for several seconds of audio. " * 2
HELD_TURN_RETRY_MS = 1_267  # four turns held, none spoken (see the held-turns test)


def four_slots() -> ToneRunner:
    # 10 ms a step at any batch, four KV slots: four streams, then full. The
    # cost model keeps the 10 ms (nominal_cost): a step the loaded machine
    # ran late must not lower the capacity or move the retry hints pinned here.
    return ToneRunner(step_seconds=0.01, max_slots=4, batch_sizes=(1, 2, 4), codes_per_char=3.4,
                      nominal_cost=True)


async def http_json(port: int, path: str) -> dict:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return orjson.loads(raw.split(b"\r\n\r\n", 1)[1])


async def fill(server, ws_connect, count: int):
    client = await ws_connect(server)
    for k in range(count):
        await client.send({"type": "speak", "id": f"busy{k}", "text": LONG, "chunking": "token"})
    for _ in range(count):
        await client.next_message(Started, timeout=10)
    return client


async def test_a_speak_beyond_capacity_is_refused_at_once_with_a_retry_hint(server_factory, ws_connect):
    server = await server_factory(runner=four_slots(), max_active=8)
    busy = await fill(server, ws_connect, 4)
    client = await ws_connect(server)
    t = await client.speak_and_collect("late", "Hello there.", timeout=5)
    assert isinstance(t.terminal, Error) and t.terminal.code == "overloaded"
    assert t.started is None and not t.frames
    # The streams ahead hold every slot for seconds: retry when one ends, at
    # most its two sentences (489 codes expected) at 13.3 ms a code from now.
    assert 1_000 < t.terminal.retry_after_ms <= 6_540
    assert all(x.terminal is None for x in busy.transcripts.values())  # they run on
    load = await http_json(server.port, "/load")
    assert load["saturated"] and load["interactive"]["streams"] == 4
    assert load["interactive"]["capacity"] == 4
    assert 0 < load["retry_after_ms"] <= t.terminal.retry_after_ms  # the streams ran on
    metrics = (await server_metrics(server.port)).decode()
    assert "chattts_saturation 1.0" in metrics and "chattts_interactive_capacity 4.0" in metrics


async def server_metrics(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    await writer.drain()
    raw = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    return raw


async def open_turn(client, msg_id: str, text: str = "Well"):
    """A streamed turn's ``speak`` (no sentence yet); its answer: Started or Error."""
    await client.send({"type": "speak", "id": msg_id, "text": text, "final": False})
    while True:
        item = await client.recv(timeout=5)
        if isinstance(item, (Started, Error)) and item.id == msg_id:
            return item


async def test_turns_opened_before_their_first_sentence_hold_capacity(server_factory, ws_connect):
    # A voice assistant opens each turn before the LLM has a sentence: a burst
    # of such turns is accepted up to capacity only, and a turn that ends
    # (cancel, done, disconnect) frees its place.
    server = await server_factory(runner=four_slots(), max_active=8)
    other, client = await ws_connect(server), await ws_connect(server)
    assert isinstance(await open_turn(other, "elsewhere"), Started)
    for k in range(1, 4):
        assert isinstance(await open_turn(client, f"turn{k}"), Started)
    # A held turn speaks two seconds at least (94 codes and its prefill), a
    # code every 13.3 ms (four streams, 10 ms steps of four rows, three
    # steps in four theirs): 1267 ms, however long the turns have been held.
    assert await refused_turn(client) == HELD_TURN_RETRY_MS
    load = await http_json(server.port, "/load")
    assert load["saturated"] and load["interactive"]["streams"] == 4
    assert load["interactive"]["capacity"] == 4 and load["retry_after_ms"] == HELD_TURN_RETRY_MS
    assert load["interactive"]["queued"] == 0  # held, nothing queued

    await client.send({"type": "cancel", "id": "turn1"})
    await client.collect(["turn1"])
    assert isinstance(await open_turn(client, "next1"), Started)
    assert await refused_turn(client) == HELD_TURN_RETRY_MS
    # Its sentence comes and is spoken: the place is the stream's, then free.
    await client.send({"type": "append", "id": "turn2", "text": " is done.", "final": True})
    (await client.collect(["turn2"]))["turn2"].check_done()
    assert isinstance(await open_turn(client, "next2"), Started)
    active = server.accounting.active_utterances
    await other.close()
    await wait_until(lambda: server.accounting.active_utterances == active - 1)
    assert isinstance(await open_turn(client, "next3"), Started)
    assert await refused_turn(client) == HELD_TURN_RETRY_MS  # turn2's steps: the same cost


async def refused_turn(client) -> int:
    """Open a turn that must be refused ``overloaded``; its retry hint."""
    late = await open_turn(client, "late")
    assert isinstance(late, Error) and late.code == "overloaded", late
    return late.retry_after_ms


async def test_queue_only_admission_queues_the_same_speak(server_factory, ws_connect):
    server = await server_factory(runner=four_slots(), max_active=8, admission="queue-only")
    await fill(server, ws_connect, 4)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "late", "text": "Hello there."})
    assert (await client.next_message(Started, timeout=10)).id == "late"
    load = await http_json(server.port, "/load")
    assert load["admission"] == "queue-only" and load["interactive"]["streams"] == 5


async def test_a_nominal_cost_runner_teaches_the_cost_model_its_step_time_only(server_factory,
                                                                             ws_connect):
    # Each step sleeps 10 ms and so takes longer on the clock, and the loop's
    # turn longer still: a measured runner's cost model learns that; one of
    # nominal cost keeps exactly its 10 ms (what the tests above count on).
    for nominal in (True, False):
        runner = ToneRunner(step_seconds=0.01, max_slots=4, batch_sizes=(1, 2, 4),
                            nominal_cost=nominal)
        server = await server_factory(runner=runner)
        client = await ws_connect(server)
        (await client.speak_and_collect("a", "Hello there, a few steps.", timeout=10)).check_done()
        learned = server.worker.scheduler.cost.step_time(1, 256)
        assert learned == 0.01 if nominal else learned > 0.01


async def test_load_report_when_idle(server_factory):
    server = await server_factory(runner=four_slots())
    load = await http_json(server.port, "/load")
    assert load["ready"] and not load["saturated"] and load["saturation"] == 0.0
    assert load["retry_after_ms"] is None and load["interactive"]["capacity"] == 4
    assert load["interactive"]["first_audio_budget_ms"] > 0


async def test_too_many_active_says_when_one_of_the_connections_utterances_ends(server_factory,
                                                                               ws_connect):
    server = await server_factory(max_active=1, runner=ToneRunner(step_seconds=0.01))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "a", "text": "x" * 47, "final": False})
    await client.next_message(Started)
    t = await client.speak_and_collect("b", "Too many.", timeout=5)
    assert t.terminal.code == "too_many_active"
    # 47 characters are expected to last ~3.4 s of audio from the first speak.
    assert 2_500 <= t.terminal.retry_after_ms <= 3_500


def test_scheduler_policy_follows_the_flags_and_the_runner():
    class Streaming(ToneRunner):
        first_audio_steps = 12

    cfg = ServerConfig(admission="queue-only", interactive_first_audio_ms=250,
                       stream_reservation_s=3.0)
    assert scheduler_policy(cfg, Streaming()) == {
        "admission": "queue-only", "interactive_first_audio_s": 0.25, "first_audio_steps": 12,
        "stream_reservation_s": 3.0}
    assert scheduler_policy(ServerConfig(), ToneRunner())["interactive_first_audio_s"] is None
    assert scheduler_policy(ServerConfig(), ToneRunner())["first_audio_steps"] == 1


def test_retry_hints_round_up_and_stay_bounded():
    assert to_ms(None) is None and to_ms(0.0121) == 13 and to_ms(0.012) == 12

    class U:
        def __init__(self, received, chars):
            self.received, self.text_chars = received, chars

    assert active_retry_s([], 0.0) == 1.0
    assert active_retry_s([U(0.0, 0)], 5.0) == 0.05
    assert active_retry_s([U(0.0, 10**6)], 0.0) == 30.0


async def test_the_flags_select_the_admission_mode(server_factory):
    server = await server_factory(runner=four_slots(), admission="queue-only",
                                  interactive_first_audio_ms=400)
    sched = server.worker.scheduler
    assert sched.config.admission == "queue-only" and sched.first_audio_s == 0.4
    async with connect(f"ws://127.0.0.1:{server.port}/v1/stream"):
        pass


def test_loop_lag_is_a_moving_average_in_time():
    from realtime.server.loop_lag import TAU_S, LoopLag

    lag = LoopLag()
    lag._latest = 1.0  # the timer reads late all along (the average decides)
    lag.note(0.0, now=100.0)
    lag.note(0.2, now=100.05)  # one late tick weighs what 50 ms of time weighs
    assert lag.current() == pytest.approx(0.2 * (1 - math.exp(-0.05 / TAU_S)))
    for k in range(1, 60):  # a loop that stays 100 ms late for 3 s
        lag.note(0.1, now=100.05 + 0.05 * k)
    assert lag.current() == pytest.approx(0.1, rel=0.01)
    lag._latest = 0.0  # caught up: on time at once
    assert lag.current() == 0.0


async def test_a_stalled_event_loop_shows_in_the_load_report(server_factory):
    server = await server_factory(runner=four_slots())
    lag = server.worker.loop_lag
    time.sleep(0.3)  # the loop's own timer fires 0.3 s late
    deadline = time.monotonic() + 2.0
    while lag.current() == 0.0 and time.monotonic() < deadline:
        await asyncio.sleep(0)  # until the late tick has run (the next is 50 ms away)
    assert server.http.load_report()["loop_lag_ms"] > 10
