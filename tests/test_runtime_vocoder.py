"""Fidelity of the streaming vocoder against upstream's one-shot decode.

Tiny random ChatTTS Decoder and Vocos: every layer count and kernel is the
real one (so the receptive field is the real +-52 steps), only the channel
widths shrink. Measured bounds used below (tiny models, seed 0, 300 steps of
unit-normal hidden states, one step per push):

- default lookahead 8 / left context 51: SNR against one-shot 58 dB (bound
  asserted: 45 dB); lookahead 4: 34 dB; lookahead 16: 117 dB.
- seams: the sample-to-sample step across a chunk boundary differs from
  one-shot's step at the same place by at most 4e-4 (bound asserted: 1e-2,
  i.e. 10 % of the signal's peak of about 0.1); at the end of each crossfade
  (where the new chunk takes over alone) by at most 3e-6 (asserted: 2e-5; a
  fade ramped the wrong way gives up to 7e-4 there).
- full lookahead and left context (53): stream equals one-shot within 1.4e-7
  (asserted: 1e-6). The tiny models' field is effectively about +-16 steps
  at that level: a right or left context of 10 steps misses by > 1e-5, which
  ``test_short_context_changes_the_output`` keeps true, so 1e-6 means something.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import FrozenClock, tiny_runner

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from bench.vocoder import hidden_dim, random_models
from realtime.engine.vocoder.listener import HOLD_LEAD_S
from realtime.engine.vocoder.stream import (
    CPU_CHUNK_GROWTH,
    SAMPLES_PER_STEP,
    StreamingVocoder,
    audio_samples,
    receptive_radius_steps,
)

FULL = 53  # receptive radius + 1: windows then see all one-shot sees
FULL_ATOL = 1e-6
SNR_BOUND_DB = 45.0
SEAM_EXCESS_BOUND = 1e-2
FADE_END_EXCESS_BOUND = 2e-5


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def on_schedule(*models, **options) -> StreamingVocoder:
    """A vocoder whose chunks follow the schedule alone: its clock stands still
    (a model infinitely faster than real time), so no chunk hurries or waits on
    the machine's timing (the listener's own tests: tests/test_runtime_listener.py)."""
    return StreamingVocoder(*models, clock=FrozenClock(), **options)


@pytest.fixture(scope="module")
def models(tiny_vocoder_models):  # conftest.py's, by its short name here
    return tiny_vocoder_models


@pytest.fixture(scope="module")
def hidden(vocoder_hidden):
    return vocoder_hidden


@pytest.fixture(scope="module")
def reference(models, hidden):
    return on_schedule(*models).one_shot(hidden)


def stream(vocoder: StreamingVocoder, hidden: torch.Tensor, sizes) -> list[np.ndarray]:
    """Push ``hidden`` in pieces of ``sizes`` (cycled); the outputs, finish last."""
    s = vocoder.start()
    outs, i, k = [], 0, 0
    while i < hidden.shape[0]:
        n = sizes[k % len(sizes)]
        outs.append(s.push(hidden[i:i + n]))
        i, k = i + n, k + 1
    outs.append(s.finish())
    assert s.emitted_samples == sum(len(o) for o in outs)
    return outs


def snr_db(ref: np.ndarray, out: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - out) ** 2), 1e-30)))


# (c) one-shot equals upstream's decode path


@pytest.mark.parametrize("steps", [1, 7, 120])
def test_one_shot_equals_upstream_decode_to_wavs(models, steps):
    import ChatTTS

    decoder, vocos = models
    chat = ChatTTS.Chat()
    chat.decoder, chat.vocos, chat.device = decoder, vocos, torch.device("cpu")
    h = torch.randn(steps, hidden_dim(decoder), generator=torch.Generator().manual_seed(steps))
    upstream = chat._decode_to_wavs([h.clone()], True)  # [1, samples]
    ours = StreamingVocoder(decoder, vocos).one_shot(h)
    assert ours.dtype == np.float32
    assert ours.shape == (audio_samples(steps),) == upstream[0].shape
    np.testing.assert_allclose(ours, upstream[0], atol=1e-4, rtol=0)


def test_audio_length_is_pinned():
    assert [audio_samples(t) for t in (0, 1, 2, 10)] == [0, 256, 768, 10 * SAMPLES_PER_STEP - 256]


def test_one_shot_of_nothing_is_empty(models):
    out = on_schedule(*models).one_shot(torch.zeros(0, hidden_dim(models[0])))
    assert out.dtype == np.float32 and out.shape == (0,)


def test_perturbing_one_step_stays_inside_the_receptive_radius(models, hidden, reference):
    radius = receptive_radius_steps(*models)
    assert radius == 52
    bumped = hidden.clone()
    bumped[150] += 1.0
    diff = np.abs(on_schedule(*models).one_shot(bumped) - reference)
    changed = np.nonzero(diff > 0)[0] // SAMPLES_PER_STEP
    assert changed.size and changed.min() >= 150 - radius and changed.max() <= 150 + radius


# (d) streamed vs one-shot


@pytest.mark.parametrize("sizes", [[1], [300], [3, 17, 1, 40], "random"])
def test_full_lookahead_stream_equals_one_shot(models, hidden, reference, sizes):
    if sizes == "random":
        sizes = np.random.default_rng(5).integers(1, 30, size=50).tolist()
    vocoder = on_schedule(*models, lookahead_steps=FULL, left_context_steps=FULL)
    out = np.concatenate(stream(vocoder, hidden, sizes))
    assert out.shape == reference.shape
    np.testing.assert_allclose(out, reference, atol=FULL_ATOL, rtol=0)


@pytest.mark.parametrize("lookahead,left", [(10, FULL), (FULL, 10)])
def test_short_context_changes_the_output(models, hidden, reference, lookahead, left):
    # The full-context tolerance is tight enough to notice a missing context.
    vocoder = on_schedule(*models, lookahead_steps=lookahead, left_context_steps=left)
    out = np.concatenate(stream(vocoder, hidden, [1]))
    assert np.abs(out - reference).max() > 10 * FULL_ATOL


def test_default_lookahead_snr_and_seams(models, hidden, reference):
    outs = stream(on_schedule(*models), hidden, [1])
    out = np.concatenate(outs)
    assert out.shape == reference.shape
    assert snr_db(reference, out) > SNR_BOUND_DB
    seams = np.cumsum([len(o) for o in outs if len(o)])[:-1]
    assert len(seams) >= 4  # chunks really were emitted while pushing
    excess = np.abs((out[seams] - out[seams - 1]) - (reference[seams] - reference[seams - 1]))
    assert excess.max() < SEAM_EXCESS_BOUND


def test_seams_are_continuous_where_each_crossfade_starts_and_ends(models, hidden, reference):
    vocoder = on_schedule(*models)
    outs = stream(vocoder, hidden, [1])
    out = np.concatenate(outs)
    seams = np.cumsum([len(o) for o in outs if len(o)])[:-1]
    fade_ends = seams + vocoder.crossfade_samples
    assert len(seams) >= 4 and fade_ends[-1] < len(out)

    def excess(at):
        return np.abs((out[at] - out[at - 1]) - (reference[at] - reference[at - 1]))

    assert excess(seams).max() < SEAM_EXCESS_BOUND
    assert excess(fade_ends).max() < FADE_END_EXCESS_BOUND


class _ConstantRenders(StreamingVocoder):
    """Each render returns a constant: 1.0 for the first call, 2.0 for the
    second, ... so every crossfade's samples show its ramp exactly."""

    def render(self, hidden):
        self.calls += 1
        return np.full(audio_samples(hidden.shape[0]), float(self.calls), dtype=np.float32)


