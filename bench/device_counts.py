"""Count host<->device transfers and kernel launches of a piece of runtime
code, on the CPU, as that code would make them on a GPU.

Method (docs/testing.md says more). The runner is built for the device
``cpu:0`` (``DEVICE``), which torch treats as the CPU but which its
``torch_device`` spells differently from plain ``cpu``: the counter takes
``cpu:0`` for "the device" and plain ``cpu`` (or no device at all) for "the
host". Inside ``DeviceCounter``:

- a ``TorchFunctionMode`` sees the Python-level calls. A tensor made from
  host data *for the device* (``torch.tensor(list, device=cpu:0)``,
  ``host_tensor.to(cpu:0)``) is one host->device transfer (blocking unless
  ``non_blocking=True``); a read of a device tensor on the host (``.cpu()``,
  ``.to("cpu")``, ``.item()``, ``.tolist()``, ``.numpy()``, ``bool()``,
  ``int()``, ``float()``) is one device->host transfer, and always blocking.
  The host is spelled ``"cpu"`` (a string) or ``.cpu()``; a ``torch.device``
  object (code takes them from its own tensors and parameters, whose
  ``.device`` is plain ``cpu`` here) names the device the code runs on.
  Tensors made on the host inside the counted code (factories without a
  device, results of those reads, or of ops on host tensors only) are
  tracked, so reading them again costs nothing; a host tensor (not a 0-dim
  scalar) fed to an op together with device tensors is an implicit
  host->device copy;
- a ``TorchDispatchMode`` counts aten ops that launch work: every op except
  views, allocations without a fill, and ops on host tensors only. On CUDA
  most such ops are one kernel each (a few are more), so this is the eager
  launch count; a CUDA graph replay counts as one launch
  (``one_launch``, used by ``bench/strict_graphs.py``'s replay).

Thread: the caller's; one ``DeviceCounter`` at a time.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import traceback
import weakref
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

log = logging.getLogger(__name__)

DEVICE = torch.device("cpu", 0)  # "the device" for counting; plain "cpu" is the host
_HOST = torch.device("cpu")

_FACTORIES_FROM_DATA = {torch.tensor, torch.as_tensor, torch.asarray}
# Factories without data: made on the host unless given a device.
_FACTORIES = {torch.arange, torch.zeros, torch.ones, torch.full, torch.empty, torch.eye,
              torch.linspace, torch.randn, torch.rand, torch.randint}
_READS = {"cpu", "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__"}
_NOT_LAUNCHES = {"empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided",
                 "lift_fresh", "lift_fresh_copy", "_local_scalar_dense", "detach", "alias"}

_active: list[DeviceCounter] = []


@dataclass
class Counts:
    """What one counted region did. ``sites`` names where each transfer came from."""

    h2d: int = 0  # blocking host -> device copies
    h2d_async: int = 0  # non_blocking host -> device copies
    d2h: int = 0  # device -> host reads (each waits for the device)
    launches: int = 0
    sites: collections.Counter = field(default_factory=collections.Counter)

    @property
    def blocking(self) -> int:
        return self.h2d + self.d2h

    def __str__(self) -> str:
        return (f"{self.blocking} blocking transfers ({self.h2d} host->device, {self.d2h} "
                f"device->host), {self.h2d_async} async, {self.launches} launches")


def _target_of(args, kwargs) -> tuple[torch.device | None, bool]:
    """Where ``Tensor.to(...)`` sends a tensor, and whether that is the host.

    The host is spelled as a string (``"cpu"``); a ``torch.device`` object,
    or another tensor, names the device the code runs on (code takes those
    from its own parameters, whose ``.device`` is plain ``cpu`` here)."""
    target = kwargs.get("device")
    if target is None:
        for a in args[1:]:
            if isinstance(a, (str, torch.device)):
                target = a
                break
            if isinstance(a, torch.Tensor):
                return a.device, False
    if target is None:
        return None, False
    return torch.device(target), isinstance(target, str) and torch.device(target) == _HOST


def tensors_in(tree) -> list[torch.Tensor]:
    """Every tensor in nested lists, tuples and dict values."""
    if isinstance(tree, torch.Tensor):
        return [tree]
    if isinstance(tree, (list, tuple)):
        return [t for item in tree for t in tensors_in(item)]
    if isinstance(tree, dict):
        return [t for item in tree.values() for t in tensors_in(item)]
    return []


def _fresh(out, src):
    """``out``, or a new alias when a move returned ``src`` itself (here
    every "move" between host and device is CPU to CPU): the host/device
    mark then belongs to the result, not to the source."""
    return src.detach() if out is src else out


def _site() -> str:
    """The innermost project frame that made the call (for the report)."""
    frames = traceback.extract_stack(limit=16)[:-3]
    for frame in reversed(frames):
        if "/realtime/" in frame.filename:
            return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} {frame.line}"
    for frame in reversed(frames):
        if "/torch/" not in frame.filename:
            return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} {frame.line}"
    return "?"


class _Transfers(TorchFunctionMode):
    def __init__(self, counter: DeviceCounter):
        super().__init__()
        self.counter = counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        c = self.counter
        name = getattr(func, "__name__", "")
        out = func(*args, **kwargs)
        inputs = tensors_in((args, kwargs))
        if func in _FACTORIES_FROM_DATA:
            device = kwargs.get("device")
            if device is not None and torch.device(device) != _HOST:
                c.transfer("h2d", kwargs.get("non_blocking", False))
            else:
                c.mark_host(out)
            return out
        if func in _FACTORIES:
            device = kwargs.get("device")  # the host only when absent or spelled "cpu"
            if device is None or (isinstance(device, str) and torch.device(device) == _HOST):
                c.mark_host(out)
            return out
        if name in ("to", "cuda") and inputs:
            src = args[0]
            target, to_host = _target_of(args, kwargs) if name == "to" else (DEVICE, False)
            if target is None:  # a dtype change only: stays where it was
                if c.is_host(src):
                    c.mark_host(out)
                return out
            if to_host:
                if not c.is_host(src):
                    c.transfer("d2h")
                return c.mark_host(_fresh(out, src))
            if c.is_host(src):
                c.transfer("h2d", kwargs.get("non_blocking", False))
                return _fresh(out, src)  # now a device tensor
            return out
        if name in _READS and inputs:
            if not c.is_host(args[0]):
                c.transfer("d2h")
            return c.mark_host(_fresh(out, args[0]))
        if inputs:
            host = [c.is_host(t) for t in inputs]
            if all(host):
                c.mark_host(out)
            elif any(h and t.dim() > 0 for h, t in zip(host, inputs)):
                c.transfer("h2d")  # a host tensor used by a device op: an implicit copy
        return out


class _Launches(TorchDispatchMode):
    def __init__(self, counter: DeviceCounter):
        super().__init__()
        self.counter = counter

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        c = self.counter
        if c.suspended or func.is_view or func.overloadpacket.__name__ in _NOT_LAUNCHES:
            return out
        inputs = tensors_in((args, kwargs))
        if inputs and all(c.is_host(t) for t in inputs):
            return out
        c.counts.launches += 1
        return out


class DeviceCounter:
    """``with DeviceCounter() as c: ...`` then ``c.counts``. See the module docstring."""

    def __init__(self) -> None:
        self.counts = Counts()
        self.suspended = 0
        # id -> weak reference: a WeakSet would compare tensors with ==.
        self._host: dict[int, weakref.ref] = {}
        self._modes = (_Transfers(self), _Launches(self))

    def is_host(self, t: torch.Tensor) -> bool:
        ref = self._host.get(id(t))
        return ref is not None and ref() is t

    def mark_host(self, out):
        for t in tensors_in(out):
            self._host[id(t)] = weakref.ref(t)
        return out

    def transfer(self, kind: str, non_blocking: bool = False) -> None:
        if kind == "h2d" and non_blocking:
            self.counts.h2d_async += 1
        elif kind == "h2d":
            self.counts.h2d += 1
        else:
            self.counts.d2h += 1
        self.counts.sites[f"{kind}: {_site()}"] += 1

    def __enter__(self) -> DeviceCounter:
        _active.append(self)
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        _active.remove(self)


@contextlib.contextmanager
def one_launch(what: str):
    """The block is one launch (a CUDA graph replay) for every active counter."""
    for counter in _active:
        counter.counts.launches += 1
        counter.suspended += 1
    try:
        yield
    finally:
        for counter in _active:
            counter.suspended -= 1


def kv_bytes_per_step(shape, slots: int, batch: int, kv_len: int, element_size: int = 2,
                      in_place: bool | None = None) -> dict[str, int]:
    """K/V bytes a decode step moves through device memory, modelled from the
    shapes (the counter above cannot see bytes).

    ``shape``: a ``ModelShape``; ``slots``: KV slots (the scratch slot comes
    on top); ``batch``, ``kv_len``: the step's padded shape; ``element_size``:
    2 for bf16/fp16. ``in_place``: the graph path's choice, by default
    ``KVCache.reads_in_place``'s rule. Per layer, K and V of a row at one
    position are ``2 * H * Dh`` elements. Gathering reads the rows' K/V,
    writes the copy and attention reads it again (3 x B rows); in place,
    attention reads every slot once (S + 1 rows). Both write the step's new
    K/V (B positions). Returns ``read``, ``written`` and ``total`` bytes per
    step, and ``in_place`` (0 or 1).
    """
    from realtime.engine.model.gpt import reads_in_place

    row = 2 * shape.kv_heads * shape.head_dim * kv_len * element_size  # one slot, one layer
    if in_place is None:
        in_place = reads_in_place(slots, batch)
    new = 2 * shape.kv_heads * shape.head_dim * element_size * batch
    if in_place:
        read, written = (slots + 1) * row, new
    else:
        read, written = 2 * batch * row, batch * row + new
    layers = shape.layers
    return {"read": read * layers, "written": written * layers,
            "total": (read + written) * layers, "in_place": int(in_place)}
