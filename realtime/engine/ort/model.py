"""``OrtGPT``: ChatTTS's GPT with its backbone on ONNX Runtime (the CPU engine ``ort``).

The same contract as the torch decoder (``model.StaticGPT``) for the runner,
its device step and the refine pass: ``prefill(x, slots, cache)`` and
``decode(x, slots, pos, cache, kv_len)`` over the scheduler's slots, hidden
states in fp32; ``cache`` is this model's ``kv.OrtKV`` (``new_cache``). The
backbone (the 20 Llama layers and the final norm) runs as one ONNX graph
(``graph``: fused QKV and gate/up, GroupQueryAttention, MatMulNBits in int4,
MatMulInteger in int8 from weights with the activations' outlier channels
folded in: ``smoothing``) in ``form``, over an int8 K/V cache in the int
forms where it is the faster on this CPU (``kv_choice``; scales calibrated
from the checkpoint, ``kv_scales``; fp32 keeps fp32 K/V); the ends
(embeddings, sampling) stay the torch ones, computed as upstream computes
them (``gpt_ends``). The code heads are torch's too, except a decode step's:
the graph computes those logits in its run, on ONNX Runtime's threads (a
[Q * V, D] fp32 matrix read once more from memory: on one torch thread after
the backbone has swept the caches, it cost twice the time), and ``logits`` of
the hidden states ``decode`` just returned hands them out. Prompts of
the int forms run on the int8-dynamic graph where it measured faster
(``prompts``; smoothed too), each prompt alone: a job's prompt and first
code do not depend on the prompts prefilled beside it.

A step places its rows (``OrtKV.place``: a window of adjacent K/V rows,
moved only when the batch changed), runs them in row order and gives the
hidden states back in the caller's order. Rows attend to their own lengths
(a prefill's prompts right-padded, as the torch decoder pads them; a
decode's rows each at its own position), so rows of different lengths share
a batch.

Thread: the model thread.
"""

from __future__ import annotations

import functools
import logging
import os
import tempfile
import time

import numpy as np
import torch

from realtime.engine import startup_clock
from realtime.engine.model.gpt_ends import GptEnds, embeddings, head_weights
from realtime.engine.model.matrix import Matrix
from realtime.engine.ort import kv_choice, kv_scales, smoothing
from realtime.engine.ort.backbone import OrtBackbone
from realtime.engine.ort.graph_entry import backbone_dir
from realtime.engine.ort.kv import OrtKV
from realtime.engine.ort.prompts import prompt_backbone

log = logging.getLogger(__name__)


