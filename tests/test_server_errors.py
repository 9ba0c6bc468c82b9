"""Every error code a client can cause, produced over a real socket (ToneRunner)."""

from __future__ import annotations

import asyncio

import pytest
from conftest import wait_until
from websockets.exceptions import ConnectionClosed

from protocol import Done, Error
from realtime.engine.tone import ToneRunner

EMBEDDING = "\u4e00" * 20  # syntactically an encoded speaker; the runner cannot decode it


async def _error(client, timeout: float = 5.0) -> Error:
    return await client.next_message(Error, timeout)


async def test_bad_json_is_connection_level_and_keeps_the_connection(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    for raw in ("{not json", "[]", '"text"'):
        await client.send(raw)
        err = await _error(client)
        assert err.code == "bad_json" and err.id is None
    t = await client.speak_and_collect("ok", "Still works.")
    assert isinstance(t.terminal, Done)


async def test_binary_frame_is_not_allowed(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send(b"\x00\x01")
    err = await _error(client)
    assert err.code == "binary_not_allowed" and err.id is None


@pytest.mark.parametrize("message, field", [
    ({"type": "speak", "text": "x"}, "id"),
    ({"type": "speak", "id": "a", "text": 5}, "text"),
    ({"type": "speak", "id": "a", "text": "x", "frame_ms": 5}, "frame_ms"),
])
async def test_bad_message_names_the_field(tone_server, ws_connect, message, field):
    client = await ws_connect(tone_server)
    await client.send(message)
    err = await _error(client)
    assert err.code == "bad_message" and err.field == field


async def test_unknown_type(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "sing", "id": "a"})
    assert (await _error(client)).code == "unknown_type"


async def test_unsupported_from_the_protocol_and_from_the_runtime(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "speak", "id": "f", "text": "x", "format": "mp3"})
    err = await _error(client)
    assert (err.code, err.id, err.field) == ("unsupported", "f", "format")
    t = await client.speak_and_collect("v", "Hello.", voice=EMBEDDING)
    assert isinstance(t.terminal, Error) and t.terminal.code == "unsupported"
    assert t.started is None and not t.frames  # refused: no started


async def test_duplicate_id_does_not_end_the_running_utterance(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.002))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "d", "text": "A sentence of some length here."})
    await client.send({"type": "speak", "id": "d", "text": "Again."})
    t = (await client.collect(["d"]))["d"]
    assert [n.code for n in t.notices] == ["duplicate_id"]
    t.check_done()


async def test_a_malformed_speak_reusing_an_active_id_is_a_duplicate(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.002))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "d", "text": "A sentence of some length here."})
    await client.send({"type": "speak", "id": "d", "text": 5})
    t = (await client.collect(["d"]))["d"]
    assert [(n.code, n.field) for n in t.notices] == [("duplicate_id", "id")]
    t.check_done()


async def test_a_malformed_message_naming_an_active_utterance_ends_it(server_factory, ws_connect):
    # PROTOCOL.md: a request-level error ends its utterance; the client must
    # get exactly one terminal message and no audio after it.
    server = await server_factory(runner=ToneRunner(step_seconds=0.005))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "m", "text": "Streamed text that runs. " * 4,
                       "final": False})
    await client.send({"type": "append", "id": "m", "text": ["not", "a", "string"]})
    t = (await client.collect(["m"]))["m"]
    assert isinstance(t.terminal, Error)
    assert (t.terminal.code, t.terminal.field) == ("bad_message", "text")
    assert not t.after_terminal
    await wait_until(lambda: server.active_utterances == 0 and not server.worker._jobs)


async def test_unknown_id_for_append_flush_and_cancel(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    for kind in ("append", "flush", "cancel"):
        message = {"type": kind, "id": "ghost"}
        if kind == "append":
            message["text"] = "x"
        await client.send(message)
        err = await _error(client)
        assert (err.code, err.id) == ("unknown_id", "ghost")


async def test_input_closed_does_not_end_the_running_utterance(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.002))
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "i", "text": "A sentence of some length here."})
    await client.send({"type": "append", "id": "i", "text": "more"})
    await client.send({"type": "flush", "id": "i"})
    t = (await client.collect(["i"]))["i"]
    assert [n.code for n in t.notices] == ["input_closed", "input_closed"]
    t.check_done()


