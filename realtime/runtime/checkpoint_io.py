"""Reading a checkpoint's safetensors files, with one error type for all of it.

``WeightsError`` is what every checkpoint problem raises (a missing or
unreadable file, a tensor the model does not have): its message names the
path and the problem, and the server prints it as a one-line start-up
error. ``read_safetensors`` reads a file's tensors, ``read_shapes`` only its
header (meta tensors of the stored shapes), ``load_into`` loads a file, or a
state read before, strictly into a module.

Thread: any (start-up, or the thread that first uses a deferred module).
"""

from __future__ import annotations

import os

import torch


class WeightsError(RuntimeError):
    """Weights cannot be loaded; the message names the path and the problem."""


def read_safetensors(path: str) -> dict[str, torch.Tensor]:
    from safetensors import SafetensorError
    from safetensors.torch import load_file
    if not os.path.isfile(path):
        raise WeightsError(f"checkpoint file missing: {path}")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise WeightsError(f"checkpoint file unreadable: {path} ({exc})") from None


def read_shapes(path: str) -> dict[str, torch.Tensor]:
    """A safetensors file's tensors as meta tensors of their shapes (its
    header only: no data is read)."""
    from safetensors import SafetensorError, safe_open
    if not os.path.isfile(path):
        raise WeightsError(f"checkpoint file missing: {path}")
    try:
        with safe_open(path, framework="pt") as f:
            return {k: torch.empty(f.get_slice(k).get_shape(), device="meta")
                    for k in f.keys()}  # noqa: SIM118 - safe_open is no mapping
    except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
        raise WeightsError(f"checkpoint file unreadable: {path} ({exc})") from None


def load_into(module: torch.nn.Module, path: str,
              state: dict[str, torch.Tensor] | None = None) -> None:
    """Load ``path`` (or ``state``, read from it before) strictly into ``module``."""
    if state is None:
        state = read_safetensors(path)
    try:
        module.load_state_dict(state)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        detail = " ".join(first[:2])[:300]
        raise WeightsError(f"checkpoint file does not match the model: {path} ({detail})") from None