def test_crossfade_ramps_from_the_previous_estimate_to_the_new_one():
    n = 64
    vocoder = _ConstantRenders(torch.nn.Linear(1, 1), torch.nn.Linear(1, 1), lookahead_steps=2,
                               crossfade_samples=n, min_chunk_steps=2, max_chunk_steps=4)
    chunks = [c for c in stream(vocoder, torch.zeros(40, 4), [1]) if len(c)]
    assert len(chunks) >= 4
    np.testing.assert_array_equal(chunks[0], 1.0)
    ramp = np.arange(1, n + 1, dtype=np.float32) / (n + 1)
    for k, chunk in enumerate(chunks[1:], start=2):
        # Starts just after the previous chunk's value, ends just before its own.
        np.testing.assert_allclose(chunk[:n], (k - 1) + ramp, rtol=0, atol=1e-6)
        np.testing.assert_array_equal(chunk[n:], float(k))


def test_shorter_lookahead_costs_fidelity(models, hidden, reference):
    # The SNR bound above is meaningful: less right context measurably hurts.
    short = np.concatenate(stream(on_schedule(*models, lookahead_steps=2), hidden, [1]))
    default = np.concatenate(stream(on_schedule(*models), hidden, [1]))
    assert snr_db(reference, short) < snr_db(reference, default)


