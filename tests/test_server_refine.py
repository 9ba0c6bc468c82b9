"""The refine pass end to end: ``params.refine`` over the WebSocket, the
Python client and the CLI, the OpenAI endpoint's ``refine`` extension and
``instructions``, on the real runtime with tiny random weights
(``tiny_server``); bad values refused as PROTOCOL.md says; and
``--refine-background`` on the session path (a recording tone runner)."""

from __future__ import annotations

import pytest

from clients import RealtimeClient
from clients.say import parse_args, refine_arg, run
from protocol import Done, Error, RefineLevels, Segment
from realtime.engine.api import RefineRequest
from realtime.server.stream.segment_request import refine_request

TEXT = "Hello world."
LEVELS = {"oral": 2, "laugh": 0, "break": 6}


async def spoken(client, uid: str, **params) -> str:
    t = await client.speak_and_collect(uid, TEXT, params={"seed": 7, **params}, timeout=300)
    t.check_done()
    assert [s.text for s in t.segments] == [TEXT] and t.frames
    return t.segments[0].spoken


async def test_websocket_refine_changes_what_the_model_reads(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    plain = await spoken(client, "plain")
    assert plain == TEXT
    refined = await spoken(client, "r1", refine=LEVELS)
    assert refined and refined != plain
    assert await spoken(client, "r2", refine="[oral_2][laugh_0][break_6]") == refined  # seeded


@pytest.mark.parametrize(("refine", "field"), [
    (1, "params.refine"), ([], "params.refine"), ({"oral": 10}, "params.refine.oral"),
    ({"break": -1}, "params.refine.break"), ("x" * 257, "params.refine"),
])
async def test_bad_refine_values_are_bad_message_before_started(tiny_server, ws_connect, refine, field):
    client = await ws_connect(tiny_server.url)
    t = await client.speak_and_collect("bad", "Hi.", params={"refine": refine})
    assert t.started is None and isinstance(t.terminal, Error)
    assert (t.terminal.code, t.terminal.field) == ("bad_message", field)


async def test_python_client_and_cli_run_the_pass(tiny_server, tmp_path, capsys):
    async with RealtimeClient(tiny_server.url) as client:
        utt = await client.speak(TEXT, refine=RefineLevels(oral=2, laugh=0, break_=6),
                                 params=None, speed=None)
        items = [item async for item in utt]
        assert isinstance(await utt.result(), Done)
    segments = [i for i in items if isinstance(i, Segment)]
    assert len(segments) == 1 and segments[0].spoken and segments[0].spoken != TEXT
    args = parse_args([TEXT, "--url", tiny_server.url, "--refine", "oral=2,laugh=0,break=6",
                       "-o", str(tmp_path / "out.wav")])
    assert args.refine == RefineLevels(2, 0, 6)
    assert await run(args, args.text) == 0
    assert "segment 0 read as:" in capsys.readouterr().err
    assert (tmp_path / "out.wav").stat().st_size > 44


def test_cli_refine_forms():
    assert parse_args(["x", "--refine", "-o", "a.wav"]).refine is True
    assert parse_args(["x", "-o", "a.wav"]).refine is None
    assert refine_arg("[oral_2][break_6]") == "[oral_2][break_6]"
    assert refine_arg("laugh=1") == RefineLevels(laugh=1)
    with pytest.raises(Exception, match="oral=N"):
        refine_arg("mood=3")


async def speech(client, **extra) -> bytes:
    response = await client.audio.speech.create(
        model="tts-1", voice="alloy", input="Hello there.", response_format="pcm",
        extra_body={"seed": 3, **extra})
    assert response.content
    return response.content


async def test_openai_refine_extension_and_instructions(tiny_server):
    import openai
    from test_openai_controls import client_for

    async with client_for(tiny_server) as client:
        plain = await speech(client)
        levels = await speech(client, refine="[oral_2][break_6]")
        assert levels != plain
        # instructions naming the levels make the same refine prompt: the same audio
        assert await speech(client, instructions="Chatty please: [oral_2] [break_6]") == levels
        with pytest.raises(openai.BadRequestError) as bad:
            await speech(client, refine=1)
        assert (bad.value.body["code"], bad.value.body["param"]) == ("bad_message", "refine")


def test_wire_forms_become_upstream_refine_prompts():
    assert refine_request(None) is None and refine_request(False) is None
    assert refine_request(True) == RefineRequest("")
    assert refine_request(RefineLevels(break_=6, oral=2)) == RefineRequest("[oral_2][break_6]")
    assert refine_request("[laugh_1]") == RefineRequest("[laugh_1]")


async def test_refine_background_turns_the_pass_on_for_background_speaks_only(server_factory, ws_connect):
    from test_server_controls import RecordingRunner

    runner = RecordingRunner()
    client = await ws_connect(await server_factory(runner=runner, refine_background=True))
    for uid, lane, params in [("b", "background", {}), ("i", "interactive", {}),
                              ("off", "background", {"refine": False})]:
        t = await client.speak_and_collect(uid, "One sentence.", lane=lane, params=params)
        assert isinstance(t.terminal, Done)
    assert [r.refine for r in runner.requests] == [RefineRequest(""), None, None]
