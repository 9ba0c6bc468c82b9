"""The packed vocoder call and its per-step bound (realtime/engine/vocoder/batch.py).

Measured (tiny random models of the real depth, seed 0): a packed window
differs from the same window rendered alone by at most 1.1e-7 of a peak near
0.1 (float rounding: different lengths, our ISTFT's own overlap-add);
asserted: 1e-6. With gaps of one step instead of three, neighbouring windows
leak into each other by more than 1e-4, so the bound means something.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import TEXTS, Driver, request, tiny_runner

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from bench.vocoder import hidden_dim, random_models
from realtime.engine.api import DeviceFailure
from realtime.engine.vocoder import batch as vocoder_batch
from realtime.engine.vocoder.batch import (
    Due,
    gap_steps,
    masked_istft,
    render_packed,
    take_within,
    vocode_step,
)
from realtime.engine.vocoder.stream import StreamingVocoder

PACKED_ATOL = 1e-6
LENGTHS = (1, 2, 5, 60, 123, 7, 60)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def vocoder():
    return StreamingVocoder(*random_models(tiny=True, seed=0))


def windows(vocoder, lengths, seed=3) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(t, hidden_dim(vocoder.decoder), generator=gen) for t in lengths]


def max_diff(a: list[np.ndarray], b: list[np.ndarray]) -> float:
    assert [x.shape for x in a] == [x.shape for x in b]
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


def test_packed_windows_equal_lone_renders(vocoder):
    hs = windows(vocoder, LENGTHS)
    alone = [vocoder.render(h) for h in hs]
    calls = vocoder.calls
    packed = render_packed(vocoder, hs)
    assert vocoder.calls == calls + 1
    assert all(p.dtype == np.float32 for p in packed)
    assert max_diff(packed, alone) <= PACKED_ATOL
    assert min(float(np.abs(a).max()) for a in alone) > 1e-2  # real signal, not silence


def test_gaps_narrower_than_a_layers_reach_leak_between_windows(vocoder, monkeypatch):
    assert gap_steps(vocoder) == 3  # kernel 7, dilation 2: 6 frames
    hs = windows(vocoder, LENGTHS)
    alone = [vocoder.render(h) for h in hs]
    monkeypatch.setattr(vocoder_batch, "gap_steps", lambda v: 1)
    assert max_diff(render_packed(vocoder, hs), alone) > 1e-4


def test_masked_istft_of_whole_frames_is_torch_istft(vocoder):
    istft = vocoder.vocos.head.istft
    gen = torch.Generator().manual_seed(5)
    spec = torch.complex(torch.randn(1, 513, 40, generator=gen), torch.randn(1, 513, 40, generator=gen))
    ifft = torch.fft.irfft(spec.transpose(1, 2), istft.n_fft, dim=2) * istft.window
    ours = masked_istft(ifft, torch.ones(40), istft)
    ref = torch.istft(spec, istft.n_fft, istft.hop_length, istft.win_length, istft.window, center=True)
    assert ours.shape == ref[0].shape
    assert (ours - ref[0]).abs().max().item() <= 1e-6 * ref.abs().max().item()


def test_cpu_pieces_of_the_spectrum_change_nothing(vocoder, monkeypatch):
    hs = windows(vocoder, LENGTHS)
    whole = render_packed(vocoder, hs)
    monkeypatch.setattr(vocoder_batch, "CPU_PIECE_FRAMES", 7)
    assert max_diff(render_packed(vocoder, hs), whole) == 0.0


def test_take_within_keeps_order_and_always_takes_one():
    assert take_within([], 10) == 0
    assert take_within([30], 10) == 1  # one unit larger than the budget still goes
    assert take_within([4, 5, 2], 10) == 2  # stops at the first that does not fit
    assert take_within([4, 5, 1], 10) == 3


def _push_all(vocoder, hidden, starts, every):
    """Per step: stream i (started at starts[i]) appends its next steps every
    ``every`` steps. Returns, per step, the list of (stream index, stream) in use."""
    streams = [vocoder.start() for _ in hidden]
    steps = max(s + h.shape[0] for s, h in zip(starts, hidden)) + every
    for now in range(0, steps + 1, every):
        live = []
        for i, (s, h) in enumerate(zip(starts, hidden)):
            if s <= now and not streams[i]._finished:
                a, b = min(max(0, now - every - s), h.shape[0]), min(now - s, h.shape[0])
                if b > a:
                    streams[i].append(h[a:b])
                live.append((i, streams[i], b == h.shape[0]))
        yield live


def test_streams_rendered_together_equal_streams_rendered_alone(vocoder):
    lengths = [90, 140, 60, 200, 33, 120, 75, 160]
    starts = [0, 3, 7, 12, 20, 21, 40, 55]
    hidden = windows(vocoder, lengths, seed=7)
    results = {}
    for together in (False, True):
        chunks = {i: [] for i in range(len(lengths))}
        calls = []
        for live in _push_all(vocoder, hidden, starts, every=4):
            before = vocoder.calls
            if together:
                due = [Due(i, s.windows(final=end), s, end) for i, s, end in live]
                done = vocode_step(vocoder, due, 10_000, lambda exc: False)
                assert not done.failed
                for i, audio in done.audio.items():
                    chunks[i].append(audio)
            else:
                for i, s, end in live:
                    w = s.windows(final=end)
                    out = [s.complete(x, vocoder.render(x.hidden)) for x in w]
                    if out:
                        chunks[i].append(np.concatenate(out))
                    elif end:
                        s.close()
            calls.append(vocoder.calls - before)
        results[together] = chunks
        if together:
            assert max(calls) == 1 and sum(calls) > 20  # one call per step, most steps
        else:
            assert max(calls) >= 3
    for i in range(len(lengths)):
        alone = [c for c in results[False][i] if len(c)]
        both = [c for c in results[True][i] if len(c)]
        assert len(alone) >= 3
        assert max_diff(both, alone) <= PACKED_ATOL, i  # same chunks, same samples


def _one_shot_burst(runner, budget):
    """Six one-shot jobs that finish in the same step beside one stream."""
    runner.audio.steps_per_call = budget
    d = Driver(runner)
    for i in range(6):
        d.add(i, request(TEXTS[i % 4], seed=i, min_new_tokens=20, max_new_tokens=20))
    d.add(9, request(TEXTS[0], seed=9, min_new_tokens=60, max_new_tokens=60, streaming=True))
    per_step = []
    while d.live or d.pending:
        before = runner.vocoder.steps_rendered
        out = d.step()
        per_step.append((runner.vocoder.steps_rendered - before, sorted(out.finished), out))
    return d, per_step


def test_a_burst_of_finishing_one_shot_jobs_is_spread_over_steps():
    runner = tiny_runner(max_slots=8, batch_sizes=(1, 2, 4, 8), kv_buckets=(128,))
    d, per_step = _one_shot_burst(runner, budget=50)  # two 20-step jobs (+ gaps) per call
    finishing = [(n, f) for n, f, _ in per_step if set(f) & set(range(6))]
    assert len(finishing) >= 3  # spread: not all six in one step
    assert all(n <= 50 for n, _ in finishing)
    assert sorted(d.finished) == [0, 1, 2, 3, 4, 5, 9]
    for i in range(6):
        assert len(d.audio[i]) == 1  # one piece, in the step that reports it finished
        ref = runner.vocoder.one_shot(d.hidden[i])
        assert d.audio[i][0].shape == ref.shape
        assert np.abs(d.audio[i][0] - ref).max() <= PACKED_ATOL
        assert d.tokens[i] == 20
    # The stream kept its audio coming while the burst drained.
    stream_steps = [k for k, (_, _, out) in enumerate(per_step) if len(out.audio.get(9, ()))]
    assert len(stream_steps) >= 3


def test_a_job_released_while_its_audio_waits_is_dropped():
    runner = tiny_runner(max_slots=8, batch_sizes=(1, 2, 4, 8), kv_buckets=(128,))
    runner.audio.steps_per_call = 1  # one job per step
    d = Driver(runner)
    for i in range(3):
        d.add(i, request(TEXTS[i], seed=i, min_new_tokens=8, max_new_tokens=8))
    for _ in range(8):
        out = d.step()
    assert len(out.finished) == 1 and len(runner.jobs) == 2
    waiting = [j for j in (0, 1, 2) if j not in out.finished]
    out = d.step(release=(waiting[0],))
    assert out.finished == (waiting[1],) and waiting[0] not in out.audio
    assert not runner.jobs and not runner.audio.awaiting


def test_a_lost_device_in_the_packed_call_is_a_device_failure(monkeypatch):
    runner = tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(128,))
    d = Driver(runner)
    for i in range(2):
        d.add(i, request(TEXTS[i], seed=i, min_new_tokens=5, max_new_tokens=5))
    for _ in range(4):
        d.step()

    def broken(vocoder, hiddens):
        raise torch.AcceleratorError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(vocoder_batch, "_render_packed", broken)
    with pytest.raises(DeviceFailure, match="illegal memory access"):
        runner.execute(d.plan())


def test_packed_windows_in_bf16_equal_lone_renders():
    # The GPU's precision: the models in bf16, the spectrum and ISTFT in fp32
    # (StreamingVocoder's low-precision path); measured 7e-9 here.
    decoder, vocos = random_models(tiny=True, seed=0)
    vocoder = StreamingVocoder(decoder.to(torch.bfloat16), vocos.to(torch.bfloat16))
    hs = windows(vocoder, LENGTHS)
    assert max_diff(render_packed(vocoder, hs), [vocoder.render(h) for h in hs]) <= PACKED_ATOL