def test_crossfade_only_touches_the_samples_after_each_seam(models, hidden):
    def run(crossfade):
        vocoder = on_schedule(*models, lookahead_steps=2, crossfade_samples=crossfade)
        return stream(vocoder, hidden, [1])

    plain, faded = run(0), run(256)
    assert [len(o) for o in plain] == [len(o) for o in faded]
    seams = np.cumsum([len(o) for o in plain if len(o)])[:-1]
    plain, faded = np.concatenate(plain), np.concatenate(faded)
    inside = np.zeros(len(plain), dtype=bool)
    for s in seams:
        inside[s:s + 256] = True
    np.testing.assert_array_equal(plain[~inside], faded[~inside])
    assert np.abs(plain[inside] - faded[inside]).max() > 0


@pytest.mark.parametrize("steps", [1, 2, 5, 9, 13, 70])
@pytest.mark.parametrize("lookahead,crossfade", [(0, 0), (1, 700), (8, 256), (20, 512)])
def test_stream_length_always_equals_one_shot(models, hidden, steps, lookahead, crossfade):
    vocoder = on_schedule(*models, lookahead_steps=lookahead, crossfade_samples=crossfade,
                               min_chunk_steps=1, max_chunk_steps=4)
    outs = stream(vocoder, hidden[:steps], [1, 2])
    assert all(o.dtype == np.float32 and o.ndim == 1 for o in outs)
    assert sum(len(o) for o in outs) == audio_samples(steps)


def test_tiny_utterance_shorter_than_lookahead(models, hidden):
    h = hidden[:3]
    vocoder = on_schedule(*models, lookahead_steps=8)
    s = vocoder.start()
    assert all(len(s.push(h[i:i + 1])) == 0 for i in range(3))
    out = s.finish()
    np.testing.assert_allclose(out, vocoder.one_shot(h), atol=1e-6, rtol=0)


def test_cost_is_linear_in_length(models, hidden):
    def rendered(steps):
        vocoder = on_schedule(*models)
        h = hidden.repeat(4, 1)[:steps]
        stream(vocoder, h, [1])
        return vocoder.steps_rendered, vocoder.calls

    short, short_calls = rendered(400)
    long, long_calls = rendered(800)
    # Upstream's re-decode every 24 steps would render ~ steps^2 / 48.
    assert long <= 2.2 * short
    assert long <= 2.5 * 800
    assert long_calls <= 800 // 64 + 10


