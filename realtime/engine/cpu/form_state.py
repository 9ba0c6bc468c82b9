"""The plain tensors a quantized or converted GEMM form is made of, checked on the way in.

A form that a cache can keep (``prepared_forms``) has three more members
beside ``cpu.gemm.Packed``'s:

- ``state_form()`` (a classmethod): a line saying what ``state()`` holds
  (layout, value range, dtypes), part of the cache key: a new layout is a new
  entry, and two forms whose states are the same (fbgemm's and oneDNN's
  per-channel int8) share one;
- ``state()``: its tensors by name, plain strided CPU tensors (an opaque
  packed form gives the plain ones it is packed from: fbgemm's
  ``linear_unpack``, oneDNN's ``to_dense``);
- ``from_state(state, shape, rows)`` (a classmethod): the same form again
  from those tensors, for a weight of ``shape`` [N, K], without quantizing:
  what a form made from the weight would multiply by, bit for bit. Raises
  ``ValueError`` when a tensor is missing or not of the expected shape, dtype
  and layout (a damaged or foreign entry: a miss).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import torch

Spec = Mapping[str, tuple[tuple[int, ...], torch.dtype]]


def check(state: Mapping[str, object], spec: Spec) -> dict[str, torch.Tensor]:
    """``state``'s tensors if it holds exactly ``spec``'s names, each of that
    shape and dtype, contiguous on the CPU; else ``ValueError``."""
    if set(state) != set(spec):
        raise ValueError(f"state holds {sorted(state)}, expected {sorted(spec)}")
    out = {}
    for name, (shape, dtype) in spec.items():
        t = state[name]
        if not (isinstance(t, torch.Tensor) and tuple(t.shape) == shape and t.dtype == dtype
                and t.device.type == "cpu" and t.is_contiguous()):
            got = (tuple(t.shape), t.dtype) if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"state tensor {name}: {got}, expected {shape} {dtype}")
        out[name] = t
    return out


def cacheable(form_class: type) -> bool:
    """Whether forms of ``form_class`` can be kept as plain tensors."""
    return all(hasattr(form_class, m) for m in ("state_form", "state", "from_state"))


class FormSource(Protocol):
    """Where ``cpu.plan`` takes forms kept by an earlier start from
    (``prepared_forms.FormEntries``)."""

    def cached(self, shape: tuple[int, ...], count: int, j: int, backend: str,
               rows: int) -> Any | None:
        """Form ``backend`` (a ``cpu.gemm.Packed``) of the ``j``-th of the
        ``count`` matrices of ``shape`` [N, K], or None: made from the weight."""
