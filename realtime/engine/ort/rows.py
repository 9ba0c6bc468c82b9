"""Which physical KV row holds each scheduler slot, so a batch binds as one block.

ONNX Runtime's attention takes a batch's past K/V as one contiguous tensor
[B, H, max_len, Dh], while the scheduler names any KV slots for a step's
rows. ``SlotRows`` keeps a map slot -> physical row of the preallocated
buffers [R, H, max_len, Dh] and, for each step, ``place`` chooses a window
of B adjacent rows that will hold the batch: usually the rows already hold
it (batch rows are reordered to row order, which costs nothing), and only
when the batch's composition changes are rows moved, copying only each
moved row's written positions.

The window is the one that moves the fewest positions: rows of the batch
outside it are moved in, rows of other live slots inside it are moved out
to free rows; ties go to the fewest rows moved, then to a window next to
the other live rows (so a later batch with them is one block again), then
the lowest.
Slots no longer live (``live()``: the runner's held jobs and refine passes)
free their rows first, so a batch whose job ended and a new one began in
another slot usually takes the freed row with no copy. Padding rows
(``None``) take free rows of the window; new slots (a prefill: their data is
about to be written) move nothing.

``R`` is the slots plus the largest batch: free rows always exist for
evictions and padding. Pure bookkeeping, no buffers; ``kv.OrtKV`` applies
the moves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Move:
    """Copy positions [0, length) of row ``src`` to row ``dst``."""

    src: int
    dst: int
    length: int


@dataclass(frozen=True)
class Placement:
    """Batch row i lives in physical row ``rows[i]``; all in [base, base + B)."""

    base: int
    rows: tuple[int, ...]
    moves: tuple[Move, ...]

    @property
    def order(self) -> list[int]:
        """Batch rows in physical order: ``order[k]`` is the batch row in row base + k."""
        return sorted(range(len(self.rows)), key=self.rows.__getitem__)


class SlotRows:
    """The slot -> row map over ``rows`` physical rows; see the module docstring.

    ``live`` names the slots whose K/V must survive (None: every mapped slot).
    """

    def __init__(self, rows: int, live: Callable[[], set[int]] | None = None):
        self.rows = rows
        self.live = live
        self.row_of: dict[int, int] = {}
        self.slot_at: list[int | None] = [None] * rows
        self.length = [0] * rows  # positions of each row worth keeping

    def place(self, slots: Sequence[int | None], keep: Sequence[int]) -> Placement:
        """Rows for a batch: ``slots[i]`` (None: a padding row) whose first
        ``keep[i]`` positions must survive (a decode: its position; a
        prefill: 0). Slots must be distinct. Updates the map and returns
        the moves to apply before the step."""
        b = len(slots)
        members = {s: k for s, k in zip(slots, keep) if s is not None}
        if len(members) != sum(s is not None for s in slots) or b > self.rows:
            raise ValueError(f"a batch needs distinct slots and at most {self.rows} rows, got {slots}")
        held = [self.row_of.get(s, -b) if s is not None else -b for s in slots]
        if min(held) >= 0 and max(held) - min(held) == b - 1:
            return Placement(min(held), tuple(held), ())
        self._forget_dead(set(members))
        base = self._window(members, b)
        moves = self._fill(base, b, members)
        rows = []
        free = [r for r in range(base, base + b) if self.slot_at[r] is None]
        for slot in slots:
            rows.append(self.row_of[slot] if slot is not None else free.pop(0))
        for r in rows:
            if self.slot_at[r] is None:
                self.length[r] = 0
        return Placement(base, tuple(rows), tuple(moves))

    def written(self, rows: Sequence[int], lengths: Sequence[int]) -> None:
        """After a step: ``rows`` now hold ``lengths`` positions worth keeping."""
        for r, n in zip(rows, lengths):
            self.length[r] = n

    def forget(self) -> None:
        """Drop every mapping (after ``reset``: no job holds a slot)."""
        self.row_of.clear()
        self.slot_at = [None] * self.rows
        self.length = [0] * self.rows

    def _forget_dead(self, members: set[int]) -> None:
        if self.live is None:
            return
        live = self.live() | members
        for slot in [s for s in self.row_of if s not in live]:
            row = self.row_of.pop(slot)
            self.slot_at[row], self.length[row] = None, 0

    def _window(self, members: dict[int, int], b: int) -> int:
        others = [r for r, s in enumerate(self.slot_at) if s is not None and s not in members]
        best: tuple[int, int, int, int] | None = None
        for base in range(self.rows - b + 1):
            moved = rows_moved = 0
            for r in range(base, base + b):
                other = self.slot_at[r]
                if other is not None and other not in members:
                    moved, rows_moved = moved + self.length[r], rows_moved + 1
            for s, keep in members.items():
                held = self.row_of.get(s)
                if held is None or not base <= held < base + b:
                    moved, rows_moved = moved + keep, rows_moved + (keep > 0)
            # Next to the other live rows, a later batch with them stays one block.
            gap = min((base - r if r < base else r - base - b + 1 for r in others), default=1)
            score = (moved, rows_moved, max(gap, 1), base)
            if best is None or score < best:
                best = score
        assert best is not None
        return best[3]

    def _fill(self, base: int, b: int, members: dict[int, int]) -> list[Move]:
        """Evict other slots from the window, bring the members in."""
        inside = range(base, base + b)
        outside_free = [r for r in range(self.rows) if self.slot_at[r] is None and r not in inside]
        moves = []
        for r in inside:
            other = self.slot_at[r]
            if other is not None and other not in members:
                dst = outside_free.pop(0)
                if self.length[r]:
                    moves.append(Move(r, dst, self.length[r]))
                self._assign(other, dst, self.length[r])
                self.slot_at[r] = None
        free = [r for r in inside if self.slot_at[r] is None]
        for s, keep in members.items():
            held = self.row_of.get(s)
            if held is not None and held in inside:
                continue
            dst = free.pop(0)
            if held is not None:
                self.slot_at[held], self.length[held] = None, 0
                if keep:
                    moves.append(Move(held, dst, keep))
            self._assign(s, dst, keep)
        return moves

    def _assign(self, slot: int, row: int, length: int) -> None:
        self.row_of[slot] = row
        self.slot_at[row] = slot
        self.length[row] = length
