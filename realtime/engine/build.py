"""``build_runner``: from ``RuntimeOptions`` to a ready ``ModelRunner``.

Chooses the device (``auto``: CUDA when available) and the precision
(``auto``: bf16 on GPUs that support it, else fp16; on a CPU int8 or int4
on ONNX Runtime, ``cpu.engine``; logits and sampling are always fp32), on
the CPU the thread count (``cpu_threads``) and the engine (``cpu.engine``:
ONNX Runtime, or torch's fp32 reference); loads or builds the weights
(``weights.resolve_assets``), builds the streaming vocoder, then the runner
over them; on CUDA with ``cuda_graphs`` the runner captures CUDA graphs
(``graphs.CudaCapture``) into its own cache in ``warmup``. The order is
this function's, top to bottom; nothing is wired after construction.

Raises ``WeightsError`` (bad or missing checkpoint) and ``ValueError`` (bad
options) with one-line messages meant for a start-up error.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import torch

import realtime.engine.compat  # noqa: F401
from realtime.engine import startup_clock
from realtime.engine.api import RuntimeOptions
from realtime.engine.cpu import engine as cpu_engine
from realtime.engine.cpu.threads import configure_threads
from realtime.engine.cuda.graphs import Capture, CudaCapture
from realtime.engine.model.weights import ModelAssets, resolve_assets
from realtime.engine.runner import ModelRunner
from realtime.engine.vocoder.precision import vocoder_precision_for, with_precision

if TYPE_CHECKING:
    from realtime.engine.step_log import StepRecorder

log = logging.getLogger(__name__)

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("device cuda requested but no CUDA device is available")
    if name.split(":")[0] not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {name!r} (auto, cpu, cuda)")
    return torch.device(name)


def pick_dtype(precision: str, device: torch.device) -> torch.dtype:
    """The activation dtype; ``int8`` and ``int4`` keep fp32 activations
    (their weights are int) and are refused off the CPU; ``bf16`` is refused
    on it (its bf16 forms lost to ONNX Runtime's int8: docs/runtime.md, "Retired")."""
    if precision == "bf16" and device.type == "cpu":
        raise ValueError("precision bf16 is a GPU mode; on a CPU use auto, int8, int4 (ONNX Runtime) "
                         "or fp32")
    if precision == "auto":
        if device.type != "cuda":
            return torch.float32
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if precision in ("int8", "int4"):
        if device.type != "cpu":
            raise ValueError(f"precision {precision} is a CPU mode, not for {device} "
                             "(use auto, bf16 or fp16 there, or --device cpu)")
        return torch.float32
    if precision not in _DTYPES:
        raise ValueError(f"unknown precision {precision!r} (auto, fp32, bf16, fp16, int8, int4)")
    return _DTYPES[precision]


def build_runner(options: RuntimeOptions, assets: ModelAssets | None = None,
                 capture: Capture | None = None) -> ModelRunner | StepRecorder:
    """A runner as ``options`` describe (with ``record_steps``, a ``StepRecorder``
    around it); ``assets`` skips weight resolution (tests); ``capture``
    replaces the device's graph capture (tests and tools run the graph path
    on the CPU with bench/strict_graphs.py's stand-in)."""
    startup_clock.mark("runtime imports")
    if options.max_slots < 1 or not options.batch_sizes or not options.kv_buckets:
        raise ValueError("max_slots, batch_sizes and kv_buckets must be non-empty/positive")
    device = pick_device(options.device)
    asked = options.precision
    if device.type == "cpu":
        options = dataclasses.replace(options, precision=cpu_engine.cpu_precision(asked))
    dtype = pick_dtype(options.precision, device)
    vocoder_precision = vocoder_precision_for(options.vocoder_precision, device)
    if device.type == "cpu":
        configure_threads(options.cpu_threads)
    else:
        from realtime.engine.cuda.sdpa import pin_attention
        pin_attention()
    if assets is None:
        assets = resolve_assets(options.weights, options.model_dir, options.require_weights,
                                options.seed)
        startup_clock.mark("weights loaded")
    if device.type == "cuda" and options.auto_shapes:
        options = _with_cuda_profile(options, device, assets, dtype)
    options = _checked_machine(options, device, assets, dtype)
    startup_clock.mark("machine checked")
    # On the CPU the engine (cpu.engine) runs the decoder and, with ort, the
    # vocoder's convolutions; graphs capture our torch step, so a CPU runner
    # with a capture (tests, tools) runs torch.
    model = body = None
    if device.type == "cpu" and capture is None:
        if asked == "auto":
            options = dataclasses.replace(options, precision=cpu_engine.auto_precision(options, assets))
        _log_cpu_choice(options, asked)
        model = cpu_engine.build_decoder(options, assets)
        vocoder_precision = cpu_engine.vocoder_precision(options, model, vocoder_precision)
        body = cpu_engine.vocoder_body(options, assets, model, vocoder_precision)
        cpu_engine.leave_cores_to_ort(model)
    elif device.type == "cpu":  # a capture runs our torch step, which is fp32 on a CPU
        if options.precision in cpu_engine.INT_PRECISIONS:
            if asked != "auto":
                raise ValueError(f"precision {asked} runs on the ort engine, which graphs do not capture")
            options = dataclasses.replace(options, precision="fp32")
        _log_cpu_choice(options, asked)
    vocoder = _vocoder(options, assets, device, vocoder_precision, body)
    if capture is None and device.type == "cuda" and options.cuda_graphs:
        capture = CudaCapture()
    runner = ModelRunner(assets, options, device, dtype, vocoder, capture, model)
    startup_clock.mark("kv cache, runner")
    runner.audio.delivery.warm()  # every padded size, on the vocoder's own stream
    startup_clock.mark("vocoder delivery warmed")
    if options.record_steps:
        from realtime.engine.step_log import StepRecorder
        log.info("recording every prepare and step plan to %s", options.record_steps)
        return StepRecorder(runner, options.record_steps)
    return runner


def _vocoder(options: RuntimeOptions, assets: ModelAssets, device: torch.device, precision: str, body):
    """The streaming vocoder: with ``body`` (``ort.vocoder``) its convolutions
    there; else torch's modules in ``precision``."""
    from realtime.engine.vocoder.stream import CPU_CHUNK_GROWTH, StreamingVocoder
    decoder = assets.decoder.to(device).eval()
    vocos = assets.vocos.to(device).eval()
    if body is None:
        decoder, vocos = with_precision(decoder, vocos, precision)
    # A CPU's model is not twice real time: its chunks grow slower (vocoder.py).
    growth = CPU_CHUNK_GROWTH if device.type == "cpu" else 2.0
    vocoder = StreamingVocoder(decoder, vocos, lookahead_steps=options.lookahead_steps,
                               chunk_growth=growth)
    vocoder.body = body
    if device.type == "cuda":
        from realtime.engine.vocoder.batch import PACKED_STEPS
        vocoder.pad_steps = PACKED_STEPS
    return vocoder


def _with_cuda_profile(options: RuntimeOptions, device: torch.device, assets: ModelAssets,
                       dtype: torch.dtype) -> RuntimeOptions:
    """``options`` with the shapes it leaves to the hardware from the GPU's memory."""
    from realtime.engine.cuda.profile import cuda_profile
    memory = torch.cuda.get_device_properties(device).total_memory
    profile = cuda_profile(memory, assets.shape, torch.empty(0, dtype=dtype).element_size())
    chosen = {f: getattr(profile, f) for f in options.auto_shapes}
    log.info("cuda profile (%s): %s; from it: %s", torch.cuda.get_device_name(device),
             profile.describe(), ", ".join(chosen) or "nothing (every shape set)")
    return dataclasses.replace(options, **chosen)


def _checked_machine(options: RuntimeOptions, device: torch.device, assets: ModelAssets,
                     dtype: torch.dtype) -> RuntimeOptions:
    """``options`` once the machine is checked against them (``host_check``):
    every check logged; a refusal raised as a one-line ``StartupRefused``; on
    CUDA a slot count left to the hardware shrunk to the free memory."""
    import math

    from realtime.engine import host_check
    from realtime.engine.cuda.profile import RESERVE_BYTES, slot_bytes
    dtype_bytes = torch.empty(0, dtype=dtype).element_size()
    per_slot = slot_bytes(assets.shape, min(max(options.kv_buckets), assets.shape.max_positions), dtype_bytes)
    gpt = sum(math.prod(t.shape) for t in assets.gpt_state.values()) * dtype_bytes
    rest = sum(p.numel() * 4 for m in (assets.embed, assets.decoder, assets.vocos) for p in m.parameters())
    needs = host_check.Needs(weights_bytes=gpt + rest, kv_bytes=(options.max_slots + 1) * per_slot,
                             slot_bytes=per_slot, slots=options.max_slots,
                             reserve_bytes=RESERVE_BYTES if device.type == "cuda" else 0,
                             slots_auto="max_slots" in options.auto_shapes)
    found = host_check.check(host_check.gather(device), needs)
    slots = host_check.fit_slots(found)
    if slots is None:
        return options
    batches = tuple(b for b in options.batch_sizes if b <= slots) or (1,)
    return dataclasses.replace(options, max_slots=slots, batch_sizes=batches)


def _log_cpu_choice(options: RuntimeOptions, asked: str) -> None:
    """Say what the CPU runs and why, and what a reduced precision costs
    (the engine follows from the model)."""
    precision = options.precision
    how = "the default on a CPU: --precision auto" if asked == "auto" else f"--precision {precision}"
    if precision in ("int8", "int4"):
        log.warning("PRECISION %s (%s): the decoder's matrices in %s, its K/V cache in int8 (a calibrated "
                    "scale per channel); activations, attention, logits and sampling stay fp32. "
                    "Against fp32: %s (docs/runtime.md, python -m bench "
                    "precision). For upstream's exact codes: --precision fp32 --cpu-engine torch.",
                    precision.upper(), how, precision, cpu_engine.QUALITY[precision])
        return
    log.info("cpu runtime: precision fp32 (%s)", how)
