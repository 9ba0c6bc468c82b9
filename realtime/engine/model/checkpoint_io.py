"""Reading a checkpoint's safetensors files, with one error type for all of it.

``WeightsError`` is what every checkpoint problem raises (a missing or
unreadable file, a tensor the model does not have): its message names the
path and the problem, and the server prints it as a one-line start-up
error. ``read_safetensors`` reads a file's tensors, ``read_shapes`` only its
header (meta tensors of the stored shapes), ``LazyTensors`` several files'
tensors each read when asked for, ``load_into`` loads a file, or a state
read before, strictly into a module.

Thread: any (start-up, or the thread that first uses a deferred module).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

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


class LazyTensors(Mapping[str, torch.Tensor]):
    """The tensors of safetensors ``files`` as a read-only mapping whose
    values are read (as fp32) each time one is asked for: a start whose
    decoder matrices come from the prepared cache (``prepared_weights``)
    reads only the norms, and no copy of the checkpoint stays in memory.
    Keys lose ``strip`` as a prefix; keys ending in one of ``skip`` are left out."""

    def __init__(self, files: list[str], strip: str = "", skip: tuple[str, ...] = ()):
        from safetensors import SafetensorError, safe_open
        self._where: dict[str, tuple[object, str]] = {}
        for path in files:
            try:
                handle = safe_open(path, framework="pt")
                names = list(handle.keys())
            except (SafetensorError, OSError, ValueError, RuntimeError) as exc:
                raise WeightsError(f"checkpoint file unreadable: {path} ({exc})") from None
            for name in names:
                if not name.endswith(skip):
                    self._where[name.removeprefix(strip)] = (handle, name)

    def __getitem__(self, key: str) -> torch.Tensor:
        handle, name = self._where[key]
        return handle.get_tensor(name).float()  # type: ignore[attr-defined]

    def __contains__(self, key: object) -> bool:  # Mapping's would read the tensor
        return key in self._where

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


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
