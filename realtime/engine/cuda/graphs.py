"""CUDA graphs of the model step, one per shape, held in an explicit cache.

A decode graph is captured per (batch size, KV length bucket), a prefill
graph per (batch size, prompt bucket). Each owns static input tensors; a
replay copies the step's inputs into them and returns the graph's static
output, which the caller must consume before the next replay. A decode graph
is the whole decode step (``step.DeviceStep.decode``: per-slot state in,
model, sampling, codes stored, state advanced, EOS flags [B] out); its one
input is the rows' slot ids. Its attention reads K/V in place or gathers
the rows, whichever moves fewer bytes at its batch size
(``KVCache.reads_in_place``). A prefill graph is the model's prefill (hidden
states out; the runner samples the first codes right away). Shapes not captured
return None and the runner runs the same code eagerly. All graphs share one
memory pool. The runner builds its cache from its own model, KV cache and
step, and a ``Capture`` (how one graph is captured); capture happens at
start-up (``capture_all`` of the runner's ``GraphShapes``, from
``ModelRunner.warmup``) with progress logged; scratch-slot inputs make the
capture's own KV writes harmless. If a capture fails, the error is logged and
kept in ``errors`` and no further shapes are captured: everything not captured
runs eagerly.

CUDA graph rules this relies on: the captured code reads no device value on
the host and branches only on shapes (the model's decode/prefill, gather
path); every input lives in a static tensor allocated outside the graph and
every output is the graph's own tensor; no random numbers are drawn inside
(sampling's noise is a hash of seed, step and index, computed on the device). Graphs
share one pool, so one graph's replay may overwrite memory another graph's
output lives in: an output is valid only until the next replay of any graph.

Thread: the model thread. Capture itself is CUDA only; the bookkeeping
(static inputs, shared pool, which shapes exist) also runs on the CPU under
``bench/strict_graphs.py``'s stand-in, a ``Capture`` that traces.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import torch

if TYPE_CHECKING:
    from torch.cuda import _POOL_HANDLE

    from realtime.engine.model.gpt import KVCache, StaticGPT
    from realtime.engine.step import DeviceStep

log = logging.getLogger(__name__)

PREFILL_BATCHES_MAX = 8  # prompts prefilled together rarely exceed this


@dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    inputs: tuple
    output: torch.Tensor
    source: object = None  # the tensor last copied into ``inputs[0]`` (decode)


class Capture(Protocol):
    """How one graph is captured: ``fn`` run over its static ``inputs``.
    ``CudaCapture`` on a GPU; bench/strict_graphs.py's ``StrictCapture``
    traces the same code on the CPU."""

    def __call__(self, fn: Callable[..., torch.Tensor], inputs: tuple) -> _Captured: ...


class CudaCapture:
    """Real CUDA graph capture, every graph in one shared memory pool."""

    def __init__(self) -> None:
        self.pool: _POOL_HANDLE | None = None  # made at the first capture

    def __call__(self, fn: Callable[..., torch.Tensor], inputs: tuple) -> _Captured:
        if self.pool is None:
            self.pool = torch.cuda.graph_pool_handle()
        # Warm-up on a side stream, so that lazy initialisation (cuBLAS
        # handles and workspaces, attention kernel selection) happens outside
        # the capture and leaves nothing on the capturing stream.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(2):
                fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph, pool=self.pool):
            output = fn(*inputs)
        return _Captured(graph, inputs, output)


@dataclass(frozen=True)
class GraphShapes:
    """What ``capture_all`` captures: decode (batch, KV length) and prefill
    (batch, prompt length) shapes."""

    decode: tuple[tuple[int, int], ...]
    prefill: tuple[tuple[int, int], ...]

    @classmethod
    def offered(cls, batch_sizes: Sequence[int], kv_buckets: Sequence[int],
                prompt_buckets: Sequence[int], max_slots: int, max_len: int) -> GraphShapes:
        """Every shape a runner with these limits offers the scheduler."""
        batches = [b for b in batch_sizes if b <= max_slots]
        buckets = sorted({min(k, max_len) for k in kv_buckets})
        prompts = [p for p in prompt_buckets if p < max_len]
        return cls(tuple((b, k) for b in batches for k in buckets),
                   tuple((b, p) for b in batches if b <= PREFILL_BATCHES_MAX for p in prompts))


class GraphCache:
    """The graphs of one runner's model step (``model``, ``cache`` and
    ``step`` are the runner's own), each captured by ``capture``."""

    def __init__(self, model: StaticGPT, cache: KVCache, step: DeviceStep, capture: Capture):
        self.decode_graphs: dict[tuple[int, int], _Captured] = {}
        self.prefill_graphs: dict[tuple[int, int], _Captured] = {}
        self.model, self.cache, self.step = model, cache, step
        self._capture = capture
        self.nbytes = 0
        self.errors: list[str] = []

    # --- replay -----------------------------------------------------------------------

    def decode(self, slots, kv_len: int):
        """Replay the decode step of rows ``slots`` [B] (a device tensor);
        EOS flags [B], or None when (B, kv_len) was not captured."""
        entry = self.decode_graphs.get((slots.shape[0], kv_len))
        if entry is None:
            return None
        if entry.source is not slots:  # the runner keeps one tensor per batch composition
            entry.inputs[0].copy_(slots)
            entry.source = slots
        entry.graph.replay()
        return entry.output

    def prefill(self, x, slots):
        entry = self.prefill_graphs.get((x.shape[0], x.shape[1]))
        if entry is None:
            return None
        for dst, src in zip(entry.inputs, (x, slots)):
            dst.copy_(src)
        entry.graph.replay()
        return entry.output

    # --- capture ----------------------------------------------------------------------

    def capture_decode(self, batch: int, kv_len: int) -> None:
        m, c, step = self.model, self.cache, self.step
        in_place = c.reads_in_place(batch)
        inputs = (torch.full((batch,), c.scratch, dtype=torch.int64, device=m.device),)
        self.decode_graphs[(batch, kv_len)] = self._capture(
            lambda s: step.decode(s, kv_len, in_place=in_place), inputs)

    def capture_prefill(self, batch: int, length: int) -> None:
        m, c = self.model, self.cache
        dev = m.device
        inputs = (torch.zeros(batch, length, m.shape.hidden, dtype=m.dtype, device=dev),
                  torch.full((batch,), c.scratch, dtype=torch.int64, device=dev))
        self.prefill_graphs[(batch, length)] = self._capture(
            lambda x, s: m.prefill(x, s, c), inputs)

    def capture_all(self, shapes: GraphShapes) -> None:
        """Capture every shape of ``shapes``; logs progress and memory."""
        work = [("decode", b, k) for b, k in shapes.decode]
        work += [("prefill", b, p) for b, p in shapes.prefill]
        device = self.model.device
        _synchronize(device)
        before = _reserved(device)
        start = time.perf_counter()
        for i, (kind, b, n) in enumerate(work, 1):
            try:
                (self.capture_decode if kind == "decode" else self.capture_prefill)(b, n)
            except Exception as exc:  # eager fallback; a failed capture may recur
                log.exception("CUDA graphs: %s capture failed at batch %d, length %d; "
                              "%d shapes left uncaptured run eagerly", kind, b, n, len(work) - i + 1)
                self.errors.append(f"{kind} {b}x{n}: {type(exc).__name__}: {exc}")
                break
            if i == len(work) or i % max(1, len(work) // 10) == 0:
                log.info("CUDA graphs: %d/%d captured (%s batch %d, length %d), %.1f s",
                         i, len(work), kind, b, n, time.perf_counter() - start)
        _synchronize(device)
        self.nbytes = _reserved(device) - before
        log.info("CUDA graphs: %d decode + %d prefill shapes, %.1f MiB of graph memory",
                 len(self.decode_graphs), len(self.prefill_graphs), self.nbytes / 2**20)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reserved(device: torch.device) -> int:
    return torch.cuda.memory_reserved(device) if device.type == "cuda" else 0
