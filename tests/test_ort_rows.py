"""The slot -> K/V row map of the ONNX Runtime decoder (realtime/engine/ort/rows.py).

Pure bookkeeping: a batch must land in one block of adjacent rows, moving
as little as it can, and no live slot may ever lose a position it wrote.
The property test plays random batches (decodes, prefills, padding rows,
slots that end) against a model of the buffers in which every position
holds a tag saying which slot wrote it.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from realtime.engine.ort.rows import Move, SlotRows


def test_a_batch_already_in_one_block_moves_nothing_in_any_order():
    rows = SlotRows(8)
    placed = rows.place([3, 1, 2], [0, 0, 0])  # a prefill: new slots
    assert placed.moves == () and sorted(placed.rows) == [0, 1, 2]
    rows.written(placed.rows, [10, 10, 10])
    again = rows.place([1, 3], [10, 10])  # rows 1 and 0: adjacent, in the other order
    assert again.moves == () and again.base == 0 and again.rows == (1, 0)
    assert [again.rows[i] for i in again.order] == [0, 1]


def test_a_gap_is_closed_by_moving_the_shorter_rows():
    rows = SlotRows(8)
    placed = rows.place([0, 1, 2], [0, 0, 0])
    rows.written(placed.rows, [40, 5, 30])
    # Slot 1 (still held) no longer decodes with them: rows 0 and 2 are not adjacent.
    again = rows.place([0, 2], [40, 30])
    # The cheapest block: slot 1 out (5 positions), slot 2 into its row (30); slot 0 stays.
    assert again.moves == (Move(1, 3, 5), Move(2, 1, 30))
    assert again.rows == (0, 1) and rows.row_of[1] == 3


def test_rows_of_slots_nobody_holds_are_reused_without_a_copy():
    live = {0, 1, 2}
    rows = SlotRows(8, live=lambda: set(live))
    placed = rows.place([0, 1, 2], [0, 0, 0])
    rows.written(placed.rows, [50, 50, 50])
    live.discard(1)  # slot 1's job ended; a new job takes slot 5
    new = rows.place([5], [0])
    assert new.moves == () and new.rows == (rows.row_of[5],)
    rows.written(new.rows, [12])
    live.add(5)
    batch = rows.place([0, 5, 2], [50, 12, 50])
    assert batch.moves == ()  # the new job took the freed row between them


def test_padding_rows_take_free_rows_of_the_window():
    rows = SlotRows(6)
    placed = rows.place([None, None, None], [0, 0, 0])
    assert placed.moves == () and len(set(placed.rows)) == 3
    assert not rows.row_of


def test_distinct_slots_are_required():
    with pytest.raises(ValueError, match="distinct"):
        SlotRows(4).place([1, 1], [0, 0])


def _apply(buf: list[list[int]], moves: tuple[Move, ...]) -> None:
    for m in moves:
        buf[m.dst][:m.length] = buf[m.src][:m.length]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sets(st.integers(0, 5), min_size=1, max_size=4), st.integers(0, 2),
                          st.sets(st.integers(0, 5), max_size=2)), min_size=1, max_size=25))
def test_no_live_slot_ever_loses_a_position(steps):
    """Random steps: a batch of slots (new ones prefill, held ones decode one
    position), padding rows, then some slots end. After every step each
    held slot's row holds exactly the positions it wrote, in order."""
    slots, batch_max = 6, 4
    held: dict[int, int] = {}  # slot -> positions written
    rows = SlotRows(slots + batch_max, live=lambda: set(held))
    buf = [[-1] * 64 for _ in range(slots + batch_max)]
    for batch, padding, ended in steps:
        batch = sorted(batch)[:batch_max - min(padding, batch_max - 1)]
        keys = [*batch, *[None] * padding]
        keep = [held.get(s, 0) for s in batch] + [0] * padding
        slot_at = {r: s for s, r in rows.row_of.items()}  # before the placement
        placed = rows.place(keys, keep)
        assert sorted(placed.rows) == list(range(placed.base, placed.base + len(keys)))
        for m in placed.moves:  # a move copies just the positions its slot wrote
            assert m.length == held.get(slot_at[m.src], 0), (m, slot_at)
        _apply(buf, placed.moves)
        for s, r in zip(keys, placed.rows):
            if s is None:
                buf[r][0] = -2  # a padding row writes position 0 of a free row
                continue
            n = held.get(s, 0)
            if n == 0:  # a prefill writes a 3-position prompt
                buf[r][:3] = [s * 100 + i for i in range(3)]
                held[s] = 3
            else:
                buf[r][n] = s * 100 + n
                held[s] = n + 1
        rows.written(placed.rows, [held.get(s, 1) if s is not None else 1 for s in keys])
        for s in ended:
            held.pop(s, None)
        for s, n in held.items():
            assert buf[rows.row_of[s]][:n] == [s * 100 + i for i in range(n)], (s, rows.row_of)


def test_touch_writes_the_rows_the_latest_step_bound_and_no_others():
    from realtime.engine.model.shapes import TINY
    from realtime.engine.ort.kv import OrtKV

    kv = OrtKV(TINY, slots=3, max_len=16, max_batch=2)
    kv.touch(8)  # nothing bound yet: nothing to write
    for buf in (*kv.k, *kv.v):
        buf.fill(1.0)
    placed = kv.place([kv.scratch, kv.scratch], [0, 0])
    kv.touch(8)
    rows = set(placed.rows)
    for buf in (*kv.k, *kv.v):
        for r in range(buf.shape[0]):
            assert (buf[r, :, :8] == 0).all() == (r in rows), r
            assert (buf[r, :, 8:] == 1).all()
