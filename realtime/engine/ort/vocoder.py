"""The vocoder's convolutions on ONNX Runtime: Decoder, Vocos's backbone and head projection.

``OrtVocoderBody`` runs, as one ONNX graph, what ``vocoder_batch``'s packed
render runs in torch up to the spectrum: ChatTTS's Decoder and Vocos's
backbone with every layer's output masked (``_decoder_masked``,
``_backbone_masked``), then Vocos's head projection: ``hidden`` [1, D, S]
and ``mask`` [1, 1, 2S] -> ``projected`` [1, 2S, n_fft + 2]. The spectrum,
the inverse FFT and the overlap-add stay torch's (``vocoder_batch._audio``:
a few percent of a render). ``StreamingVocoder.body`` takes it, so the
streams, the packing and the crossfades are those of the torch vocoder.

Built at start-up by torch's ONNX exporter from the modules as loaded (the
checkpoint's own weights), in ``fp32`` or ``int8`` (ORT's dynamic
quantization of every matrix: 7-bit per-channel weights, inputs quantized per
call; docs/runtime.md gives the audio's SNR against fp32, and why not the
backbone's ``MatMulNBits``: slower than fp32 at these row counts here), and
kept in the prepared cache like the backbone (kind ``ort-vocoder``).

Thread: the model thread.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
import warnings
from typing import Any

import numpy as np
import torch

from realtime.engine import startup_clock
from realtime.engine.api import WeightsKind
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache, checkpoint_id
from realtime.engine.ort.backbone import BackboneError, session_options
from realtime.engine.ort.graph_entry import versions

log = logging.getLogger(__name__)

KIND = "ort-vocoder"
FORMS = ("fp32", "int8")
GRAPH = "vocoder.onnx"
EXPORT_VERSION = 1


class _Body(torch.nn.Module):
    def __init__(self, decoder: torch.nn.Module, vocos: Any):
        super().__init__()
        self.decoder, self.vocos = decoder, vocos

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        from realtime.engine.vocoder.batch import _backbone_masked, _decoder_masked

        mel = _decoder_masked(self.decoder, hidden, mask)
        feats = _backbone_masked(self.vocos.backbone, mel, mask)
        return self.vocos.head.out(feats)


def export(decoder: torch.nn.Module, vocos: Any, hidden: int, form: str, path: str) -> None:
    """Write the body graph of ``decoder`` and ``vocos`` (fp32 modules on the
    CPU, as loaded; GPT states of width ``hidden``) in ``form`` to ``path``."""
    import onnx

    if form not in FORMS:
        raise ValueError(f"unknown vocoder form {form!r} ({', '.join(FORMS)})")
    steps = 8
    args = (torch.zeros(1, hidden, steps), torch.ones(1, 1, 2 * steps))
    with torch.no_grad(), tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        # torch 2.13's TorchScript exporter is deprecated in favour of the dynamo one,
        # which needs onnxscript; it still exports these convolutions exactly.
        warnings.simplefilter("ignore")
        raw = os.path.join(tmp, "raw.onnx")
        torch.onnx.export(_Body(decoder, vocos).eval(), args, raw, input_names=["hidden", "mask"],
                          output_names=["projected"], opset_version=17, dynamo=False,
                          dynamic_axes={"hidden": {2: "steps"}, "mask": {2: "frames"},
                                        "projected": {1: "frames"}})
        if form == "fp32":
            onnx.save_model(onnx.load(raw), path)
            return
        from onnxruntime.quantization import QuantType, quantize_dynamic

        # Without VNNI the u8 x s8 kernels add pairs in int16: 7-bit weights
        # (reduce_range) keep them exact there; per output channel scales.
        root, quiet = logging.getLogger(), _RootRecordsDropped()
        root.addFilter(quiet)
        try:
            quantize_dynamic(raw, path, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"],
                             per_channel=True, reduce_range=True)
        finally:
            root.removeFilter(quiet)


class _RootRecordsDropped(logging.Filter):
    """onnxruntime.quantization logs on the root logger: a line per tensor it
    leaves alone and advice to pre-process, 40+ lines a build that tell whoever
    runs the server nothing. Records of named loggers (ours) reach the root's
    handlers without passing the root logger's filters, so only those go."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.name != "root"


class OrtVocoderBody:
    """The body graph of ``assets``' vocoder in ``form`` on ``threads`` threads."""

    def __init__(self, assets, form: str, threads: int, spin: bool, cache_dir: str | None):
        import onnxruntime as ort

        started = time.perf_counter()
        self.form = form
        with tempfile.TemporaryDirectory(prefix="ort-vocoder-") as scratch:
            path = _graph_dir(assets, form, cache_dir, scratch)
            try:
                self.session = ort.InferenceSession(os.path.join(path, GRAPH), session_options(threads, spin),
                                                    providers=["CPUExecutionProvider"])
            except Exception as exc:  # onnxruntime's own types
                raise BackboneError(f"cannot load the ONNX vocoder in {path}: {type(exc).__name__}: "
                                    f"{exc}") from exc
        self._binding = self.session.io_binding()
        self.width = assets.vocos.head.out.out_features
        log.info("ort vocoder %s ready in %.1f s", form, time.perf_counter() - started)
        startup_clock.mark("ort vocoder")

    def render(self, vocoder, hidden: torch.Tensor) -> torch.Tensor:
        """``vocoder.render_on_device(hidden)`` through this body: the packed
        path with one window (``vocoder_batch``)."""
        from realtime.engine.vocoder.batch import packed_on_device

        return packed_on_device(vocoder, [hidden])[0]

    def __call__(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``hidden`` [1, D, S], ``mask`` [1, 1, 2S] fp32 -> [1, 2S, n_fft + 2] fp32."""
        hidden, mask = hidden.float().contiguous(), mask.float().contiguous()
        out = torch.empty(1, mask.shape[2], self.width, dtype=torch.float32)
        io = self._binding
        io.bind_input("hidden", "cpu", 0, np.float32, list(hidden.shape), hidden.data_ptr())
        io.bind_input("mask", "cpu", 0, np.float32, list(mask.shape), mask.data_ptr())
        io.bind_output("projected", "cpu", 0, np.float32, list(out.shape), out.data_ptr())
        self.session.run_with_iobinding(io)
        return out


def _graph_dir(assets, form: str, cache_dir: str | None, scratch: str) -> str:
    cache = PreparedCache(cache_dir)
    started = time.perf_counter()

    def build(directory: str) -> None:
        export(assets.decoder.eval(), assets.vocos.eval(), assets.shape.hidden, form,
               os.path.join(directory, GRAPH))

    if not cache.enabled or assets.kind is not WeightsKind.CHECKPOINT:
        build(scratch)
        log.info("ort vocoder %s exported in %.1f s (not kept)", form, time.perf_counter() - started)
        startup_clock.mark(f"ort vocoder {form} graph built")
        return scratch
    key = CacheKey.of(KIND, model=checkpoint_id(assets.source, cache), shape=str(assets.shape), form=form,
                      **versions(), vocoder_export=EXPORT_VERSION)
    found = cache.load_dir(key)
    if found is None:
        found = cache.store_dir(key, build)
        if found is None:
            build(scratch)
            found = scratch
        log.info("ort vocoder %s exported in %.1f s", form, time.perf_counter() - started)
        startup_clock.mark(f"ort vocoder {form} graph built")
    return found
