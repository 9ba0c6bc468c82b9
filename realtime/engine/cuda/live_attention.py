"""Decode attention that reads only what is live: slot-indexed K/V, per-row
lengths read on the device, a split over the KV length for small batches.

``decode_attention(q, k, v, slots, lengths, kv_len)``: row ``b`` of ``q``
[B, H, Dh] attends over positions ``[0, lengths[b])`` of slot ``slots[b]``
in the cache halves ``k`` and ``v`` [S + 1, H, max_len, Dh] (the
``KVCache`` tensors as they lie, strided views included); returns [B, H, Dh]
in ``q``'s dtype. ``kv_len`` (the plan's bucket) is only the static bound:
shapes, the grid and the split depend on (B, kv_len) alone, so the call can
be captured in a CUDA graph, while each program reads its row's slot and
length from device memory and stops at the length. The current path
(``StaticGPT.decode``) reads the whole bucket for every row, and at large
batches every slot: at 128 slots x 2,048 positions about 16 GB a step where
the live rows need about 2.3 GB.

Two Triton kernels (flash-decoding): ``SPLITS`` programs per (row, head)
each reduce a chunk of the positions to a running max, sum and weighted
value sum in fp32; a second kernel combines the chunks. The split count
grows as the batch shrinks (``split_count``: enough programs for the
device, never a chunk below one block). ``reference_attention`` is the same
contract in plain torch (a gather and a masked SDPA), for machines without
Triton and as the tests' second opinion; tests run the kernels on the CPU
in Triton's interpreter (``TRITON_INTERPRET=1``) against the model's own
attention. Not the default: the GPU check times it against SDPA
(``tools/gpu_attention.py``) before anyone switches.

Thread: the model thread (as the model).
"""

from __future__ import annotations

import logging
import math

import torch
import torch.nn.functional as F

log = logging.getLogger(__name__)

BLOCK = 64  # positions per inner step of a program
TARGET_PROGRAMS = 2 * 132  # two waves of an H200's 132 SMs


def available(device: str = "cuda") -> str | None:
    """None when the kernels can run on ``device`` (a GPU, or on the CPU
    Triton's interpreter, which must be on before triton is first imported:
    ``TRITON_INTERPRET=1``), else why not."""
    try:
        import triton.language as tl
    except ImportError as exc:
        return f"no triton ({exc})"
    if device != "cuda":
        from triton.runtime.interpreter import InterpretedFunction
        if not isinstance(tl.max, InterpretedFunction):
            return "triton was imported without TRITON_INTERPRET=1 (its CPU interpreter)"
    return None


def split_count(batch: int, heads: int, kv_len: int, target: int = TARGET_PROGRAMS) -> int:
    """Chunks per (row, head): enough programs to fill the device, no chunk
    shorter than one block. A function of the shape alone (graph-safe)."""
    most = max(1, math.ceil(kv_len / BLOCK))
    return max(1, min(most, math.ceil(target / (batch * heads))))


def reference_attention(q, k, v, slots, lengths, kv_len: int) -> torch.Tensor:
    """The contract in plain torch: gather the rows' slots, mask positions at
    or beyond each row's length, SDPA. [B, H, Dh]."""
    keys = k[:, :, :kv_len].index_select(0, slots)
    values = v[:, :, :kv_len].index_select(0, slots)
    keep = torch.arange(kv_len, device=q.device).unsqueeze(0) < lengths.unsqueeze(1)
    mask = torch.zeros(keep.shape, dtype=q.dtype, device=q.device).masked_fill_(~keep, -float("inf"))
    out = F.scaled_dot_product_attention(q.unsqueeze(2), keys, values, attn_mask=mask[:, None, None])
    return out.squeeze(2)


def decode_attention(q, k, v, slots, lengths, kv_len: int) -> torch.Tensor:
    """The Triton kernels (module docstring); [B, H, Dh] in ``q``'s dtype."""
    b, h, dh = q.shape
    splits = split_count(b, h, kv_len)
    chunk = math.ceil(math.ceil(kv_len / splits) / BLOCK) * BLOCK
    part = torch.empty(b, h, splits, dh + 2, dtype=torch.float32, device=q.device)
    out = torch.empty_like(q)
    split_kernel, combine_kernel = _kernels()
    split_kernel[(b, h, splits)](
        q, k, v, slots, lengths, part, *q.stride(), *k.stride(), *v.stride(), *part.stride(),
        1.0 / math.sqrt(dh), CHUNK=chunk, BLOCK=BLOCK, DH=dh)
    combine_kernel[(b, h)](part, out, *part.stride(), *out.stride(), SPLITS=splits,
                           SPLITS_P2=triton_next_power_of_2(splits), DH=dh)
    return out


def triton_next_power_of_2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _kernels():
    """The kernels, imported (and so decorated: ``TRITON_INTERPRET`` is read
    then) on first use."""
    from realtime.engine.cuda import live_attention_kernels as k
    return k.split, k.combine
