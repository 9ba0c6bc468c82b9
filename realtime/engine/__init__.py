"""The engine floor: ChatTTS's model, from checkpoint to 24 kHz samples.

``build_runner(RuntimeOptions) -> Runner`` is the entry point; the contract
is ``realtime.engine.api``. ``WeightsError`` is raised for missing or
corrupt checkpoints (a one-line start-up error). Flat here: the runner and
its step (decode, sampling, refine, the warm start). Below: ``model/`` (the
checkpoint, its prepared weights, the torch decoder), ``vocoder/``
(streaming Decoder + Vocos), ``text/`` (text to ChatTTS tokens), ``cpu/``
(threads, the CPU engine's choice), ``ort/`` (the decoder
and vocoder on ONNX Runtime), ``cuda/`` (graphs, attention kernels).

May import ``realtime.speech`` (the floor below) and ``scheduler`` (the step
contract), never the server, audio encoding or the wire (``protocol``); torch
and ChatTTS load on first build.
"""

from realtime.engine.api import Runner, RuntimeOptions, VoiceError


def build_runner(options: RuntimeOptions) -> Runner:
    """Build the model runner (imports torch and ChatTTS on first call)."""
    from realtime.engine.build import build_runner as _build
    return _build(options)


def __getattr__(name):
    # WeightsError lives with the weight loader, which imports torch: load lazily.
    if name == "WeightsError":
        from realtime.engine.model.weights import WeightsError
        return WeightsError
    raise AttributeError(name)


__all__ = ["RuntimeOptions", "VoiceError", "WeightsError", "build_runner"]
