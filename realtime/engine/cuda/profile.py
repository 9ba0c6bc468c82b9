"""The CUDA profile: decode batch sizes, KV slots, buckets and the graph set
from the GPU's memory and the model's sizes.

``cuda_profile(memory_bytes, shape, dtype_bytes)`` is a pure function (no
torch, no device): a slot holds, at the largest bucket, its K and V for every
layer in the model's dtype, plus the runner's per-slot hidden states (fp32)
and codes (int64). The KV budget is ``KV_FRACTION`` of the memory less
``RESERVE_BYTES`` (weights, the vocoder, graph pools, activations of the
largest batch); slots are what the budget holds, in multiples of 8, at most
``MAX_SLOTS``; the largest decode batch is half the slots (slots beyond the
batch hold jobs waiting for their audio or preempted background), at most
``MAX_ROWS``; batch sizes are powers of two below 32 and steps of about 1.5x
above (padding a batch wastes at most a third), buckets 256 to 2,048
positions. One decode graph per (batch, bucket) plus prefill graphs.
On an H200 (about 140 GiB) with ChatTTS in bf16: 512 slots, batches up to 256.

``build_runner`` applies it on CUDA to the shapes the configuration left
to the hardware (``RuntimeOptions.auto_shapes``); the CPU profile (the
configuration's defaults) is unchanged.

Thread: any (pure).
"""

from __future__ import annotations

from dataclasses import dataclass

from realtime.engine.model.shapes import ModelShape

KV_FRACTION = 0.6
RESERVE_BYTES = 4 * 2**30
MAX_SLOTS = 512
MAX_ROWS = 256
MIN_SLOTS = 2  # one for the interactive lane, one for background
LADDER = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
BUCKETS = (256, 512, 1024, 2048)
PREFILL_GRAPH_BATCHES = 8  # realtime.engine.cuda.graphs.PREFILL_BATCHES_MAX
PROMPT_BUCKETS = 4  # DEFAULT_PROMPT_BUCKETS


@dataclass(frozen=True)
class CudaProfile:
    """The shapes chosen, and the figures they came from (for the log)."""

    batch_sizes: tuple[int, ...]
    kv_buckets: tuple[int, ...]
    max_slots: int
    slot_bytes: int
    kv_budget_bytes: int
    memory_bytes: int

    @property
    def decode_graphs(self) -> int:
        return len(self.batch_sizes) * len(self.kv_buckets)

    @property
    def prefill_graphs(self) -> int:
        return sum(b <= PREFILL_GRAPH_BATCHES for b in self.batch_sizes) * PROMPT_BUCKETS

    def describe(self) -> str:
        return (f"{self.memory_bytes / 2**30:.1f} GiB, KV budget {self.kv_budget_bytes / 2**30:.1f} GiB "
                f"at {self.slot_bytes / 2**20:.0f} MiB per slot: {self.max_slots} slots, batch sizes "
                f"{','.join(map(str, self.batch_sizes))}, KV buckets {','.join(map(str, self.kv_buckets))}, "
                f"{self.decode_graphs} decode + {self.prefill_graphs} prefill graphs")


def slot_bytes(shape: ModelShape, positions: int, dtype_bytes: int) -> int:
    """Device bytes one KV slot costs at ``positions``: K and V of every
    layer, the hidden states (fp32) and the codes (int64)."""
    kv = shape.layers * 2 * shape.kv_heads * shape.head_dim * dtype_bytes
    return positions * (kv + shape.hidden * 4 + shape.num_vq * 8)


def cuda_profile(memory_bytes: int, shape: ModelShape, dtype_bytes: int) -> CudaProfile:
    """The profile for a GPU of ``memory_bytes`` (module docstring)."""
    buckets = tuple(b for b in BUCKETS if b <= shape.max_positions) or (shape.max_positions,)
    per_slot = slot_bytes(shape, max(buckets), dtype_bytes)
    budget = max(0, int(memory_bytes * KV_FRACTION) - RESERVE_BYTES)
    slots = min(MAX_SLOTS, budget // per_slot)
    slots = max(MIN_SLOTS, slots - slots % 8 if slots >= 8 else slots)
    rows = min(MAX_ROWS, max(1, slots // 2))
    batches = tuple(b for b in LADDER if b <= rows)
    return CudaProfile(batch_sizes=batches, kv_buckets=buckets, max_slots=slots,
                       slot_bytes=per_slot, kv_budget_bytes=budget, memory_bytes=memory_bytes)
