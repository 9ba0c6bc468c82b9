"""A stream's chunks against its listener's playback (realtime/engine/vocoder/listener.py).

The model makes codes at a steady pace on a fake clock and each render costs
clock time per window step, as on a CPU; a jitter-free player started at the
first chunk (``clients.playback``, what the latency probe and the benches
score) counts the underruns. The schedule's growth (1.5 on a CPU) needs a
model 1.5x real time at the start of a segment; admission takes streams down
to 1.3x, so between the two a chunk must go out early, and below real time
early chunks must not eat the model's time.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from clients.playback import simulate_playback
from realtime.engine.api import SAMPLE_RATE
from realtime.engine.vocoder.listener import AFFORDABLE, CODE_S, WAIT_MARGIN, Listener
from realtime.engine.vocoder.stream import CPU_CHUNK_GROWTH, SAMPLES_PER_STEP, StreamingVocoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")

PUSH = 4  # codes a push, as the runner's audio stage pushes them
RENDER_S = 0.4e-3  # clock seconds a window step (two CPU cores, int8 vocoder: 0.34-0.69 ms)


class FakeClock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def paced(models, hidden: torch.Tensor, speed: float, render_s: float = RENDER_S,
          frame_s: float = 0.0, stalls: dict[int, float] | None = None):
    """Stream ``hidden`` from a model ``speed`` times real time, ``PUSH`` codes
    a push; each render takes ``render_s`` a window step; the player gets
    whole frames of ``frame_s`` (0: each chunk as it comes), as the stream is
    told; ``stalls``: {code index: seconds} the push ending there comes that
    much later (another stream's prefill). Returns the chunk sizes, the
    player's stats and the audio."""
    clock = FakeClock()
    vocoder = StreamingVocoder(*models, chunk_growth=CPU_CHUNK_GROWTH, clock=clock)
    render = vocoder.render

    def slow_render(h: torch.Tensor) -> np.ndarray:
        clock.now += render_s * h.shape[0]
        return render(h)

    vocoder.render = slow_render  # type: ignore[method-assign]
    stream = vocoder.start(frame_s=frame_s)
    frame = round(frame_s * SAMPLE_RATE)
    arrivals, sizes, outs, held = [], [], [], 0
    for i in range(0, hidden.shape[0] + PUSH, PUSH):
        clock.now += PUSH * CODE_S / speed + (stalls or {}).get(i, 0.0)
        out = stream.push(hidden[i:i + PUSH]) if i < hidden.shape[0] else stream.finish()
        held += len(out)
        sent = held if not frame or i >= hidden.shape[0] else held - held % frame
        if sent:
            arrivals.append((clock.now, sent / SAMPLE_RATE))
            held -= sent
        if len(out) and i < hidden.shape[0]:
            sizes.append(round(len(out) / SAMPLES_PER_STEP))
        outs.append(out)
    return sizes, simulate_playback(arrivals), np.concatenate(outs), vocoder


def schedule_alone(models, hidden, speed, monkeypatch):
    """``paced`` with chunks on the growth schedule only (nothing hurries)."""
    with monkeypatch.context() as m:
        m.setattr(Listener, "hurries", lambda self, codes, steps: False)
        return paced(models, hidden, speed)


def test_a_model_under_the_schedules_growth_sends_smaller_chunks_and_never_runs_dry(
        tiny_vocoder_models, vocoder_hidden, monkeypatch):
    # 1.4x real time: pushed 4 codes at a time, the schedule's chunks go
    # 4, 8, 12, 16: the second comes after the first has played out.
    sizes, stats, audio, vocoder = paced(tiny_vocoder_models, vocoder_hidden, speed=1.4)
    assert stats.underruns == 0, (sizes, stats)
    assert sizes[:3] == [4, 4, 4]
    alone = schedule_alone(tiny_vocoder_models, vocoder_hidden, 1.4, monkeypatch)
    assert alone[0][:4] == [4, 8, 12, 16] and alone[1].underruns > 0
    # The same audio to the vocoder's fidelity bound (tests/test_runtime_vocoder.py).
    reference = vocoder.one_shot(vocoder_hidden)
    assert len(audio) == len(reference)
    noise = float(np.sum((audio - reference) ** 2))
    assert 10 * np.log10(float(np.sum(reference ** 2)) / noise) > 45.0


def test_at_admissions_lowest_speed_the_listener_barely_waits(
        tiny_vocoder_models, vocoder_hidden, monkeypatch):
    # 1.3x: the schedule alone stalls 7 times, ~0.5 s in all; with early
    # chunks one stall of a few ms remains, while chunks move from 4 codes
    # (whose windows re-render their left context) to 8.
    _, stats, _, vocoder = paced(tiny_vocoder_models, vocoder_hidden, speed=1.3)
    _, alone, _, scheduled = schedule_alone(tiny_vocoder_models, vocoder_hidden, 1.3, monkeypatch)
    assert alone.underruns >= 5 and alone.stall_ms > 300
    assert stats.underruns <= 1 and stats.stall_ms < 0.05 * alone.stall_ms
    assert vocoder.steps_rendered < 2.5 * scheduled.steps_rendered


def test_a_fast_model_reaches_the_largest_chunks_as_soon(tiny_vocoder_models, vocoder_hidden, monkeypatch):
    sizes, stats, _, vocoder = paced(tiny_vocoder_models, vocoder_hidden, speed=2.0)
    _, _, _, scheduled = schedule_alone(tiny_vocoder_models, vocoder_hidden, 2.0, monkeypatch)
    assert stats.underruns == 0
    assert 64 in sizes[:9] and vocoder.steps_rendered < 1.2 * scheduled.steps_rendered


def test_a_model_barely_real_time_keeps_the_schedule_rather_than_spend_itself_on_small_windows(
        tiny_vocoder_models, vocoder_hidden, monkeypatch):
    # 1.05x: a code leaves 1 ms spare, a small window's render takes 25: early
    # chunks would cost more than they save, so the schedule's chunks grow.
    sizes, stats, _, _ = paced(tiny_vocoder_models, vocoder_hidden, speed=1.05)
    alone, _, _, _ = schedule_alone(tiny_vocoder_models, vocoder_hidden, 1.05, monkeypatch)
    assert sizes == alone
    assert stats.underruns > 0  # no chunking saves a model this slow at the start


def test_with_whole_frames_the_stream_counts_what_the_client_really_holds(
        tiny_vocoder_models, vocoder_hidden):
    # 100 ms frames (the protocol's default): a 4-code chunk (85 ms) may reach
    # the client as nothing. Told the frames, the stream reckons the lead the
    # client has, and sends early only chunks that complete a frame.
    for frame_s in (0.1, 0.02):
        _, stats, audio, _ = paced(tiny_vocoder_models, vocoder_hidden, speed=1.4, frame_s=frame_s)
        assert stats.underruns == 0, (frame_s, stats)
        assert len(audio) == 300 * SAMPLES_PER_STEP - SAMPLES_PER_STEP // 2


def test_the_listener_gets_whole_frames_and_the_rest_at_the_segments_end():
    clock = FakeClock()
    listener = Listener(clock, frame_s=0.1)  # 2,400 samples a frame
    listener.heard(2048)  # 4 codes: no whole frame yet
    assert listener.play_end() is None and listener.lead() == -math.inf
    listener.heard(2048)  # 4,096 out: one frame reaches the listener, 1,696 wait
    assert listener.lead() == pytest.approx(0.1)
    clock.now += 0.05
    listener.heard(1000, last=True)  # the segment's last frame may be shorter: all of it goes
    assert listener.lead() == pytest.approx(0.1 - 0.05 + 2696 / SAMPLE_RATE)
    # An early chunk completing no frame would bring the listener nothing.
    framed = Listener(clock, frame_s=0.1)
    framed.pushed(4)
    clock.now += 4 * CODE_S / 1.5
    framed.pushed(4)
    framed.asked(10)
    framed.heard(2048)  # 2,048 out, no whole frame: the client has nothing yet,
    assert framed.lead() == -math.inf and not framed.hurries(5, 10)  # its first on the schedule
    framed.heard(352)  # one whole frame: the listener holds it, nothing waits
    clock.now += 0.09  # and has nearly played it
    assert framed.lead() == pytest.approx(0.01)
    assert not framed.hurries(4, 10)  # 2,048 samples: no frame, nothing sooner
    assert framed.hurries(5, 10)  # 2,560: a frame


def test_the_listener_hurries_only_with_its_own_measures_and_a_lead_running_low():
    clock = FakeClock()
    listener = Listener(clock)
    assert not listener.hurries(4, 20)  # nothing measured yet
    listener.pushed(4)
    clock.now += 4 * CODE_S / 1.3
    listener.pushed(4)  # a pace of 1.3x real time
    assert not listener.hurries(4, 20)  # no render measured yet
    listener.asked(20)
    clock.now += 20 * RENDER_S
    listener.heard(4 * SAMPLES_PER_STEP)  # a 20-step window, 8 ms to audio out
    pace, render = CODE_S / 1.3, RENDER_S
    wait = 4 * pace + render * (20 + 4)  # the next push and the window then
    assert listener.lead() == pytest.approx(4 * CODE_S)
    assert (WAIT_MARGIN * wait > 4 * CODE_S) and listener.hurries(4, 20)
    clock.now = listener.play_end() - WAIT_MARGIN * wait - 1e-4  # the lead just over the margin
    assert not listener.hurries(4, 20)
    clock.now += 2e-4
    assert listener.hurries(4, 20)
    # Unaffordable: a window whose render takes more than its codes' share of spare.
    clock.now = listener.play_end() - 0.01  # a lead short of any wait
    spare = 4 * (CODE_S - pace)
    assert not listener.hurries(4, int(AFFORDABLE * spare / render) + 1)
    assert listener.hurries(4, int(AFFORDABLE * spare / render) - 1)


def test_a_model_slower_than_real_time_never_hurries():
    clock = FakeClock()
    listener = Listener(clock)
    listener.pushed(4)
    clock.now += 4 * CODE_S * 1.01
    listener.pushed(4)
    listener.asked(10)
    listener.heard(SAMPLES_PER_STEP)  # rendered in no time, the lead small
    assert listener.lead() < 0.1 and not listener.hurries(4, 10)


def test_an_ask_withdrawn_is_not_timed():
    clock = FakeClock()
    listener = Listener(clock)
    listener.asked(10)
    listener.asked(None)
    clock.now += 5.0
    listener.asked(10)  # asked again later: timed from here
    clock.now += 10 * RENDER_S
    listener.heard(SAMPLES_PER_STEP)
    listener.pushed(4)
    clock.now += 4 * CODE_S / 2
    listener.pushed(4)
    # The listener has run dry; timed from the second ask, the render is
    # 0.4 ms a step (not 0.5 s), so a 10-step window is affordable.
    assert listener.hurries(4, 10)


def test_the_pace_leaves_out_the_streams_own_renders():
    # Its own renders are what an early chunk adds; the pace they would
    # inflate is the model's (and other streams'), which the spare is taken from.
    clock = FakeClock()
    listener = Listener(clock)
    listener.pushed(4)
    listener.asked(40)
    clock.now += 0.010
    listener.heard(4 * SAMPLES_PER_STEP)  # 10 ms of this stream's render
    clock.now += 0.050
    listener.pushed(4)  # 60 ms since the last push, 50 of them the model's
    listener.asked(40)
    listener.heard(4 * SAMPLES_PER_STEP)  # the lead: 8 codes, the render now 0
    clock.now = listener.play_end() - 0.001
    pace = 0.050 / 4
    # Affordable exactly as far as a 12.5 ms pace leaves spare (15 would not).
    limit = AFFORDABLE * 4 * (CODE_S - pace) / (0.010 / 40 / 2)
    assert listener.hurries(4, int(limit) - 1) and not listener.hurries(4, int(limit) + 1)


def test_a_stall_is_not_the_models_pace():
    # Another stream's prefill stalls a push by 120 ms when the lead is thin:
    # the pace stays the model's (1.3x real time), so the chunk goes early.
    clock = FakeClock()
    listener = Listener(clock)
    for _ in range(4):
        listener.pushed(4)
        clock.now += 4 * CODE_S / 1.3
    clock.now += 0.120
    listener.pushed(4)
    listener.asked(20)
    clock.now += 20 * RENDER_S
    listener.heard(4 * SAMPLES_PER_STEP)
    wait = 4 * CODE_S / 1.3 + RENDER_S * (20 + 4)
    assert listener.lead() < WAIT_MARGIN * wait and listener.hurries(4, 20)
    # A model that really slowed down is slow by the third push so.
    for _ in range(3):
        clock.now += 4 * CODE_S * 1.2
        listener.pushed(4)
    assert not listener.hurries(4, 20)


def test_after_another_streams_prefill_the_chunk_goes_early(tiny_vocoder_models, vocoder_hidden):
    # 1.4x real time with a 100 ms stall at 0.35 s of audio (its lead ~0.2 s):
    # the next chunk hurries out before the listener runs dry.
    _, stats, _, _ = paced(tiny_vocoder_models, vocoder_hidden, speed=1.4, frame_s=0.1,
                           stalls={28: 0.1})
    assert stats.underruns == 0, stats
