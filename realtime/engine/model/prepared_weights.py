"""The decoder's matrices as ``torch.mm`` takes them, kept per machine.

``decoder_matrices`` gives the model's weight matrices in its order (per
layer the fused QKV, O, the fused gate/up, down; then the code heads with
their weight norm folded), each [N, K] as a view ``.t()`` of a contiguous
[K, N] tensor: the layout ``matrix.Matrix`` multiplies with, which it
then takes without a copy. Built from the checkpoint that is two passes over the
decoder's 760 MB (the concatenations, then the transposes): about a second
of a warm start on a quiet 2-core Xeon.

With a ``WeightsEntry`` (a CPU start from a checkpoint with a cache
directory) the [K, N] tensors are the prepared cache's ``weights`` entry of
this model build, memory-mapped (file pages shared by the processes of one
host; read when first touched, by the warm-up's decode); on a miss they are
built, stored and used. The entry's key: the checkpoint's content id
(``prepared_cache.checkpoint_id``), the shape, the dtype, what is stored
(``FORM``: the fp32 [K, N] layout), and the machine
parts every key has (torch, CPU). Random weights are drawn in memory at every
start: never cached (their id would not say what a test did to them).

Nothing is folded into the matrices: RMSNorm's weights stay a separate
multiply, as transformers computes it, so fp32 codes stay identical to
upstream's.

Thread: build time (the model thread).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

import torch

from realtime.engine.api import WeightsKind
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache, checkpoint_id
from realtime.engine.model.shapes import ModelShape

log = logging.getLogger(__name__)

KIND = "weights"
FORM = "fp32 [K, N] fused"  # what an entry holds; a new layout is a new entry


@dataclass(frozen=True)
class WeightsEntry:
    """Where one model build's prepared matrices are kept: ``cache`` under ``key``."""

    cache: PreparedCache
    key: CacheKey

    @classmethod
    def of(cls, assets, cache_dir: str | None, device: torch.device,
           dtype: torch.dtype) -> WeightsEntry | None:
        """The entry of ``assets`` (``weights.ModelAssets``) on this machine, or
        None where nothing is kept: no cache directory, not the CPU, not fp32,
        or weights not read from a checkpoint."""
        cache = PreparedCache(cache_dir)
        if (not cache.enabled or device.type != "cpu" or dtype != torch.float32
                or assets.kind is not WeightsKind.CHECKPOINT):
            return None
        key = CacheKey.of(KIND, model=checkpoint_id(assets.source, cache), shape=str(assets.shape),
                          dtype="float32", form=FORM)
        return cls(cache, key)

    def load(self, expected: list[tuple[int, int]]) -> list[torch.Tensor] | None:
        """The stored [K, N] tensors if the entry holds exactly ``expected``
        (their [N, K] shapes, in order), else None (a miss: rebuilt)."""
        stored = self.cache.load_tensors(self.key)
        if stored is None:
            return None
        tensors = [stored.get(f"m{i}") for i in range(len(expected))]
        fits = len(stored) == len(expected) and all(
            t is not None and t.dtype == torch.float32 and t.is_contiguous()
            and tuple(t.shape) == (k, n) for t, (n, k) in zip(tensors, expected))
        if not fits:
            log.warning("prepared weights %s do not fit this model; rebuilding them", self.key.name)
            return None
        return cast(list[torch.Tensor], tensors)

    def store(self, tensors: list[torch.Tensor]) -> bool:
        return self.cache.store_tensors(self.key, {f"m{i}": t for i, t in enumerate(tensors)})


def expected_shapes(shape: ModelShape) -> list[tuple[int, int]]:
    """[N, K] of each matrix ``decoder_matrices`` gives, in its order."""
    d, i, attn = shape.hidden, shape.intermediate, shape.heads * shape.head_dim
    per_layer = [(3 * attn, d), (d, attn), (2 * i, d), (d, i)]
    return per_layer * shape.layers + [(shape.num_vq * shape.num_audio_tokens, d)]


def decoder_matrices(shape: ModelShape, gpt_state: Mapping[str, torch.Tensor],
                     heads: Callable[[], torch.Tensor], device: torch.device,
                     dtype: torch.dtype, entry: WeightsEntry | None = None) -> list[torch.Tensor]:
    """The decoder's matrices [N, K] (views of contiguous [K, N] tensors) in
    the model's order, the heads last (fp32 always: ``heads()`` builds them
    [Q * V, D]); from ``entry`` when it holds them, else built (and stored there)."""
    started = time.perf_counter()
    if entry is not None:
        loaded = entry.load(expected_shapes(shape))
        if loaded is not None:
            log.info("decoder matrices from the prepared cache (%s, %.1f MiB) in %.2f s",
                     entry.key.name, sum(t.numel() * 4 for t in loaded) / 2**20,
                     time.perf_counter() - started)
            return [t.t() for t in loaded]

    def w(name: str) -> torch.Tensor:
        return gpt_state[name].to(device=device, dtype=dtype)

    def kn(*names: str) -> torch.Tensor:
        # One matrix at a time: the fused [N, K] copy is freed before the next.
        fused = torch.cat([w(n) for n in names], 0) if len(names) > 1 else w(names[0])
        return fused.t().contiguous()

    built = []
    for i in range(shape.layers):
        p = f"layers.{i}."
        built += [kn(*(p + f"self_attn.{n}_proj.weight" for n in "qkv")),
                  kn(p + "self_attn.o_proj.weight"),
                  kn(p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight"),
                  kn(p + "mlp.down_proj.weight")]
    built.append(heads().to(device=device, dtype=torch.float32).t().contiguous())
    if entry is not None:
        made = time.perf_counter()
        stored = entry.store(built)
        log.info("decoder matrices built in %.2f s%s", made - started,
                 f"; stored in the prepared cache ({entry.key.name}) in "
                 f"{time.perf_counter() - made:.2f} s" if stored else "")
    return [t.t() for t in built]