async def test_text_too_long_counts_speak_plus_appends(server_factory, ws_connect):
    server = await server_factory(max_text_chars=40)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "x", "text": "y" * 41})
    err = await _error(client)
    assert (err.code, err.id) == ("text_too_long", "x")
    await client.send({"type": "speak", "id": "t", "text": "Twenty characters ok", "final": False})
    await client.send({"type": "append", "id": "t", "text": " and twenty more chars"})
    t = (await client.collect(["t"]))["t"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "text_too_long"


async def test_too_many_active(server_factory, ws_connect):
    server = await server_factory(max_active=2)
    client = await ws_connect(server)
    for i in range(2):
        await client.send({"type": "speak", "id": f"o{i}", "text": "Open", "final": False})
    await client.send({"type": "speak", "id": "o2", "text": "One too many."})
    t = (await client.collect(["o2"]))["o2"]
    assert t.terminal.code == "too_many_active" and t.started is None


async def test_overloaded_when_the_lane_queue_is_full(server_factory, ws_connect):
    runner = ToneRunner(step_seconds=0.02)
    server = await server_factory(runner=runner, max_active=8, admission="queue-only",
                                  scheduler_options={"max_queue_interactive": 4})
    client = await ws_connect(server)
    text = "One. Two. Three."
    ids = [f"q{i}" for i in range(4)]
    for msg_id in ids:
        await client.send({"type": "speak", "id": msg_id, "text": text})
    transcripts = await client.collect(ids, timeout=20)
    codes = [t.terminal.code if isinstance(t.terminal, Error) else "done"
             for t in transcripts.values()]
    assert "overloaded" in codes and "done" in codes
    refused = [t for t in transcripts.values() if isinstance(t.terminal, Error)]
    assert all(t.started is None for t in refused)
    assert all(t.terminal.retry_after_ms > 0 for t in refused)


async def test_deadline_unmeetable_for_background(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01, codes_per_char=5))
    client = await ws_connect(server)
    t = await client.speak_and_collect("late", "A long background sentence. " * 10,
                                       lane="background", deadline_ms=50)
    assert isinstance(t.terminal, Error) and t.terminal.code == "deadline_unmeetable"
    assert t.started is None
    ok = await client.speak_and_collect("fine", "Short.", lane="background", deadline_ms=60000)
    assert ok.check_done().deadline_met is True


async def test_internal_for_a_failing_job_server_stays_up(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    t = await client.speak_and_collect("bad", "This one will FAIL now.")
    assert isinstance(t.terminal, Error) and t.terminal.code == "internal"
    assert t.started is not None
    again = await client.speak_and_collect("good", "This one is fine.")
    again.check_done()


async def test_internal_when_the_model_loop_crashes_then_it_restarts(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "speak", "id": "bystander", "text": "Waiting in line. " * 3,
                       "lane": "background"})
    t = await client.speak_and_collect("boom", "Please CRASH the loop.")
    assert t.terminal.code == "internal"
    rest = await client.collect(["bystander"])
    assert rest["bystander"].terminal is not None  # failed with internal or finished first
    assert tone_server.worker.stats.restarts == 1
    after = await client.speak_and_collect("after", "The loop is back.")
    after.check_done()


async def test_oom_splits_the_batch_and_everyone_finishes(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    ids = ["m0", "m1", "m2"]
    for msg_id in ids:
        await client.send({"type": "speak", "id": msg_id, "text": "OOM prone sentence.",
                           "lane": "background"})
    for t in (await client.collect(ids)).values():
        t.check_done()


async def test_oversize_message_closes_with_1009(server_factory, ws_connect):
    server = await server_factory(max_message_bytes=1024)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "big", "text": "x" * 2000})
    with pytest.raises(ConnectionClosed) as info:
        for _ in range(5):
            await client.recv()
    assert info.value.rcvd is not None and info.value.rcvd.code == 1009


async def test_shutting_down_for_new_speaks_while_draining(server_factory, ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01), drain_timeout=5)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "busy", "text": "Keep the server busy. " * 3})
    await client.recv()
    drain = asyncio.create_task(server.drain())
    while not server.state.draining:
        await asyncio.sleep(0.001)
    t = await client.speak_and_collect("new", "Too late.")
    assert isinstance(t.terminal, Error) and t.terminal.code == "shutting_down"
    busy = (await client.collect(["busy"]))["busy"]
    busy.check_done()  # in-flight work finishes within the drain bound
    await drain


async def test_shutting_down_ends_utterances_when_the_drain_bound_passes(server_factory,
                                                                         ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.02), drain_timeout=0.2)
    client = await ws_connect(server)
    await client.send({"type": "speak", "id": "long", "text": "A very long utterance. " * 20})
    await client.recv()
    drain = asyncio.create_task(server.drain())
    t = (await client.collect(["long"]))["long"]
    assert isinstance(t.terminal, Error) and t.terminal.code == "shutting_down"
    with pytest.raises(ConnectionClosed) as info:
        await client.recv()
    assert info.value.rcvd.code == 1001
    await drain