class OrtGPT(GptEnds):
    """The GPT of ``assets`` (``weights.ModelAssets``) with its backbone in
    ``form`` (``graph.FORMS``) on ``threads`` ONNX Runtime threads; ``prompts``:
    False keeps prompts on the decode graph (a model built only to be timed)."""

    engine = "ort"

    def __init__(self, assets, form: str, threads: int, spin: bool, cache_dir: str | None,
                 prompts: bool = True):
        shape = assets.shape
        if shape.kv_heads != shape.heads:
            raise ValueError("grouped-query attention is not used by ChatTTS and not supported")
        self.shape, self.device, self.dtype, self.form = shape, torch.device("cpu"), torch.float32, form
        self.emb_text, self.emb_code = embeddings(assets.embed, self.device, self.dtype)
        started = time.perf_counter()
        # The int8 graphs' weights, folded on the first build that asks (decode or prompt graph).
        smoothed = functools.cache(functools.partial(smoothing.smoothed, self, assets))
        # fp32 keeps its exact K/V; the int forms an int8 cache where it pays on this CPU
        int_kv = form != "fp32" and kv_choice.int8_cache_pays(shape, threads, spin, cache_dir)
        heads = head_weights(assets.embed)
        self._step: tuple[torch.Tensor, torch.Tensor] | None = None  # a decode's (hidden, logits)
        with tempfile.TemporaryDirectory(prefix="ort-backbone-") as scratch:
            path = backbone_dir(assets, form, cache_dir, scratch,
                                (lambda: kv_scales.calibrate(self, assets)) if int_kv else None,
                                kv_scales.KV_ID if int_kv else "fp32",
                                smoothed if form == "int8" else None, heads)
            self.backbone = OrtBackbone(path, threads, spin)  # holds the graph: scratch may go
            self.kv_scales = kv_scales.load(path)
            graph_bytes = sum(os.path.getsize(os.path.join(path, n)) for n in os.listdir(path))
        self.heads = Matrix(heads)
        self.weight_nbytes = graph_bytes + self.heads.nbytes
        startup_clock.mark("ort backbone")
        log.info("ort backbone %s: %.1f MiB graph, session ready in %.1f s (%d threads, spinning %s)",
                 form, graph_bytes / 2**20, time.perf_counter() - started, threads, "on" if spin else "off")
        self.prompts = (prompt_backbone(assets, form, self.backbone, threads, spin, cache_dir, graph_bytes,
                                        self.kv_scales, smoothed)
                        if prompts else None)

    def new_cache(self, slots: int, max_len: int, max_batch: int) -> OrtKV:
        return OrtKV(self.shape, slots, max_len, max_batch, self.backbone.kv_dtype)

    def prefill(self, x: torch.Tensor, slots: torch.Tensor, cache: OrtKV,
                lengths: list[int] | None = None) -> torch.Tensor:
        """Prompts from position 0: ``x`` [P, L, D] right-padded, ``slots`` [P],
        ``lengths`` [P] each prompt's own (None: all ``L``); fp32 hidden
        [P, L, D] (padding positions: garbage as the torch decoder's, or zeros
        where each prompt runs alone on the prompt graph)."""
        p, length, _ = x.shape
        placed = cache.place(slots.tolist(), [0] * p)
        order = placed.order
        if self.prompts is None:
            mask = np.ones((p, length), dtype=np.int64)
            hidden = _unordered(self.backbone.run(_rows(x, order), mask, cache, placed.base), order)
        else:
            hidden = torch.zeros(p, length, self.shape.hidden, dtype=torch.float32)
            for i, row in enumerate(placed.rows):
                n = length if lengths is None else lengths[i]
                hidden[i, :n] = self.prompts.run(x[i:i + 1, :n].to(torch.float32).contiguous(),
                                                 np.ones((1, n), dtype=np.int64), cache, row)[0]
        cache.written(placed, [length] * p)
        return hidden

    def decode(self, x: torch.Tensor, slots: torch.Tensor, pos: torch.Tensor, cache: OrtKV,
               kv_len: int, first_slot: int | None = None, in_place: bool = False) -> torch.Tensor:
        """One position per row: ``x`` [B, D] at ``pos`` [B] of ``slots`` [B];
        attends over positions [0, pos] of each row (``kv_len``, ``first_slot``
        and ``in_place`` are the torch decoder's read strategies: unused).
        Returns fp32 hidden [B, D]."""
        positions = pos.tolist()
        placed = cache.place(slots.tolist(), positions)
        order = placed.order
        ordered = np.array([positions[i] for i in order], dtype=np.int64)
        mask = (np.arange(max(positions) + 1) <= ordered[:, None]).astype(np.int64)
        logits = (torch.empty(len(positions), self.backbone.logits_width, dtype=torch.float32)
                  if self.backbone.has_logits else None)
        hidden = self.backbone.run(_rows(x, order).unsqueeze(1), mask, cache, placed.base, logits)
        cache.written(placed, [n + 1 for n in positions])
        hidden = _unordered(hidden[:, 0], order)
        if logits is not None:
            shape = self.shape
            self._step = (hidden, _unordered(logits, order).view(-1, shape.num_vq, shape.num_audio_tokens))
        return hidden

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The graph's logits when ``hidden`` is what ``decode`` just returned,
        else the torch heads' (a prompt's last position, the refine pass)."""
        if self._step is not None and hidden is self._step[0]:
            return self._step[1]
        return super().logits(hidden)


def _rows(x: torch.Tensor, order: list[int]) -> torch.Tensor:
    """``x``'s rows in ``order``, contiguous fp32 (no copy when already so)."""
    if order != list(range(len(order))):
        x = x[torch.tensor(order)]
    return x.to(torch.float32).contiguous()


def _unordered(hidden: torch.Tensor, order: list[int]) -> torch.Tensor:
    """Rows computed in ``order`` back in the caller's order."""
    if order == list(range(len(order))):
        return hidden
    out = torch.empty_like(hidden)
    out[torch.tensor(order)] = hidden
    return out
