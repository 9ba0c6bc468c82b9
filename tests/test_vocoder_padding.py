"""Packed vocoder rows padded to a few fixed sizes (CUDA's: few shapes to
plan and warm) give every window the audio it gets unpadded, and alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from bench.vocoder import hidden_dim, random_models
from realtime.engine.cuda.profile import BUCKETS
from realtime.engine.vocoder import batch as vocoder_batch
from realtime.engine.vocoder.batch import (
    PACKED_STEPS,
    STEPS_PER_CALL,
    padded_steps,
    render_packed,
)
from realtime.engine.vocoder.overlap import AudioDelivery
from realtime.engine.vocoder.stream import StreamingVocoder

PACKED_ATOL = 1e-6  # as tests/test_runtime_vocoder_batch.py: float rounding only

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def vocoder():
    return StreamingVocoder(*random_models(tiny=True, seed=0))


def _windows(vocoder, lengths):
    gen = torch.Generator().manual_seed(5)
    return [torch.randn(t, hidden_dim(vocoder.decoder), generator=gen) for t in lengths]


def _rows(monkeypatch) -> list[int]:
    """The step count of every packed row the decoder sees."""
    seen: list[int] = []
    real = vocoder_batch._decoder_masked
    monkeypatch.setattr(vocoder_batch, "_decoder_masked",
                        lambda dvae, x, mask: seen.append(x.shape[2]) or real(dvae, x, mask))
    return seen


def test_padded_rows_give_every_window_its_unpadded_audio(vocoder, monkeypatch):
    hs = _windows(vocoder, (3, 20, 7))
    plain = render_packed(vocoder, hs)
    rows = _rows(monkeypatch)
    vocoder.pad_steps = (16, 64, 128)
    padded = render_packed(vocoder, hs)
    gap = vocoder_batch.gap_steps(vocoder)
    assert rows == [64] and 30 + 2 * gap <= 64  # 30 steps and two gaps, padded to 64
    assert [p.shape for p in padded] == [p.shape for p in plain]
    assert max(float(np.abs(a - b).max()) for a, b in zip(padded, plain)) <= PACKED_ATOL


def test_a_lone_window_is_padded_too_and_equals_its_plain_render(vocoder, monkeypatch):
    (h,) = _windows(vocoder, (9,))
    alone = vocoder.render(h)
    rows = _rows(monkeypatch)
    vocoder.pad_steps = (32,)
    (padded,) = render_packed(vocoder, [h])
    assert rows == [32] and padded.shape == alone.shape
    assert float(np.abs(padded - alone).max()) <= PACKED_ATOL


def test_rows_longer_than_every_size_run_at_their_length(vocoder, monkeypatch):
    rows = _rows(monkeypatch)
    vocoder.pad_steps = (8,)
    render_packed(vocoder, _windows(vocoder, (5, 6)))
    assert rows == [5 + 6 + vocoder_batch.gap_steps(vocoder)]
    assert padded_steps(70, (64, 128)) == 128 and padded_steps(200, (64, 128)) == 200


def _delivery(vocoder, delayed=False):
    return AudioDelivery(vocoder, torch.device("cpu"), delayed, lambda exc: False)


@pytest.mark.parametrize("delayed", [False, True])
def test_warming_renders_each_size_once(vocoder, monkeypatch, delayed):
    rows = _rows(monkeypatch)
    vocoder.pad_steps = (16, 48)
    calls = vocoder.calls
    _delivery(vocoder, delayed).warm()
    assert rows == [16, 48] and vocoder.calls == calls + 2


def test_warming_covers_every_size_cuda_pads_to(vocoder, monkeypatch):
    """Start-up on CUDA warms PACKED_STEPS; every row a step makes within
    its budget lands on one of them (a unit alone over the budget may run
    longer: only a one-shot job's whole length, up to the largest bucket)."""
    rows = _rows(monkeypatch)
    vocoder.pad_steps = PACKED_STEPS
    _delivery(vocoder).warm()
    assert rows == list(PACKED_STEPS)
    assert padded_steps(STEPS_PER_CALL, PACKED_STEPS) in PACKED_STEPS
    assert padded_steps(max(BUCKETS), PACKED_STEPS) in PACKED_STEPS  # the profile's longest bucket


def test_no_padding_means_nothing_to_warm(vocoder, monkeypatch):
    rows = _rows(monkeypatch)
    vocoder.pad_steps = ()
    _delivery(vocoder).warm()
    assert rows == []
