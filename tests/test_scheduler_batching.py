"""``pick_background`` on hand-made queues: which of the runnable background
jobs (in EDF order) one step carries. Costs are flat tables, so each case's
answer follows from the rule in the function's docstring by hand."""

from __future__ import annotations

from scheduler import CostModel, JobState, Lane, SchedulerConfig
from scheduler.batching import SlotBudget, pick_background
from scheduler.jobs import Job

CFG = SchedulerConfig(batch_sizes=(1, 2, 4), kv_buckets=(256, 512, 1024))


def table(step: dict[int, float]) -> CostModel:
    """Step seconds by KV bucket, the same at every batch size."""
    return CostModel.from_table({(b, k): step[k] for b in CFG.batch_sizes for k in CFG.kv_buckets})


FLAT = table({256: 0.01, 512: 0.02, 1024: 0.04})


def job(n: int, codes: int, state: JobState = JobState.WAITING) -> Job:
    j = Job(id=n, utterance=f"u{n}", index=0, lane=Lane.BACKGROUND, prompt_len=20,
            est_tokens=codes, max_tokens=2048, deadline=100.0 + n, arrival=0.0)
    j.state = state
    return j


def ids(batch: list[Job]) -> list[int]:
    return [j.id for j in batch]


def test_a_leader_past_the_smallest_bucket_still_runs():
    # 400 codes end in the 512 bucket: the 256 bucket is skipped, not the rest.
    assert ids(pick_background(CFG, FLAT, [job(1, 400), job(2, 100)], SlotBudget(4))) == [1, 2]


def test_a_job_too_long_for_the_bucket_does_not_end_the_batch():
    # At 256 only jobs 1 and 3 fit (2 needs 1024): 2 codes in 10 ms beats
    # 3 jobs at 1024's 40 ms.
    jobs = [job(1, 100), job(2, 900), job(3, 100)]
    assert ids(pick_background(CFG, FLAT, jobs, SlotBudget(4))) == [1, 3]


def test_running_jobs_join_after_the_free_slots_are_gone():
    # One free slot: waiting job 1 takes it, waiting 2 cannot, active 3 holds its own.
    jobs = [job(1, 100), job(2, 100), job(3, 100, JobState.ACTIVE)]
    budget = SlotBudget(1)
    assert ids(pick_background(CFG, FLAT, jobs, budget)) == [1, 3]
    assert budget.free == 0


def test_a_step_slower_than_a_second_is_still_taken():
    slow = table({256: 2.0, 512: 4.0, 1024: 8.0})
    assert ids(pick_background(CFG, slow, [job(1, 100)], SlotBudget(1))) == [1]


def test_no_free_slot_and_nothing_running_picks_nothing():
    budget = SlotBudget(0)
    assert pick_background(CFG, FLAT, [job(1, 100)], budget) == []
    assert budget.free == 0


def test_the_batch_stops_at_max_batch():
    cfg = SchedulerConfig(batch_sizes=(1, 2), kv_buckets=(256, 512, 1024))
    assert cfg.max_batch == 2
    jobs = [job(n, 100) for n in (1, 2, 3)]
    assert ids(pick_background(cfg, FLAT, jobs, SlotBudget(4))) == [1, 2]
