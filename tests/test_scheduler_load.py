"""``InteractiveLoad``: the share of model time interactive work took, as
background admission and the starvation bound read it. Hand-made steps on a
hand-made cost table; every expected share is worked out in the comments."""

from __future__ import annotations

import math

import pytest

from scheduler import CostModel, Lane, SchedulerConfig
from scheduler.load import InteractiveLoad
from scheduler.plan import StepPlan

CFG = SchedulerConfig(load_window_s=10.0, rider_overhead=0.1)  # max_batch 8
BUCKETS = (256, 512, 1024, 2048)


def costs(one: float, full: float) -> CostModel:
    return CostModel.from_table({(b, k): one if b == 1 else full for b in (1, 2, 4, 8)
                                 for k in BUCKETS})


def step(lane: Lane = Lane.INTERACTIVE) -> StepPlan:
    return StepPlan(lane=lane, kv_bucket=256)


def share_after(cost: CostModel, plan: StepPlan, interactive_rows: int, rows: int,
                seconds: float) -> float:
    load = InteractiveLoad(CFG, cost)
    load.account(plan, interactive_rows, rows, seconds, 0.0)
    return load.share(0.0)


DEAR = costs(0.010, 0.020)  # a full batch costs twice a lone row: riders are not free
FREE = costs(0.010, 0.0105)  # within rider_overhead: a full batch is as cheap


def test_a_lone_interactive_row_takes_the_whole_step_where_riders_are_dear():
    assert share_after(DEAR, step(), 1, 1, 2.0) == pytest.approx(2.0 / 10.0)


def test_a_row_takes_its_share_of_a_full_batch_where_riders_are_free():
    assert share_after(FREE, step(), 1, 1, 2.0) == pytest.approx(2.0 / 8 / 10.0)
    # exactly at the rider bound still counts as free
    at_bound = costs(0.010, 0.010 * 1.1)
    assert share_after(at_bound, step(), 1, 1, 2.0) == pytest.approx(2.0 / 8 / 10.0)


def test_background_riding_along_makes_the_step_shared_whatever_the_costs():
    # 2 interactive rows of 5 live ones: 2 / 8 of the step.
    assert share_after(DEAR, step(), 2, 5, 4.0) == pytest.approx(4.0 * 2 / 8 / 10.0)
    # as many rows as interactive ones, a step dearer with each row: the whole step
    linear = CostModel.from_table({(b, k): 0.01 * b for b in (1, 2, 4, 8) for k in BUCKETS})
    assert share_after(linear, step(), 2, 2, 4.0) == pytest.approx(4.0 / 10.0)


@pytest.mark.parametrize(("plan", "irows", "seconds"), [
    (step(Lane.BACKGROUND), 1, 2.0),  # a background step
    (step(), 0, 2.0),  # no interactive row
    (step(), 1, 0.0),  # took no time
])
def test_steps_that_take_nothing_from_interactive(plan, irows, seconds):
    assert share_after(DEAR, plan, irows, max(irows, 1), seconds) == 0.0


def test_the_share_decays_and_the_long_window_remembers():
    load = InteractiveLoad(CFG, DEAR)
    load.account(step(), 1, 1, 5.0, 0.0)
    # 30 s later: short window 5 e^-3 / 10, long window 5 e^-0.5 / 60: the larger.
    assert load.share(30.0) == pytest.approx(max(5 * math.exp(-3) / 10, 5 * math.exp(-0.5) / 60))
    load.account(step(), 1, 1, 20.0, 30.0)  # a burst: capped at the whole model
    assert load.share(30.0) == 1.0
