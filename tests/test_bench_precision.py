"""bench int8/precision on tiny shapes: it runs and reports what it says."""

from __future__ import annotations

import pytest
import torch
from runtime_fixtures import tiny_assets

from bench import int8 as bench_int8
from realtime.engine.cpu.engine import ort_missing

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_snr_is_large_for_small_noise_and_capped_for_none():
    ref = [1.0, -1.0] * 50
    assert bench_int8.snr_db(ref, ref) == bench_int8.SNR_CAP_DB
    assert 39 < bench_int8.snr_db(ref, [v * 1.01 for v in ref]) < 41  # 1% error: 40 dB


@pytest.mark.skipif(ort_missing() is not None, reason="onnxruntime unavailable")
@pytest.mark.parametrize("setup, max_err, vocoder_snr", [
    ("int8", 1e-2, 100.0),  # ONNX Runtime's fp32 vocoder: rounding only
    ("int4", 0.2, 100.0),
])
def test_divergence_reports_steps_errors_and_audio_snr(setup, max_err, vocoder_snr):
    out = bench_int8.compare(tiny_assets(), 6, (setup,), texts=bench_int8.PROMPTS[:1])
    (row,) = out[setup]
    assert {"first_differing_step", "hidden_rel_err_max",
            "kl_t03_median", "audio_snr_db", "vocoder_snr_db"} <= set(row)
    assert 0 < row["hidden_rel_err_max"] < max_err
    assert row["vocoder_snr_db"] >= vocoder_snr
    assert 20 < row["audio_snr_db"] < bench_int8.SNR_CAP_DB
    assert torch.get_num_threads() == 1