@pytest.mark.parametrize("growth, lookahead", [(2.0, 8), (1.5, 8), (1.5, 0), (3.0, 2)])
def test_a_segments_window_steps_are_what_its_stream_renders(models, hidden, growth, lookahead):
    # The cost model prices a streamed segment by this count (step_cost):
    # a schedule that drifted from the stream's would misprice every stream.
    for steps in (1, 5, 12, 13, 50, 141, 300):
        vocoder = on_schedule(*models, chunk_growth=growth, lookahead_steps=lookahead)
        stream(vocoder, hidden[:steps], [1])
        assert vocoder.steps_rendered == vocoder.segment_window_steps(steps), (steps, growth, lookahead)
    assert on_schedule(*models).segment_window_steps(0) == 0


def test_finish_on_empty_stream(models):
    s = on_schedule(*models).start()
    out = s.finish()
    assert out.dtype == np.float32 and out.shape == (0,)
    assert s.emitted_samples == 0
    again = s.finish()
    assert again.dtype == np.float32 and again.shape == (0,)
    with pytest.raises(RuntimeError, match="push after finish"):
        s.push(torch.zeros(1, hidden_dim(models[0])))


def test_empty_push_and_bad_shape(models):
    s = on_schedule(*models).start()
    assert s.push(torch.zeros(0, hidden_dim(models[0]))).shape == (0,)
    with pytest.raises(ValueError, match=r"hidden must be a \[steps, dim\] tensor"):
        s.push(torch.zeros(hidden_dim(models[0])))


@pytest.mark.parametrize("field", ["lookahead_steps", "left_context_steps", "crossfade_samples"])
def test_invalid_configuration_is_refused(models, field):
    with pytest.raises(ValueError, match="lookahead, left context and crossfade must be >= 0"):
        on_schedule(*models, **{field: -1})
    on_schedule(*models, **{field: 0})  # zero is allowed


def test_chunk_sizes_must_be_ordered(models):
    with pytest.raises(ValueError, match=r"need 1 <= min_chunk_steps <= max_chunk_steps"):
        on_schedule(*models, min_chunk_steps=8, max_chunk_steps=4)
    with pytest.raises(ValueError, match=r"need 1 <= min_chunk_steps"):
        on_schedule(*models, min_chunk_steps=0)
    on_schedule(*models, min_chunk_steps=4, max_chunk_steps=4)


def test_defaults_are_the_documented_ones(models):
    # The fidelity and cost figures in the module docstring are for these.
    v = on_schedule(*models)
    assert (v.lookahead_steps, v.left_context_steps, v.crossfade_samples) == (8, 51, 256)
    assert (v.min_chunk_steps, v.max_chunk_steps) == (4, 64)


