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
memory pool. Capture happens at start-up (``capture_all``, from
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
``tools/strict_graphs.py``'s stand-in, which overrides ``_capture``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from realtime.runtime.model import KVCache, StaticGPT
    from realtime.runtime.step import DeviceStep

log = logging.getLogger(__name__)

PREFILL_BATCHES_MAX = 8  # prompts prefilled together rarely exceed this


@dataclass
class _Captured:
    graph: torch.cuda.CUDAGraph
    inputs: tuple
    output: torch.Tensor
    source: object = None  # the tensor last copied into ``inputs[0]`` (decode)


class GraphCache:
    def __init__(self):
        self.decode_graphs: dict[tuple[int, int], _Captured] = {}
        self.prefill_graphs: dict[tuple[int, int], _Captured] = {}
        self.model: StaticGPT | None = None
        self.cache: KVCache | None = None
        self.step: DeviceStep | None = None
        self.pool = None
        self.nbytes = 0
        self.errors: list[str] = []

    def bind(self, model, cache, step=None) -> None:
        """The model and KV cache to capture; ``step`` (a ``DeviceStep``),
        for decode graphs, may come later from ``capture_all``'s runner."""
        self.model, self.cache = model, cache
        self.step = step if step is not None else self.step

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

    def _capture(self, fn, inputs: tuple) -> _Captured:
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

    def _bound(self) -> tuple[StaticGPT, KVCache]:
        if self.model is None or self.cache is None:
            raise RuntimeError("GraphCache.bind() was not called")
        return self.model, self.cache

    def capture_decode(self, batch: int, kv_len: int) -> None:
        m, c = self._bound()
        step = self.step
        if step is None:
            raise RuntimeError("decode graphs need the runner's DeviceStep (bind or capture_all)")
        in_place = c.reads_in_place(batch)
        inputs = (torch.full((batch,), c.scratch, dtype=torch.int64, device=m.device),)
        self.decode_graphs[(batch, kv_len)] = self._capture(
            lambda s: step.decode(s, kv_len, in_place=in_place), inputs)

    def capture_prefill(self, batch: int, length: int) -> None:
        m, c = self._bound()
        dev = m.device
        inputs = (torch.zeros(batch, length, m.shape.hidden, dtype=m.dtype, device=dev),
                  torch.full((batch,), c.scratch, dtype=torch.int64, device=dev))
        self.prefill_graphs[(batch, length)] = self._capture(
            lambda x, s: m.prefill(x, s, c), inputs)

    def capture_all(self, runner) -> None:
        """Capture every configured shape of ``runner``; logs progress and memory."""
        self.step = runner.step
        batches = [b for b in runner.batch_sizes if b <= runner.max_slots]
        buckets = [min(k, runner.max_len) for k in runner.kv_buckets]
        prompts = [p for p in runner.prompt_buckets if p < runner.max_len]
        work = [("decode", b, k) for b in batches for k in sorted(set(buckets))]
        work += [("prefill", b, p) for b in batches if b <= PREFILL_BATCHES_MAX for p in prompts]
        device = self._bound()[0].device
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
