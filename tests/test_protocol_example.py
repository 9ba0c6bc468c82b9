"""docs/protocol.md's complete session (section 11), replayed against a real
server: the tiny server (the real runtime, the real normalizer, tiny random
weights). Each ``C:`` line is sent as written; each ``S:`` message must come
next, with the same fields and the same values, except the numbers that
depend on the audio (``audio_ms``, ``offset_ms``, ``timing``), the model the
server reports, a message shown ending in "..." (checked up to there) and
voice names uploads added. ``[binary]`` lines stand for the frames that
arrive there; every frame must fit its utterance (stream, seq, segment)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

DOC = Path(__file__).resolve().parents[1] / "docs" / "protocol.md"
_AUDIO_NUMBERS = frozenset({"audio_ms", "offset_ms", "timing"})
_FRAME_BYTES = 4800  # 100 ms of 24 kHz pcm_s16le


def session_lines() -> list[str]:
    """The ``C:``/``S:`` lines of section 11's code block, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## 11. A complete session"):text.index("## 12.")]
    block = re.search(r"```\n(.*?)```", section, re.DOTALL)
    assert block is not None, "section 11 has no code block"
    return [line for line in block.group(1).splitlines() if line.startswith(("C: ", "S: "))]


def _same(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (where, expected, actual)
        for key, value in expected.items():
            if key in _AUDIO_NUMBERS:
                _numbers_alike(value, actual[key], f"{where}.{key}")
            elif key == "model":
                assert set(actual[key]) == set(value), (where, actual[key])
            elif key == "voices":
                assert actual[key][:len(value)] == value, (where, actual[key])  # uploads may add
            else:
                _same(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, str) and expected.endswith("..."):
        assert isinstance(actual, str) and actual.startswith(expected[:-3]), (where, actual)
    else:
        assert actual == expected and type(actual) is type(expected), (where, expected, actual)


def _numbers_alike(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (where, actual)
        for key, value in expected.items():
            _numbers_alike(value, actual[key], f"{where}.{key}")
    else:
        assert isinstance(actual, int | float) and not isinstance(actual, bool), (where, actual)


class _Frames:
    """The binary frames seen so far, checked against the utterances' rules."""

    def __init__(self) -> None:
        self.next_seq: dict[int, int] = {}
        self.last: dict[int, tuple[int, int]] = {}  # stream -> (flags, segment) of its last frame

    def take(self, frame: bytes, streams: dict[int, str]) -> None:
        version, flags, segment, stream, seq = struct.unpack_from("<BBHII", frame)
        payload = len(frame) - 12
        assert version == 1 and stream in streams, (version, stream)
        assert seq == self.next_seq.get(stream, 0), (stream, seq)
        assert 0 < payload <= _FRAME_BYTES and payload % 2 == 0, payload
        self.next_seq[stream] = seq + 1
        self.last[stream] = (flags, segment)


async def test_the_documented_session_is_what_the_server_says(tiny_server):
    lines = session_lines()
    assert lines[0].startswith("C: GET /v1/stream") and lines[1].startswith("S: HTTP/1.1 101")
    streams: dict[int, str] = {}
    frames = _Frames()
    async with connect(tiny_server.url, additional_headers={"Authorization": "Bearer s3cret"},
                       max_size=None) as ws:
        assert ws.response is not None and ws.response.status_code == 101
        assert ws.response.headers["X-Request-Id"].startswith("req-")
        for line in lines[2:]:
            side, said = line[:2], line[3:]
            if side == "C:":
                await ws.send(said)
                continue
            if said.startswith("[binary]"):
                continue  # the frames are read on the way to the next message
            expected = json.loads(said)
            while isinstance(received := await ws.recv(), bytes):
                frames.take(received, streams)
            actual = json.loads(received)
            _same(expected, actual, expected["type"])
            if actual["type"] == "started":
                streams[actual["stream"]] = actual["id"]
            elif actual["type"] == "segment":
                stream = next(s for s, i in streams.items() if i == actual["id"])
                flags, segment = frames.last[stream]
                assert flags & 1 and segment == actual["index"], (flags, segment, actual)
            elif actual["type"] == "done":
                stream = next(s for s, i in streams.items() if i == actual["id"])
                assert frames.last[stream][0] & 2  # the input was final: the last frame says so
    assert streams == {1: "greet-1", 2: "story"}


def test_the_session_shows_every_kind_of_line():
    kinds = {json.loads(line[3:])["type"] for line in session_lines()
             if line.startswith("S: {")}
    assert kinds == {"hello", "started", "segment", "done", "cancelled", "error"}


async def test_a_text_frame_of_invalid_utf8_closes_with_1007(tiny_server):
    async with connect(tiny_server.url) as ws:
        await ws.recv()  # hello
        await ws.send(b'{"type":"ping"}\xff', text=True)
        try:
            while True:
                await ws.recv()
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1007


async def test_an_embedding_that_does_not_decode_is_unsupported_before_started(tiny_server):
    async with connect(tiny_server.url) as ws:
        await ws.recv()  # hello
        await ws.send(json.dumps({"type": "speak", "id": "v", "text": "Hi.", "voice": "一" * 16}))
        error = json.loads(await ws.recv())
        got = (error["type"], error["id"], error["code"], error["field"])
        assert got == ("error", "v", "unsupported", "voice")