def test_chunks_start_small_and_double_up_to_the_largest(models, hidden):
    vocoder = on_schedule(*models, lookahead_steps=8, min_chunk_steps=4, max_chunk_steps=32)
    sizes = [len(o) // SAMPLES_PER_STEP for o in stream(vocoder, hidden[:150], [1])[:-1] if len(o)]
    assert sizes == [4, 8, 16, 32, 32, 32]


def test_a_slower_growth_takes_more_smaller_chunks_to_the_same_audio(models, hidden, reference):
    # The CPU's schedule: each chunk half again the one before, so a model
    # 1.5x real time keeps up (module docstring); the seams stay the same.
    vocoder = on_schedule(*models, chunk_growth=CPU_CHUNK_GROWTH)
    outs = stream(vocoder, hidden, [1])
    sizes = [len(o) // SAMPLES_PER_STEP for o in outs[:-1] if len(o)]
    assert sizes[:8] == [4, 6, 9, 14, 21, 32, 48, 64] and set(sizes[8:]) == {64}
    assert snr_db(reference, np.concatenate(outs)) > SNR_BOUND_DB
    with pytest.raises(ValueError, match="chunk_growth must be > 1"):
        on_schedule(*models, chunk_growth=1.0)


class FakeClock:
    """Seconds that move only when a test says so."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def held_stream(vocoder: StreamingVocoder, hidden: torch.Tensor, clock: FakeClock, lead: float,
                seconds_per_step: float) -> list[np.ndarray]:
    """One step a push, ``seconds_per_step`` on the clock each; the stream's
    listener holds ``lead`` seconds of earlier audio at the start."""
    end = clock.now + lead
    s = vocoder.start(after=lambda: end)
    outs = []
    for i in range(hidden.shape[0]):
        clock.now += seconds_per_step
        outs.append(s.push(hidden[i:i + 1]))
    outs.append(s.finish())
    return outs


def test_a_stream_with_a_listeners_lead_holds_its_chunks_to_the_largest(models, hidden, reference):
    # A model 3x real time after a sentence whose audio plays 2 s more: every
    # chunk waits to twice the largest a chunk grows to, so fewer windows
    # re-render their left context.
    clock = FakeClock()
    vocoder = StreamingVocoder(*models, chunk_growth=CPU_CHUNK_GROWTH, clock=clock)
    outs = held_stream(vocoder, hidden, clock, lead=2.0, seconds_per_step=1 / 46.875 / 3)
    sizes = [len(o) // SAMPLES_PER_STEP for o in outs[:-1] if len(o)]
    assert sizes == [128, 128]
    audio = np.concatenate(outs)
    assert len(audio) == len(reference) and snr_db(reference, audio) > SNR_BOUND_DB
    free = on_schedule(*models, chunk_growth=CPU_CHUNK_GROWTH)
    stream(free, hidden, [1])
    assert vocoder.steps_rendered < 0.7 * free.steps_rendered
    assert vocoder.steps_rendered == (128 + 8) + (51 + 128 + 8) + (51 + 300 - 256)


def test_a_held_chunk_goes_once_the_listeners_lead_runs_low(models, hidden):
    # A model exactly real time: the lead of 1.5 s falls by a step's audio
    # each step, so the chunk due at 4 steps waits until the lead is under
    # HOLD_LEAD_S (from step 24 on: 1.5 - 24 / 46.875 < 1), then goes at once
    # with every step since (16: 8 stay as lookahead). The listener then
    # holds more than HOLD_LEAD_S again, and the next chunk waits as long.
    clock = FakeClock()
    vocoder = StreamingVocoder(*models, clock=clock)
    end = clock.now + 1.5
    s = vocoder.start(after=lambda: end)
    step_s = 1 / 46.875
    emitted = []
    for i in range(60):
        clock.now += step_s
        out = s.push(hidden[i:i + 1])
        if len(out):
            emitted.append((i + 1, len(out) // SAMPLES_PER_STEP))
    assert emitted == [(24, 16), (40, 16), (56, 16)]
    assert s.listener.lead() == pytest.approx(1.5 + 48 * step_s - 60 * step_s)
    assert s.listener.lead() >= HOLD_LEAD_S  # and the fourth chunk waits


def test_the_lead_is_a_jitter_free_players(models, hidden):
    clock = FakeClock()
    vocoder = StreamingVocoder(*models, lookahead_steps=2, min_chunk_steps=4, clock=clock)
    step_s = SAMPLES_PER_STEP / 24000
    s = vocoder.start()
    assert s.listener.lead() == -np.inf and s.listener.play_end() is None  # the listener waits for it
    s.push(hidden[:6])  # the first chunk: 4 steps of audio out now
    assert s.listener.lead() == pytest.approx(4 * step_s)
    clock.now += 1.0  # the listener played it and waited
    s.push(hidden[6:18])  # 12 more steps out after a gap: they play from now
    assert s.listener.lead() == pytest.approx(12 * step_s)
    # The next segment plays after this one's audio, as far as it is out.
    follower = vocoder.start(after=s.listener.play_end)
    assert follower.listener.lead() == pytest.approx(12 * step_s)
    clock.now += 0.1
    s.push(hidden[18:40])  # the earlier segment's new audio comes first
    assert follower.listener.lead() == pytest.approx(12 * step_s - 0.1 + 22 * step_s)
    follower.push(hidden[40:46])  # the follower's first chunk queues behind it
    assert follower.listener.lead() == pytest.approx(12 * step_s - 0.1 + 26 * step_s)
    clock.now += 5.0
    follower.listener.heard(0)  # an empty chunk plays nothing: the gap stays
    assert follower.listener.lead() == pytest.approx(12 * step_s - 5.1 + 26 * step_s)
    unknown = vocoder.start(after=lambda: None)  # an earlier segment with no audio yet
    assert unknown.listener.lead() == -np.inf
    unknown.push(hidden[:6])
    assert unknown.listener.lead() == pytest.approx(4 * step_s)


def test_a_stream_without_a_lead_never_holds(models, hidden):
    # Its chunks are a function of its steps alone, however fast the model.
    clock = FakeClock()
    vocoder = StreamingVocoder(*models, chunk_growth=CPU_CHUNK_GROWTH, clock=clock)
    stream(vocoder, hidden[:141], [1])
    assert vocoder.steps_rendered == vocoder.segment_window_steps(141)


def test_the_cpu_runtime_builds_its_vocoder_with_the_cpu_growth():
    assert tiny_runner().vocoder.chunk_growth == CPU_CHUNK_GROWTH


@pytest.mark.parametrize("lookahead", [0, 1, 3])
def test_audio_is_final_once_lookahead_steps_follow_it(models, hidden, lookahead):
    # One-step chunks: after each push, everything but the last
    # max(lookahead, 1) steps is out (the one-shot length ends half a step early).
    vocoder = on_schedule(*models, lookahead_steps=lookahead, min_chunk_steps=1, max_chunk_steps=1)
    s = vocoder.start()
    for k in range(1, 12):
        s.push(hidden[k - 1:k])
        assert s.emitted_samples == SAMPLES_PER_STEP * max(0, k - max(lookahead, 1)), k


def test_render_counts_calls_and_steps(models, hidden):
    vocoder = on_schedule(*models)
    vocoder.one_shot(hidden[:30])
    vocoder.one_shot(hidden[:7])
    assert (vocoder.calls, vocoder.steps_rendered) == (2, 37)


def test_each_window_is_logged_at_debug_level(models, hidden, caplog):
    caplog.set_level("DEBUG", logger="realtime.engine.vocoder.stream")
    stream(on_schedule(*models, lookahead_steps=2, min_chunk_steps=4), hidden[:12], [12])
    messages = [r.getMessage() for r in caplog.records if r.name == "realtime.engine.vocoder.stream"]
    assert messages == ["vocoded from step 0 to 10 over a 12-step window",
                        "vocoded from step 10 to end over a 12-step window"]


def test_low_precision_models_still_give_float32(models, hidden, reference):
    decoder, vocos = random_models(tiny=True, seed=0)
    vocoder = StreamingVocoder(decoder.to(torch.bfloat16), vocos.to(torch.bfloat16))
    out = vocoder.one_shot(hidden)
    assert out.dtype == np.float32 and out.shape == reference.shape
    assert snr_db(reference, out) > 20.0


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu(models, hidden, reference):
    decoder, vocos = random_models(tiny=True, seed=0)
    vocoder = StreamingVocoder(decoder.cuda(), vocos.cuda())
    out = np.concatenate(stream(vocoder, hidden.cuda(), [1]))
    assert out.shape == reference.shape
    assert snr_db(reference, out) > SNR_BOUND_DB


def test_push_copies_the_callers_buffer(models, hidden):
    vocoder = on_schedule(*models)
    buffer = hidden[:5].clone()
    s = vocoder.start()
    s.push(buffer)
    buffer.zero_()  # a runner reuses its hidden-state buffer
    np.testing.assert_allclose(s.finish(), vocoder.one_shot(hidden[:5]), atol=1e-6, rtol=0)
