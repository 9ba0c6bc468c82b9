"""The GPU check's attention section: the model's decode attention (SDPA over
the bucket, gathered or in place, with the pinned backend) against the
live-length kernels (``realtime.engine.cuda.live_attention``), timed on the same
one-layer cache.

Per (batch, KV length) in ``shapes`` the rows take distinct slots of a cache
of ``slots`` slots with lengths spread over [kv_len / 8, kv_len] (what a
serving batch holds: most rows shorter than the bucket); both paths run
``repeats`` times after a warm call, the median time is kept, and their
outputs are compared. Bytes: what each must read (bucket x rows, or every
slot in place, against the live lengths), from the shapes. Where Triton
cannot run the entry says why and the section still passes (the current
path stays the default either way).

Thread: the caller's.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

import torch

from realtime.engine.model.gpt import KVCache, StaticGPT
from realtime.engine.model.shapes import ModelShape


def _timed(fn, device: str, repeats: int) -> tuple[torch.Tensor, float]:
    out = fn()  # plans, compilation
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        out = fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


def attention_section(shape: ModelShape, device: str, dtype: torch.dtype, slots: int,
                      shapes, repeats: int) -> dict:
    from realtime.engine.cuda import live_attention as la
    why = la.available(device)  # on the CPU: Triton's interpreter (TRITON_INTERPRET=1)
    one_layer = dataclasses.replace(shape, layers=1)
    max_len = max(kv for _, kv in shapes)
    cache = KVCache(one_layer, slots, max_len, dtype, torch.device(device))
    cache.k[0].normal_()
    cache.v[0].normal_()
    gen = torch.Generator().manual_seed(0)
    out: dict = {"live_kernels": why or "triton", "slots": slots, "dtype": str(dtype).removeprefix("torch.")}
    for batch, kv_len in shapes:
        if batch <= slots:
            out[f"b{batch}_kv{kv_len}"] = _one_shape(cache, shape, batch, kv_len, gen, repeats, why is None)
    return out


def _one_shape(cache: KVCache, shape: ModelShape, batch: int, kv_len: int, gen: torch.Generator,
               repeats: int, live: bool) -> dict:
    from realtime.engine.cuda import live_attention as la
    device = cache.k[0].device.type
    dtype = cache.k[0].dtype
    ids = torch.randperm(cache.slots, generator=gen)[:batch].to(device)
    lengths = torch.randint(max(1, kv_len // 8), kv_len + 1, (batch,), generator=gen).to(device)
    pos = lengths - 1
    q = torch.randn(batch, shape.heads, shape.head_dim, generator=gen).to(device, dtype)
    in_place = cache.reads_in_place(batch)
    mask = StaticGPT._mask(ids, pos, cache, kv_len, in_place)
    k, v = cache.k[0], cache.v[0]

    def current():
        if in_place:
            return StaticGPT._attend_in_place(q, ids, k, v, mask, kv_len)
        keys, values = k[:, :, :kv_len].index_select(0, ids), v[:, :, :kv_len].index_select(0, ids)
        return torch.nn.functional.scaled_dot_product_attention(q.unsqueeze(2), keys, values, attn_mask=mask)

    want, sdpa_s = _timed(current, device, repeats)
    row_bytes = 2 * shape.heads * shape.head_dim * torch.empty(0, dtype=dtype).element_size()
    rows = (cache.slots + 1) if in_place else batch
    entry = {"current_path": "in place" if in_place else "gathered", "current_us": sdpa_s * 1e6,
             "current_read_mib": rows * kv_len * row_bytes / 2**20,
             "live_read_mib": int(lengths.sum()) * row_bytes / 2**20}
    if live:
        try:
            got, live_s = _timed(lambda: la.decode_attention(q, k, v, ids, lengths, kv_len), device, repeats)
        except Exception as exc:
            if device != "cpu":
                raise
            # Triton's interpreter, the CPU's stand-in, lags numpy (2.5 broke it);
            # tests/test_live_attention.py checks the kernels with the suite's numpy.
            entry["live_unavailable"] = f"Triton's interpreter: {type(exc).__name__}: {str(exc)[:160]}"
            return entry
        entry.update(live_us=live_s * 1e6, speedup=sdpa_s / live_s,
                     splits=la.split_count(batch, shape.heads, kv_len),
                     max_abs_diff=float((got.float() - want.float().reshape(got.shape)).abs().max()))
    return entry
