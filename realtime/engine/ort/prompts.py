"""Which graph runs prompts: the decode graph, or the int8-dynamic one where it is faster.

A prompt is many rows through each matrix; a decode step one row a stream.
ONNX Runtime's ``MatMulNBits`` (the int4 decode graph) runs many rows at
about fp32's speed, while its integer GEMM behind ``DynamicQuantizeMatMul``
(``graph.PROMPT_FORM``) uses VNNI or AMX: a 64-token prompt in 28 ms against
111 ms (int4) on the Intel Xeon of docs/runtime.md. The int8 decode graph
runs the same GEMM, with each row scaled on its own: a few more passes over
a prompt's many rows (31 ms against 25 for 48 tokens). A sentence's prompt is one
step that stalls every stream, so it is worth its own graph.

``prompt_backbone(assets, form, decode, threads, spin, cache_dir)``: for an
int decode ``form``, the prompt graph's session (``graph_entry.backbone_dir``
keeps it per checkpoint like the decode graph) when it runs a
``PROMPT_TOKENS``-token prompt faster than ``decode`` (the decode graph's
session) does, rounds alternating, medians; else None. The verdict is kept
in the prepared cache per machine (kind ``ort-prompts``), so a later start
builds the prompt graph only where it won. Tiny models (tests) are not
timed: the prompt graph serves. fp32 keeps its own graph for prompts.

Thread: build time (the model thread).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import tempfile
from collections.abc import Callable, Mapping

import numpy as np
import torch

from realtime.engine import startup_clock
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache
from realtime.engine.ort.backbone import OrtBackbone
from realtime.engine.ort.graph import EXPORT_VERSION, PROMPT_FORM
from realtime.engine.ort.graph_entry import backbone_dir
from realtime.engine.ort.kv import OrtKV
from realtime.engine.timing import alternating_medians, ms_per_call

log = logging.getLogger(__name__)

KIND = "ort-prompts"
INT_FORMS = ("int4", "int8")
PROMPT_TOKENS = 48  # a sentence's prompt: ~25 tokens of ChatTTS's tokenizer, ~55 of random weights'
ROUNDS = 3
TINY_BYTES = 16 * 2**20  # graphs below this are not timed (the tests' tiny models)


def prompt_backbone(assets, form: str, decode: OrtBackbone, threads: int, spin: bool,
                    cache_dir: str | None, graph_bytes: int,
                    kv_scales: np.ndarray | None = None,
                    smoothed: Callable[[], Mapping[str, torch.Tensor]] | None = None) -> OrtBackbone | None:
    """The session prompts run on besides ``decode`` (None: ``decode`` runs
    them); see the module docstring. ``graph_bytes``: the decode graph's size;
    ``kv_scales``: its int8 K/V cache's scales, which the prompt graph's cache
    then shares (None: fp32); ``smoothed``: the weights to write it from
    (``graph_entry.backbone_dir``)."""
    if form not in INT_FORMS:
        return None
    if graph_bytes < TINY_BYTES:
        return _session(assets, threads, spin, cache_dir, kv_scales, smoothed)
    import onnxruntime

    cache = PreparedCache(cache_dir)
    key = CacheKey.of(KIND, form=form, shape=str(assets.shape), threads=threads,
                      onnxruntime=onnxruntime.__version__, tokens=PROMPT_TOKENS, export=EXPORT_VERSION,
                      kv="fp32" if kv_scales is None else "int8")  # the prompt writes that cache too
    doc = cache.load_json(key)
    if isinstance(doc, dict) and doc.get("prompts") in (form, PROMPT_FORM):
        log.info("ort prompts on the %s graph (measured earlier on this machine: %s)", doc["prompts"],
                 doc.get("ms"))
        if doc["prompts"] != PROMPT_FORM:
            return None
        return _session(assets, threads, spin, cache_dir, kv_scales, smoothed)
    prompts = _session(assets, threads, spin, cache_dir, kv_scales, smoothed)
    ms = measure({form: decode, PROMPT_FORM: prompts}, assets.shape)
    winner = min(ms, key=ms.__getitem__)
    cache.store_json(key, {"prompts": winner, "ms": ms})
    log.info("ort prompts on the %s graph (a %d-token prompt: %s)", winner, PROMPT_TOKENS,
             ", ".join(f"{name} {t:.1f} ms" for name, t in ms.items()))
    return prompts if winner == PROMPT_FORM else None


def measure(sessions: dict[str, OrtBackbone], shape, tokens: int = PROMPT_TOKENS) -> dict[str, float]:
    """Median ms of a ``tokens``-token prompt per session, rounds alternating."""
    kv = OrtKV(shape, 1, tokens, 1, next(iter(sessions.values())).kv_dtype)
    x = torch.randn(1, tokens, shape.hidden, generator=torch.Generator().manual_seed(0))
    mask = np.ones((1, tokens), dtype=np.int64)
    for session in sessions.values():
        session.run(x, mask, kv, 0)  # warm: this shape's first run
    ms = alternating_medians({name: ms_per_call(functools.partial(session.run, x, mask, kv, 0))
                              for name, session in sessions.items()}, ROUNDS)
    return {name: round(t, 2) for name, t in ms.items()}


def _session(assets, threads: int, spin: bool, cache_dir: str | None,
             kv_scales: np.ndarray | None,
             smoothed: Callable[[], Mapping[str, torch.Tensor]] | None) -> OrtBackbone:
    kv_id = "fp32" if kv_scales is None else "int8-" + hashlib.sha256(kv_scales.tobytes()).hexdigest()[:16]
    with tempfile.TemporaryDirectory(prefix="ort-prompts-") as scratch:
        session = OrtBackbone(backbone_dir(assets, PROMPT_FORM, cache_dir, scratch,
                                           None if kv_scales is None else lambda: kv_scales, kv_id,
                                           smoothed),
                              threads, spin)
    startup_clock.mark("ort prompts")
    return session
