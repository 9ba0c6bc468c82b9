"""ChatTTS's controls through the real server: ``params.speed`` and
``params.reference`` reach the runtime's request, the planning estimate
knows speed, and ``params.refine`` is refused by a runner without the refine
pass (the tone runner; the pass itself: test_server_refine.py)."""

from __future__ import annotations

import threading
import time

from protocol import Done, Error, Params, Speak, decode_client
from realtime.engine.api import SeedVoice, SegmentRequest
from realtime.engine.tone import ToneRunner
from realtime.server.stream.segment_request import segment_request
from realtime.server.stream.utterance import ServerUtterance
from realtime.speech.script import estimate_tokens
from realtime.speech.speed import duration_factor, level_for_tempo, tempo


class RecordingRunner(ToneRunner):
    """A tone runner that keeps every request it prepares."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[SegmentRequest] = []
        self._lock = threading.Lock()

    def prepare(self, request):
        with self._lock:
            self.requests.append(request)
        return super().prepare(request)


async def test_speed_and_reference_reach_every_segment_request(server_factory, ws_connect):
    runner = RecordingRunner()
    client = await ws_connect(await server_factory(runner=runner))
    t = await client.speak_and_collect("slow", "One sentence. And another one.",
                                       params={"speed": 2, "reference": "first"})
    assert isinstance(t.terminal, Done) and t.terminal.segments == 2
    assert [(r.speed, r.reference) for r in runner.requests] == [(2, "first")] * 2
    runner.requests.clear()
    t = await client.speak_and_collect("plain", "Defaults apply here.")
    assert isinstance(t.terminal, Done)
    assert [(r.speed, r.reference) for r in runner.requests] == [(5, "none")]
    # The client's frames reach the runtime: what the listener holds counts whole frames.
    assert runner.requests[0].frame_s == 0.1
    runner.requests.clear()
    t = await client.speak_and_collect("framed", "Quarter-second frames.", frame_ms=250)
    assert isinstance(t.terminal, Done) and [r.frame_s for r in runner.requests] == [0.25]


async def test_refine_is_refused_as_unsupported_before_started(server_factory, ws_connect):
    client = await ws_connect(await server_factory())
    for n, refine in enumerate([True, {"oral": 2}, "[oral_2][laugh_0][break_6]"]):
        t = await client.speak_and_collect(f"r{n}", "Make it chatty.", params={"refine": refine})
        assert t.started is None and isinstance(t.terminal, Error)
        assert (t.terminal.code, t.terminal.field) == ("unsupported", "params.refine")
        assert "not available on this server" in t.terminal.message
    t = await client.speak_and_collect("plain", "No refine pass.", params={"refine": False})
    assert isinstance(t.terminal, Done)


async def test_an_out_of_range_speed_is_bad_message(server_factory, ws_connect):
    client = await ws_connect(await server_factory())
    t = await client.speak_and_collect("fast", "Too fast.", params={"speed": 10})
    assert isinstance(t.terminal, Error)
    assert (t.terminal.code, t.terminal.field) == ("bad_message", "params.speed")


def test_segment_request_defaults_and_overrides():
    speak = decode_client('{"type":"speak","id":"u","text":"x","voice":"seed:3",'
                          '"chunking":"token","params":{"speed":0,"top_k":7}}')
    assert isinstance(speak, Speak)
    request = segment_request(speak)
    assert (request.speed, request.reference, request.voice, request.streaming) == \
        (0, "none", SeedVoice(3), True)
    assert request.params.top_k == 7 and request.params.min_new_tokens == 1
    assert segment_request(Speak("u", "x")).speed == 5
    # Opus frames are whole 20 ms packets: 30 ms asked is 40 ms sent.
    assert segment_request(Speak("u", "x", format="opus", frame_ms=30)).frame_s == 0.04
    assert segment_request(Speak("u", "x", format="pcm_f32le", frame_ms=30)).frame_s == 0.03


def test_slower_speech_is_planned_as_more_codes():
    text = "A sentence of ordinary length, spoken at every level."
    by_level = [estimate_tokens(text, level) for level in range(10)]
    assert by_level == sorted(by_level, reverse=True) and len(set(by_level)) == 10
    assert by_level[5] == estimate_tokens(text)
    # Level 0 is planned at twice the codes of level 5 (1.15 ** 5 = 2.01).
    assert abs(by_level[0] / by_level[5] - duration_factor(0)) < 0.02


def test_the_tempo_ladder_is_monotonic_with_level_5_at_one():
    assert tempo(5) == 1.0 and duration_factor(5) == 1.0
    assert all(tempo(n) < tempo(n + 1) for n in range(9))
    assert level_for_tempo(1.0) == 5


def _planned_codes(speed: int | None) -> list[int]:
    """The estimates a speak's segments are submitted with (a fake link)."""
    from test_reference import _Link
    link = _Link()
    speak = Speak("u", "One sentence here. And a second one.", params=Params(speed=speed))
    utterance = ServerUtterance(speak, 1, link, link, time.monotonic(),  # type: ignore[arg-type]
                                default_deadline_ms=10_000, max_text_chars=1000)
    utterance.begin()
    return [w.est_tokens for w in link.works]


def test_the_utterance_submits_segments_with_the_speed_aware_estimate():
    default, slow, fast = _planned_codes(None), _planned_codes(0), _planned_codes(9)
    assert default == _planned_codes(5) and len(default) == 2
    assert all(s > d > f for s, d, f in zip(slow, default, fast, strict=True))
