"""The background fill wait (``background_fill_wait_s``), EDF ties and the interactive
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


def test_equal_deadlines_go_in_admission_order():
    # "late" is admitted first although its job was made (numbered) second:
    # with equal deadlines EDF keeps admission order, not job numbers.
    h = Harness(cost=CPU)
    early_made = h.job("second", B, length=5, deadline=50.0)
    late_made = h.job("first", B, length=5, deadline=50.0)
    assert h.sched.admit([late_made], 0.0) is None
    assert h.sched.admit([early_made], 0.0) is None
    assert [j.id for j in h.sched.forecast.edf(h.sched.book.jobs(B).values())] == [
        late_made.id, early_made.id]


def test_interactive_backlog_shrinks_backgrounds_share_down_to_the_floor():
    # 400 codes at 10 ms a batch-1 step (riders dear) are 4 s of model time:
    # over a 10 s load window, 40% of the model; 4000 codes would be 400%,
    # and the starvation bound still leaves 1 / (3 + 1).
    cfg = SchedulerConfig(admission="queue-only", load_window_s=10.0,
                          interactive_steps_per_background=3)
    h = Harness(cost=costs(0.010, 0.015), config=cfg)
    h.sched.admit(h.utterance("talk", I, 1, length=400), 0.0)
    assert h.sched.forecast.share(0.0) == pytest.approx(0.6)
    h.sched.admit(h.utterance("more", I, 1, length=3600), 0.0)
    assert h.sched.forecast.share(0.0) == pytest.approx(0.25)
