"""Speed in the clients: `RealtimeClient.speak(speed=)` and `say --speed` put
ChatTTS's level into `speak.params` (against the scripted peer of
test_clients_library)."""

from __future__ import annotations

import pytest
from test_clients_library import Peer, speak_two_segments

from clients import RealtimeClient
from clients.say import parse_args, run
from protocol import Params


async def test_speak_speed_goes_into_params_beside_the_others():
    async with Peer(speak_two_segments) as peer, RealtimeClient(peer.url) as client:
        await (await client.speak("One. Two.", speed=2, params=Params(seed=1))).result()
        await (await client.speak("One. Two.", params=Params(speed=7))).result()
        await (await client.speak("One. Two.")).result()
    sent = [m for m in peer.received if m["type"] == "speak"]
    assert sent[0]["params"] == {"seed": 1, "speed": 2}
    assert sent[1]["params"] == {"speed": 7}
    assert "params" not in sent[2]  # the server's default, 5


async def test_say_speed_reaches_the_wire(tmp_path):
    async with Peer(speak_two_segments) as peer:
        args = parse_args(["One. Two.", "--url", peer.url, "--speed", "8", "-q",
                           "-o", str(tmp_path / "out.wav")])
        assert await run(args, args.text) == 0
    assert [m["params"] for m in peer.received if m["type"] == "speak"] == [{"speed": 8}]


@pytest.mark.parametrize("speed", ["10", "-1", "fast"])
def test_say_refuses_a_speed_outside_the_levels(speed, capsys):
    with pytest.raises(SystemExit) as caught:
        parse_args(["hi", "--speed", speed])
    assert caught.value.code == 2 and "--speed" in capsys.readouterr().err
