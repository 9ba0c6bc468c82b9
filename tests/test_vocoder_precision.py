"""The vocoder's block linears in bf16 or TF32 (realtime/engine/vocoder/precision.py).

bf16 runs on the CPU too, so its error against fp32 is measured here (tiny
random models of the real depth, windows of 5-300 steps): SNR 46.0-47.5 dB
(seed 0), 48.2-50.0 dB (seed 1); with the head in bf16 too, 2-4 dB less;
without the bias 10-15 dB. The bound leaves room for other CPUs' rounding.
bf16 does not meet the streaming bound of tests/test_runtime_runner_audio.py
(60 dB against upstream), which is why CUDA's ``auto`` is TF32 (three more
mantissa bits) and bf16 is opt-in until the GPU check's ``vocoder_precision``
section has measured both at full size. TF32 itself is CUDA's: here only
its switch is tested (set for the wrapped matmul alone, restored after).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from runtime_fixtures import tiny_runner

import realtime.engine.compat  # noqa: F401  (before ChatTTS / vocos)
from bench.vocoder import hidden_dim, random_models
from realtime.engine.vocoder.batch import render_packed
from realtime.engine.vocoder.precision import (
    BF16Linear,
    TF32Linear,
    block_linears,
    vocoder_precision_for,
    with_precision,
)
from realtime.engine.vocoder.stream import StreamingVocoder

pytestmark = pytest.mark.usefixtures("one_torch_thread")

SNR_BOUND_DB = 40.0
LENGTHS = (5, 40, 300)


def snr_db(ref: np.ndarray, out: np.ndarray) -> float:
    return float(10 * np.log10(np.sum(ref ** 2) / max(np.sum((ref - out) ** 2), 1e-30)))


@pytest.fixture(scope="module")
def models():
    return random_models(tiny=True, seed=0)


def _windows(decoder):
    gen = torch.Generator().manual_seed(3)
    return [torch.randn(t, hidden_dim(decoder), generator=gen) for t in LENGTHS]


def test_bf16_linears_meet_the_snr_bound_against_fp32(models):
    decoder, vocos = models
    hs = _windows(decoder)
    ref = render_packed(StreamingVocoder(decoder, vocos), hs)
    low = StreamingVocoder(*with_precision(decoder, vocos, "bf16"))
    assert low._voc_dtype == low._dec_dtype == torch.float32  # the fp32 ISTFT path
    out = render_packed(low, hs)
    snrs = [snr_db(r, o) for r, o in zip(ref, out)]
    assert all(o.shape == r.shape for r, o in zip(ref, out))
    assert min(snrs) >= SNR_BOUND_DB, snrs
    assert max(snrs) < 120  # it really ran in bf16


def test_the_head_stays_fp32_and_the_models_given_are_untouched(models):
    decoder, vocos = models
    dec, voc = with_precision(decoder, vocos, "bf16")
    assert isinstance(voc.head.out, torch.nn.Linear) and voc.head.out.weight.dtype == torch.float32
    assert len(block_linears(decoder)) == 24 and len(block_linears(vocos)) == 16
    assert not block_linears(dec) and not block_linears(voc)  # every block linear wrapped
    wrapped = [m for m in [*dec.modules(), *voc.modules()] if isinstance(m, BF16Linear)]
    assert len(wrapped) == 40 and all(m.weight.dtype == torch.bfloat16 for m in wrapped)
    assert all(isinstance(getattr(p, n), torch.nn.Linear) for p, n in block_linears(decoder))
    assert with_precision(decoder, vocos, "fp32") == (decoder, vocos)


def test_tf32_is_allowed_for_the_wrapped_matmul_only():
    seen = []

    class Probe(torch.nn.Linear):
        def forward(self, x):
            seen.append(torch.backends.cuda.matmul.allow_tf32)
            if len(seen) == 2:
                raise RuntimeError("broke")
            return super().forward(x)

    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    try:
        matmul.allow_tf32 = False
        layer = TF32Linear(Probe(4, 4))
        y = layer(torch.ones(2, 4))
        assert seen == [True] and not matmul.allow_tf32 and y.shape == (2, 4)
        with pytest.raises(RuntimeError, match="broke"):
            layer(torch.ones(2, 4))
        assert not matmul.allow_tf32  # restored after a failure too
    finally:
        matmul.allow_tf32 = before


def test_precision_names_and_where_each_is_allowed():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert vocoder_precision_for("auto", cuda) == "tf32"
    assert vocoder_precision_for("auto", cpu) == "fp32"
    assert vocoder_precision_for("bf16", cpu) == "bf16"
    with pytest.raises(ValueError, match="CUDA mode"):
        vocoder_precision_for("tf32", cpu)
    with pytest.raises(ValueError, match="unknown vocoder precision"):
        vocoder_precision_for("fp8", cuda)


def test_the_runtime_option_builds_the_vocoder_it_names():
    runner = tiny_runner(vocoder_precision="bf16")
    kinds = {type(m) for m in runner.vocoder.decoder.modules()}
    assert BF16Linear in kinds
    with pytest.raises(ValueError, match="CUDA mode"):
        tiny_runner(vocoder_precision="tf32")
