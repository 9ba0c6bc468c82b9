"""The torch model runtime: weights, text front end, static-KV decoder, runner.

``build_runner(RuntimeOptions) -> Runner`` is the entry point; the contract
is ``realtime.runtime.api``. ``WeightsError`` is raised for missing or
corrupt checkpoints (a one-line start-up error).
"""

from realtime.runtime.api import Runner, RuntimeOptions, VoiceError


def build_runner(options: RuntimeOptions) -> Runner:
    """Build the model runner (imports torch and ChatTTS on first call)."""
    from realtime.runtime.build import build_runner as _build
    return _build(options)


def __getattr__(name):
    # WeightsError lives with the weight loader, which imports torch: load lazily.
    if name == "WeightsError":
        from realtime.runtime.weights import WeightsError
        return WeightsError
    raise AttributeError(name)


__all__ = ["RuntimeOptions", "VoiceError", "WeightsError", "build_runner"]
