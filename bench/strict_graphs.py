"""A strict CPU stand-in for CUDA graph capture, so CI checks the captured code.

``StrictCapture`` is a ``realtime.engine.cuda.graphs.Capture``: given to
``build_runner`` (``capture=``), the runner's real ``GraphCache`` does the
shapes, static inputs and replay, and only the capture of one graph is
replaced. Where CUDA would record kernels, the stand-in traces
the captured function (the model's real ``decode``/``prefill``) with
``make_fx`` into a fixed graph of aten ops, under ``CaptureGuard``, and
replays that graph. What a real capture would break on fails here too:

- host synchronisation (``item``, ``tolist`` of a device value, ``bool`` of a
  tensor, ``nonzero``, boolean-mask indexing, ``masked_select``,
  ``unique``, ``equal``...): ``CaptureViolation`` at capture;
- tensors made from host data inside the capture (``torch.tensor(list)``),
  tensors allocated on another device than the capture's (a forgotten
  ``device=``), copies to the host, random draws, resizing a buffer,
  attention over mixed dtypes (which CUDA's kernels refuse and the CPU's
  accept): ``CaptureViolation`` at capture;
- data-dependent Python control flow: a branch on a device value needs a
  host read (above); a branch on anything else is frozen into the trace, so
  a replay at other slots and positions stops matching eager (the tests
  compare them);
- outputs read after another replay: every replay, and every capture,
  poisons the outputs of all other graphs of the capture (NaN; True for the
  decode step's EOS flags; one memory pool: on CUDA the next replay may
  overwrite them), and a new graph's output is poisoned until its first
  replay (a capture runs nothing);
- inputs not passed through the static input tensors: the trace holds the
  tensors it was captured with, as a CUDA graph holds their addresses.

``CaptureGuard(device)`` is also usable on its own around any code that
must run without host syncs (for example on the ``meta`` device).

Thread: the caller's (tests, on the model thread's rules).
"""

from __future__ import annotations

import logging
import math

import torch
from torch.fx.experimental.proxy_tensor import make_fx
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from bench import device_counts
from realtime.engine.cuda.graphs import _Captured

log = logging.getLogger(__name__)

aten = torch.ops.aten


class CaptureViolation(AssertionError):
    """The captured code does something a CUDA graph cannot replay."""


def _packets(*ops: str) -> set:
    """The overload packets named ``ops`` that this torch build has."""
    return {getattr(aten, name) for name in ops if hasattr(aten, name)}


# Ops whose result the host must wait for (device -> host reads).
HOST_SYNC = _packets("_local_scalar_dense", "item", "nonzero", "nonzero_static", "masked_select",
                     "unique", "_unique", "_unique2", "unique_consecutive", "unique_dim", "equal",
                     "is_nonzero", "allclose", "argwhere", "_assert_async", "bincount", "histc")
# Tensors from host data: a blocking host -> device copy frozen into the graph.
HOST_DATA = _packets("lift_fresh", "lift_fresh_copy", "_to_copy_from_host")
RANDOM = _packets("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm",
                  "uniform", "normal", "bernoulli", "multinomial", "exponential", "geometric",
                  "cauchy", "log_normal", "random", "poisson", "native_dropout")
RESIZE = _packets("resize", "resize_as", "set")


# Python-level reads of a tensor's values: on a CPU tensor some never reach
# the dispatcher (``tolist``, ``numpy``), on a device tensor each is a sync.
PYTHON_READS = frozenset({"item", "tolist", "numpy", "cpu", "__bool__", "__int__", "__float__",
                          "__index__", "__complex__"})


class _PythonReads(TorchFunctionMode):
    def __init__(self, guard: CaptureGuard):
        super().__init__()
        self.guard = guard

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        to_host = name == "to" and any(
            isinstance(a, (str, torch.device)) and torch.device(a).type == "cpu"
            and self.guard.device is not None and self.guard.device.type != "cpu"
            for a in (*args[1:], kwargs.get("device")) if a is not None)
        if name in PYTHON_READS or to_host:
            self.guard._refuse(name, "reads tensor values on the host (a sync; not capturable)")
        if func is torch.nn.functional.scaled_dot_product_attention:
            self._check_attention(*args[:3], kwargs.get("attn_mask", args[3] if len(args) > 3 else None))
        return func(*args, **kwargs)

    def _check_attention(self, q, k, v, mask) -> None:
        # CUDA's attention kernels refuse mixed dtypes that the CPU and meta
        # kernels accept (a float32 mask beside bf16 queries, for one).
        dtypes = {q.dtype, k.dtype, v.dtype}
        if mask is not None and mask.dtype != torch.bool:
            dtypes.add(mask.dtype)
        if len(dtypes) > 1:
            self.guard._refuse("scaled_dot_product_attention",
                               f"mixes dtypes {sorted(map(str, dtypes))} (refused on CUDA)")


