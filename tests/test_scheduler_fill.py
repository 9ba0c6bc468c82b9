"""The background fill wait (``background_fill_wait_s``) and the interactive
backlog the background forecast counts: cases the scheduler's mutation run
found unpinned, each worked out by hand. Fake clock, fake runner."""

from __future__ import annotations

import pytest
from scheduler_fakes import Harness

from scheduler import CostModel, Lane, SchedulerConfig

I, B = Lane.INTERACTIVE, Lane.BACKGROUND
CPU = CostModel.default_cpu()
WAIT = SchedulerConfig(background_fill_wait_s=0.1)


def test_a_full_batch_is_not_held_back():
    h = Harness(cost=CPU, config=WAIT)
    for k in range(WAIT.max_batch):
        h.sched.admit([h.job(f"u{k}", B, length=5, deadline=1e6)], 0.0)
    plan = h.sched.schedule(0.0)
    assert plan is not None and len(plan.prefill) == WAIT.max_batch


def test_a_job_without_deadline_waits_for_company():
    h = Harness(cost=CPU, config=WAIT)
    h.sched.admit([h.job("a", B, length=5)], 0.0)
    assert h.sched.schedule(0.0) is None and h.sched.next_wakeup() == pytest.approx(0.1)
    assert h.sched.schedule(0.1) is not None


def test_the_slack_counts_from_now():
    # Arrived at 100 s with 1.5 s to its deadline: less than the bound's
    # 2 * 0.1 + urgent_slack_s, so it runs at once.
    h = Harness(cost=CPU, config=WAIT)
    h.now = 100.0
    h.sched.admit([h.job("a", B, length=5, deadline=101.5)], 100.0)
    assert h.sched.schedule(100.0) is not None


def test_a_running_batch_takes_a_new_job_without_waiting():
    h = Harness(cost=CPU, config=WAIT)
    h.sched.admit([h.job("a", B, length=50, deadline=1e6)], 0.0)
    h.now = 0.1
    assert h.step().prefill  # "a" starts after its wait
    b = h.job("b", B, length=5, deadline=1e6)
    h.sched.admit([b], h.now)
    plan = h.step()
    assert plan is not None and plan.prefill == (b.id,)


BUCKETS = (256, 512, 1024, 2048)


def costs(one: float, full: float) -> CostModel:
    """A step costs ``one`` at batch 1 and ``full`` at every larger batch."""
    return CostModel.from_table({(b, k): one if b == 1 else full
                                 for b in (1, 2, 4, 8) for k in BUCKETS})


@pytest.mark.parametrize(("full", "per_code"), [
    (0.010, 0.010 / 8),   # a full batch costs no more: a row's share of it
    (0.0105, 0.0105 / 8),  # within rider_overhead (10%) of batch 1: still free
    (0.015, 0.010),       # riders are dear: the whole batch-1 step
])
def test_the_interactive_backlog_counts_a_row_only_where_riders_are_free(full, per_code):
    h = Harness(cost=costs(0.010, full), config=SchedulerConfig(admission="queue-only",
                                                                rider_overhead=0.1))
    h.sched.admit(h.utterance("a", I, 1, length=30), 0.0)
    h.sched.admit(h.utterance("b", I, 1, length=50), 0.0)
    assert h.sched.forecast.interactive_backlog() == pytest.approx((30 + 50) * per_code)


def test_a_full_batch_at_exactly_one_step_is_free():
    h = Harness(cost=costs(0.010, 0.010), config=SchedulerConfig(admission="queue-only",
                                                                 rider_overhead=0.0))
    h.sched.admit(h.utterance("a", I, 1, length=40), 0.0)
    assert h.sched.forecast.interactive_backlog() == pytest.approx(40 * 0.010 / 8)
