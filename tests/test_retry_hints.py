"""Both fronts give the same retry hint for the same quota state: a WebSocket
``error``'s ``retry_after_ms`` and the speech endpoint's ``Retry-After``
(real sockets, tone runner)."""

from __future__ import annotations

import json
import math

from raw_http import raw_post

from protocol import Error, Started
from realtime.engine.tone import ToneRunner
from realtime.server.retry import UNKNOWN_END_S

TOKEN = "retry-hint-token-0123456789"
TEXT = "Fifty characters of text, spoken and then refused."  # 50 characters


def speech(text: str) -> bytes:
    return json.dumps({"model": "tts-1", "voice": "alice", "input": text,
                       "response_format": "pcm"}).encode()


async def test_a_text_rate_refusal_says_the_same_wait_on_both_fronts(server_factory, ws_connect):
    # One character a second per token; the connections themselves are unlimited.
    server = await server_factory(auth_tokens=(TOKEN,), text_chars_per_minute=0,
                                  token_text_chars_per_minute=60)
    client = await ws_connect(server, token=TOKEN)
    (await client.speak_and_collect("a", TEXT)).check_done()
    refused = (await client.speak_and_collect("b", TEXT)).terminal
    assert isinstance(refused, Error) and refused.code == "overloaded"
    # The bucket held 10 + what refilled of the 50: about 40 s to go.
    assert 30_000 <= refused.retry_after_ms <= 40_000
    status, headers, payload = await raw_post(server.port, speech(TEXT),
                                              {"Authorization": f"Bearer {TOKEN}"})
    assert status == 429 and json.loads(payload)["error"]["code"] == "overloaded"
    # The same bucket, read a moment later: the same whole second or one less.
    wait_s = math.ceil(refused.retry_after_ms / 1000)
    assert wait_s - 1 <= int(headers["retry-after"]) <= wait_s


async def test_a_token_at_its_active_limit_says_the_same_wait_on_both_fronts(server_factory,
                                                                             ws_connect):
    server = await server_factory(runner=ToneRunner(step_seconds=0.01), auth_tokens=(TOKEN,),
                                  token_max_active=1)
    busy = await ws_connect(server, token=TOKEN)
    await busy.send({"type": "speak", "id": "long", "text": "A long sentence. " * 20})
    await busy.next_message(Started)
    other = await ws_connect(server, token=TOKEN)  # holds no utterance of its own
    refused = (await other.speak_and_collect("b", "Refused.")).terminal
    assert isinstance(refused, Error) and refused.code == "too_many_active"
    assert refused.retry_after_ms == UNKNOWN_END_S * 1000
    status, headers, payload = await raw_post(server.port, speech("Refused."),
                                              {"Authorization": f"Bearer {TOKEN}"})
    assert status == 429 and json.loads(payload)["error"]["code"] == "too_many_active"
    assert int(headers["retry-after"]) == math.ceil(refused.retry_after_ms / 1000)