class CaptureGuard(TorchDispatchMode):
    """Raises ``CaptureViolation`` on every op a CUDA graph capture cannot
    hold (see the module docstring). ``device``: where every tensor an op
    reads or makes must live (None: any one device, checked per op)."""

    def __init__(self, device: torch.device | str | None = None, what: str = "captured code"):
        super().__init__()
        self.device = None if device is None else torch.device(device)
        self.what = what
        self.ops = 0
        self.violations = 0

    def __enter__(self):
        self._reads = _PythonReads(self)
        self._reads.__enter__()
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._reads.__exit__(*exc)

    def _refuse(self, func, why: str) -> None:
        self.violations += 1
        raise CaptureViolation(f"{self.what}: {func} {why}")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.ops += 1
        packet = func.overloadpacket
        if packet in HOST_SYNC:
            self._refuse(func, "reads a device value on the host (a sync; not capturable)")
        if packet in HOST_DATA:
            self._refuse(func, "makes a tensor from host data (a host -> device copy per call)")
        if packet in RANDOM:
            self._refuse(func, "draws random numbers (the graph would replay the same draw)")
        if packet in RESIZE:
            self._refuse(func, "resizes a tensor (its address would change under the graph)")
        if packet in (aten.index, aten.index_put, aten.index_put_, aten._index_put_impl_):
            indices = args[1] if len(args) > 1 else kwargs.get("indices", ())
            if any(t is not None and t.dtype in (torch.bool, torch.uint8) for t in indices):
                self._refuse(func, "indexes with a boolean mask (an implicit nonzero: a sync)")
        out = func(*args, **kwargs)
        # A 0-dim CPU tensor input is a scalar argument, which kernels take by value.
        devices = {t.device for t in device_counts.tensors_in((args, kwargs))
                   if not (t.dim() == 0 and t.device.type == "cpu")}
        devices |= {t.device for t in device_counts.tensors_in(out)}
        if self.device is not None:
            devices.add(self.device)
        if len(devices) > 1:
            self._refuse(func, f"mixes devices {sorted(str(d) for d in devices)} "
                               "(a transfer, or a tensor allocated on the wrong device)")
        return out


def poison(output: torch.Tensor) -> None:
    """Fill a graph's output with what no step makes: NaN, or True for flags
    (every row "finished"), or -1 for integers."""
    if output.is_floating_point():
        output.fill_(math.nan)
    elif output.dtype == torch.bool:
        output.fill_(True)
    else:
        output.fill_(-1)


class StrictGraph:
    """Stands in for ``torch.cuda.CUDAGraph``: ``replay`` runs the traced
    graph on the static inputs and copies its result into the static output,
    after poisoning every other graph's output (the shared pool)."""

    def __init__(self, traced: torch.fx.GraphModule, inputs: tuple, output: torch.Tensor,
                 pool: list[StrictGraph]):
        self.traced, self.inputs, self.output, self.pool = traced, inputs, output, pool
        self.replays = 0
        pool.append(self)

    def poison_others(self) -> None:
        for other in self.pool:
            if other is not self:
                poison(other.output)

    @torch.no_grad()
    def replay(self) -> None:
        self.replays += 1
        with device_counts.one_launch("graph replay"):  # the poisoning is the harness's own
            self.poison_others()
            self.output.copy_(self.traced(*self.inputs))


class StrictCapture:
    """A ``Capture`` whose graphs are strict traces (see the module docstring);
    pass it to ``build_runner`` to run the graph path on the CPU."""

    def __init__(self) -> None:
        self.strict_pool: list[StrictGraph] = []

    def __call__(self, fn, inputs: tuple) -> _Captured:
        with torch.no_grad():
            for _ in range(2):  # warm-up outside the capture, as the real one does
                fn(*inputs)
            device = inputs[0].device
            with CaptureGuard(device, what=f"capture of {getattr(fn, '__name__', fn)}"):
                traced = make_fx(fn)(*inputs)
                output = traced(*inputs)  # the graph's own output tensor
        graph = StrictGraph(traced, inputs, output, self.strict_pool)
        graph.poison_others()
        poison(output)  # a capture runs nothing: no valid output yet
        log.debug("strict capture: %d aten ops", len(traced.graph.nodes))
        return _Captured(graph, inputs, output)  # type: ignore[arg-type]
