"""The ONNX Runtime backbone's KV cache: preallocated rows bound in place.

``OrtKV`` holds, per layer, one K and one V buffer [R, H, max_len, Dh]
(fp32, or int8 for a graph with an int8 cache; from calloc'd pages:
untouched rows cost no memory) and the
``rows.SlotRows`` map from the scheduler's slots to those rows. A step
``place``s its batch (moving rows only when the batch's composition
changed) and binds the window [base, base + B) of every buffer as the
graph's past and present K/V: GroupQueryAttention writes each row's new K/V
at its own position in place (past and present share the buffer), so a
steady step copies nothing.

It stands where the torch decoder's ``model.KVCache`` does for the runner
(``slots``, ``scratch``, ``max_len``, ``nbytes``); the scratch slot's rows
(padding) take free rows of each window instead of one shared row.

Thread: the model thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import numpy as np

from realtime.engine.model.shapes import ModelShape
from realtime.engine.ort.rows import Placement, SlotRows

log = logging.getLogger(__name__)


class OrtKV:
    """K/V rows for ``slots`` slots and batches up to ``max_batch`` rows."""

    def __init__(self, shape: ModelShape, slots: int, max_len: int, max_batch: int,
                 dtype: type = np.float32):
        self.slots, self.scratch, self.max_len = slots, slots, max_len
        self.heads, self.head_dim, self.layers = shape.kv_heads, shape.head_dim, shape.layers
        self.dtype = np.dtype(dtype)
        rows = slots + max_batch
        size = (rows, shape.kv_heads, max_len, shape.head_dim)
        self.k: list[np.ndarray] = [np.zeros(size, dtype=dtype) for _ in range(shape.layers)]
        self.v: list[np.ndarray] = [np.zeros(size, dtype=dtype) for _ in range(shape.layers)]
        self.row_bytes = self.k[0][0].nbytes
        self.nbytes = 2 * shape.layers * rows * self.row_bytes
        self.map = SlotRows(rows)
        self.moved_positions = 0  # all moves so far (benches, tests)
        self.last: Placement | None = None  # the latest step's rows

    @property
    def live(self) -> Callable[[], set[int]] | None:
        return self.map.live

    @live.setter
    def live(self, slots: Callable[[], set[int]] | None) -> None:
        """Who holds slots (the runner's jobs and refine passes): rows of
        other slots are free for the next move."""
        self.map.live = slots

    def place(self, slots: Sequence[int], keep: Sequence[int]) -> Placement:
        """Rows for a batch of ``slots`` (the scratch slot: padding rows)
        whose first ``keep`` positions must survive, moved into place."""
        placed = self.map.place([None if s == self.scratch else s for s in slots], keep)
        for move in placed.moves:
            n = move.length
            for buf in (*self.k, *self.v):
                buf[move.dst, :, :n] = buf[move.src, :, :n]
            self.moved_positions += n
        if placed.moves:
            log.debug("kv rows moved for batch %s: %s", list(slots), placed.moves)
        self.last = placed
        return placed

    def touch(self, length: int) -> None:
        """Write the first ``length`` positions of the rows the latest step
        bound (a timing step's padding rows), so the next timing reads memory
        that is there: a calloc'd page never written reads as the kernel's one
        shared zero page, from cache, and a step's K/V reads (a quarter of an
        int4 step's bytes at 250 positions) would go untimed."""
        if self.last is not None:
            for buf in (*self.k, *self.v):
                buf[list(self.last.rows), :, :length] = 0

    def written(self, placement: Placement, lengths: Sequence[int]) -> None:
        """The batch's rows now hold ``lengths`` positions each."""
        self.map.written(placement.rows, lengths)

    def forget(self) -> None:
        self.map.forget()

    def pointers(self, base: int) -> list[tuple[str, int]]:
        """(graph input name, address) of every past K/V window from row ``base``."""
        out = []
        for i in range(self.layers):
            out.append((f"past_key_values.{i}.key", self.k[i].ctypes.data + base * self.row_bytes))
            out.append((f"past_key_values.{i}.value", self.v[i].ctypes.data + base * self.row_bytes))
        return out
