"""The backbone graph of a checkpoint and form, built once per machine.

``backbone_dir(assets, form, cache_dir, scratch, kv_scales, kv_id, smoothed, heads)``
returns a directory holding the backbone graph (``graph.write_backbone``) of
``assets``' GPT in ``form``, with an int8 K/V cache when ``kv_scales`` (a
function giving the scales, called only to build) is given, written from
the weights ``smoothed`` gives (``smoothing``; likewise called only to
build) when it is given, with a ``logits`` output when the code ``heads``
are given:

- a checkpoint with a cache directory: the prepared cache's entry (kind
  ``ort-backbone``), keyed by the checkpoint's content id, the model shape,
  the form, the K/V cache (``kv_id``: "fp32", or what names its scales), the
  smoothing (``smoothing.SMOOTH_ID`` or "none"), the logits ("heads" or "none"), the
  exporter's version and the onnx and onnxruntime versions (and, as every
  key, torch and the CPU); built and stored on a miss, its
  files' sums checked on a hit (a torn or edited entry is removed and built
  again);
- random weights (drawn anew at every start) or no cache: built into
  ``scratch``, a temporary directory the caller removes once the session
  holds the graph.

The build's time is a phase of the start-up timeline (``ort backbone <form>
graph built``; the session's, ``ort backbone``).
Nothing is downloaded: the graph is written from the weights in memory.

Thread: build time (the model thread).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import numpy as np
import torch

from realtime.engine import startup_clock
from realtime.engine.api import WeightsKind
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache, checkpoint_id
from realtime.engine.ort.graph import EXPORT_VERSION, write_backbone
from realtime.engine.ort.smoothing import SMOOTH_ID

log = logging.getLogger(__name__)

KIND = "ort-backbone"


def versions() -> dict[str, str]:
    """What a stored graph was made with besides the weights and form (onnx's
    version from its metadata: importing it takes 1.3 s, which a warm start
    spares)."""
    from importlib.metadata import version

    return {"export": str(EXPORT_VERSION), "onnx": version("onnx"), "onnxruntime": version("onnxruntime")}


def backbone_dir(assets, form: str, cache_dir: str | None, scratch: str,
                 kv_scales: Callable[[], np.ndarray] | None = None, kv_id: str = "fp32",
                 smoothed: Callable[[], Mapping[str, torch.Tensor]] | None = None,
                 heads: torch.Tensor | None = None) -> str:
    """A directory with the backbone graph of ``assets`` (``weights.ModelAssets``)
    in ``form``; see the module docstring."""
    cache = PreparedCache(cache_dir)
    started = time.perf_counter()

    def build(directory: str) -> None:
        write_backbone(assets.shape, assets.gpt_state if smoothed is None else smoothed(), form, directory,
                       None if kv_scales is None else kv_scales(), heads)

    if not cache.enabled or assets.kind is not WeightsKind.CHECKPOINT:
        build(scratch)
        _log_built(form, started, "not kept: " + ("no cache directory" if not cache.enabled
                                                  else f"{assets.kind.value} weights"))
        return scratch
    key = CacheKey.of(KIND, model=checkpoint_id(assets.source, cache), shape=str(assets.shape),
                      form=form, kv=kv_id, smooth="none" if smoothed is None else SMOOTH_ID,
                      logits="none" if heads is None else "heads", **versions())
    found = cache.load_dir(key)
    if found is not None:
        log.info("ort backbone %s from the prepared cache (%s) in %.2f s", form, key.name,
                 time.perf_counter() - started)
        return found
    stored = cache.store_dir(key, build)
    if stored is None:  # the cache cannot be written: build where it can
        build(scratch)
        stored = scratch
    _log_built(form, started, f"stored as {key.name}" if stored != scratch else "not kept")
    return stored


def _log_built(form: str, started: float, where: str) -> None:
    log.info("ort backbone %s built from the weights in %.1f s (%s)", form,
             time.perf_counter() - started, where)
    startup_clock.mark(f"ort backbone {form} graph built")
