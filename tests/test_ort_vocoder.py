"""The vocoder's convolutions on ONNX Runtime (realtime/engine/ort/vocoder.py).

fp32: a stream's audio equals the torch vocoder's within float rounding,
windows packed or alone; int8: within the SNR docs/runtime.md states. A
runner on the ort engine renders through it; the torch engine does not.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest
import torch
from runtime_fixtures import tiny_assets, tiny_runner

from bench.int8 import snr_db
from realtime.engine.ort.vocoder import OrtVocoderBody
from realtime.engine.vocoder.batch import render_packed
from realtime.engine.vocoder.stream import StreamingVocoder

STEPS = 90


def _stream(vocoder: StreamingVocoder, hidden: torch.Tensor) -> np.ndarray:
    stream = vocoder.start()
    out = [stream.push(hidden[i:i + 3]) for i in range(0, hidden.shape[0], 3)]
    return np.concatenate([*out, stream.finish()])


@pytest.fixture(scope="module")
def hidden():
    return torch.randn(STEPS, tiny_assets().shape.hidden, generator=torch.Generator().manual_seed(4)) * 3


@pytest.mark.parametrize("form, min_snr", [("fp32", 90.0), ("int8", 33.0)])
def test_streamed_audio_matches_the_torch_vocoder(hidden, form, min_snr):
    a = tiny_assets()
    ref = StreamingVocoder(a.decoder.eval(), a.vocos.eval())
    ours = StreamingVocoder(a.decoder.eval(), a.vocos.eval())
    ours.body = OrtVocoderBody(a, form, 1, False, None)
    want, got = _stream(ref, hidden), _stream(ours, hidden)
    assert len(got) == len(want)
    assert snr_db(want, got) > min_snr
    one = ref.one_shot(hidden[:7])
    assert len(ours.one_shot(hidden[:7])) == len(one)


def test_packed_windows_equal_lone_renders(hidden):
    a = tiny_assets()
    ours = StreamingVocoder(a.decoder.eval(), a.vocos.eval())
    ours.body = OrtVocoderBody(a, "fp32", 1, False, None)
    windows = [hidden[:20], hidden[30:41], hidden[50:53]]
    packed = render_packed(ours, windows)
    for w, audio in zip(windows, packed):
        np.testing.assert_allclose(audio, ours.render(w), atol=1e-5)


def test_the_engine_decides_where_the_vocoder_runs():
    assert tiny_runner(cpu_engine="ort", precision="int8").vocoder.body is not None
    assert tiny_runner().vocoder.body is None  # the torch engine
    with pytest.raises(ValueError, match="ort engine only"):
        tiny_runner(vocoder_precision="int8")


def test_the_int8_build_keeps_onnxruntimes_root_logger_lines_out_of_the_log(caplog):
    """onnxruntime.quantization logs 40+ lines a build on the root logger."""
    caplog.set_level(logging.INFO)
    OrtVocoderBody(tiny_assets(), "int8", 1, False, None)
    assert [r for r in caplog.records if r.name == "root"] == []
    assert any(r.name == "realtime.engine.ort.vocoder" for r in caplog.records)  # ours still pass
