"""End to end over a real socket: what the model read, and what it could not.

The tiny server (``tiny_server``: the real runtime and the real normalizer on
tiny random weights) reports ``segment.spoken`` and ``done.unspoken``; the
OpenAI endpoint refuses an input with nothing speakable. The tone server
reads text as written, so only symbols are unspeakable there.
"""

from __future__ import annotations

import json

from raw_http import raw_post

from realtime.server.stream.intake import read_sentences
from realtime.speech.sentences import split_sentences

SEED = {"seed": 7}


async def test_segments_say_what_the_model_read_and_done_what_it_could_not(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    text = "It costs $5 안녕. Привет мир. こんにちは。"
    t = await client.speak_and_collect("s", text, params=SEED, timeout=240)
    done = t.check_done()
    assert [s.text for s in t.segments] == ["It costs $5 안녕."]
    assert t.segments[0].spoken == "It costs five dollars ."
    assert done.unspoken == ("안녕", "Привет мир.", "こんにちは。")  # a run of a spoken sentence too
    assert t.frames[-1].header.utterance_end


async def test_list_items_are_read_with_their_markers(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    text = "1. Open the app.\n2. Tap start."
    t = await client.speak_and_collect("l", text, params=SEED, timeout=240)
    t.check_done()
    assert [s.text for s in t.segments] == ["1. Open the app.", "2. Tap start."]
    first, second = (s.spoken for s in t.segments)
    assert first.startswith("one") and first.endswith("Open the app.")
    assert second.startswith("two") and second.endswith("Tap start.")
    # the same path as `python -m realtime normalize`
    from realtime.engine.text.spoken import TextNormalizer

    readings, _ = read_sentences(TextNormalizer(), split_sentences(text), None)
    assert [r.spoken.text for r in readings] == [s.spoken for s in t.segments]


async def test_a_whole_text_of_unsupported_script_ends_with_done_listing_it(tiny_server, ws_connect):
    client = await ws_connect(tiny_server.url)
    t = await client.speak_and_collect("u", "Привет мир. カタカナ。", timeout=120)
    done = t.check_done()
    assert done.segments == 0 and not t.frames
    assert done.unspoken == ("Привет мир.", "カタカナ。")


async def test_openai_input_with_nothing_speakable_is_a_400_naming_why(tiny_server):
    body = json.dumps({"model": "tts-1", "voice": "default", "input": "Привет мир."}).encode()
    status, headers, payload = await raw_post(tiny_server.port, body)
    assert status == 400 and headers["content-type"] == "application/json"
    error = json.loads(payload)["error"]
    assert error["code"] == "unsupported" and error["param"] == "input"
    assert "nothing to speak" in error["message"] and "Привет" in error["message"]


async def test_the_tone_server_reads_text_as_written(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    t = await client.speak_and_collect("t", "Hello $5 world. ... !!!")
    done = t.check_done()
    assert [(s.text, s.spoken) for s in t.segments] == [("Hello $5 world.", "Hello $5 world.")]
    assert done.unspoken == ("...", "!!!")
    body = json.dumps({"model": "tts-1", "voice": "alice", "input": "... ?!"}).encode()
    status, _, payload = await raw_post(tone_server.port, body)
    assert status == 400 and json.loads(payload)["error"]["param"] == "input"
