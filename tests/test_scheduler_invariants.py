"""The scheduler's self-checks (``scheduler.invariants``) are the oracle of
the property and simulation tests: each check must name the breakage it is
for. Each test here breaks one thing in a healthy scheduler's books (by
hand, through the books' own fields) or hands the checks a bad plan, and
asserts the exact problems reported; a check gone blind would let every
property test pass on a broken scheduler."""

from __future__ import annotations

import dataclasses
import types

import pytest
from scheduler_fakes import Harness

from scheduler import JobState, Lane, SchedulerConfig
from scheduler.invariants import check_plan, check_state

I, B = Lane.INTERACTIVE, Lane.BACKGROUND


def running() -> tuple[Harness, list]:
    """A scheduler mid-run (GPU costs, so background rides along): 'book'
    (background, 2 segments, both holding slots 1 and 2) and 'talk'
    (interactive, slot 0); its last plan prefilled book's second segment
    and decoded the other two."""
    h = Harness(config=SchedulerConfig(admission="queue-only"))
    book = h.utterance("book", B, 2, length=50, deadline=1e6)
    talk = h.utterance("talk", I, 1, length=50)
    h.sched.admit(book, 0.0)
    h.sched.admit(talk, 0.0)
    h.step()
    h.step()
    assert [(j.state, j.slot) for j in (*book, *talk)] == [(JobState.ACTIVE, 1), (JobState.ACTIVE, 2),
                                                        (JobState.ACTIVE, 0)]
    check_state(h.sched)  # healthy to begin with
    return h, [*book, *talk]


def problems(sched) -> list[str]:
    with pytest.raises(AssertionError) as info:
        check_state(sched)
    # One message holds "; " itself: keep it whole.
    joined = str(info.value).replace("; the jobs say", "\0 the jobs say")
    return [p.replace("\0", ";") for p in joined.split("; ")]


def test_a_job_live_in_both_lanes():
    h, (b0, _, _) = running()
    h.sched.book.jobs(I)[b0.id] = b0
    assert problems(h.sched)[:3] == [
        f"job {b0.id} is filed under the wrong lane or id",
        "interactive counts (0, 1) (waiting, active); the jobs say 0, 2",
        f"job {b0.id} is live in both lanes"]


def test_a_job_filed_under_another_id():
    h, (_, b1, _) = running()
    jobs = h.sched.book.jobs(B)
    jobs[99] = jobs.pop(b1.id)
    assert problems(h.sched) == ["job 99 is filed under the wrong lane or id"]


def test_an_ended_job_still_live():
    h, (_, b1, _) = running()
    b1.state = JobState.FINISHED
    said = problems(h.sched)
    assert f"ended job {b1.id} is still live" == said[0]


def test_a_job_missing_from_its_utterance():
    h, (_, b1, _) = running()
    del h.sched.book.utterance("book").segments[b1.index]
    assert problems(h.sched) == [f"job {b1.id} is missing from its utterance"]


def test_a_segment_started_before_an_earlier_one():
    h, (b0, b1, _) = running()
    b0.started_at = None  # as if book's first segment had never started
    said = problems(h.sched)
    assert said[:2] == [f"job {b0.id} holds a slot iff started: broken",
                        f"job {b1.id} started before an earlier segment"]


def test_a_waiting_job_with_a_slot():
    h, (_, b1, _) = running()
    b1.state = JobState.WAITING
    assert problems(h.sched)[:2] == [f"job {b1.id} holds a slot iff started: broken",
                                     f"job {b1.id} in state WAITING has slot 2"]


def test_state_counts_that_disagree_with_the_jobs():
    h, _ = running()
    h.sched.book._waiting[1] += 1
    assert problems(h.sched) == ["background counts (1, 2) (waiting, active); the jobs say 0, 2"]


@pytest.mark.parametrize("extra", [[1], [77, 77]])
def test_a_release_of_a_live_job_or_one_listed_twice(extra):
    h, _ = running()
    h.sched.book._release.extend(extra)
    assert problems(h.sched) == ["a slot to release belongs to a live job or is listed twice"]


def test_a_slot_both_free_and_held():
    h, _ = running()
    h.sched.book._free_slots.append(1)
    free = h.sched.book.free_slot_list()
    assert problems(h.sched) == ["a slot is both free and held, or free twice",
                                 f"slots held [0, 1, 2] and free {free} are not 0..15"]


def test_a_slot_lost_from_the_books():
    h, _ = running()
    h.sched.book._free_slots.remove(15)
    free = h.sched.book.free_slot_list()
    assert problems(h.sched) == [f"slots held [0, 1, 2] and free {free} are not 0..15"]


def test_two_jobs_on_one_slot():
    h, (b0, _, t0) = running()
    t0.slot = b0.slot
    assert problems(h.sched)[0] == "3 slots counted held, 2 distinct slots owned"


def test_background_over_its_slots():
    h, _ = running()
    few = dataclasses.replace(h.config, max_slots=3, interactive_reserved_slots=2)
    assert few.background_slots == 1
    said = problems(checked(h, config=few))
    assert "background holds 2 > 1 slots" in said


def checked(h: Harness, **changes) -> types.SimpleNamespace:
    """The scheduler as the checks read it, with ``changes``."""
    fields = dict(config=h.sched.config, book=h.sched.book, reservations=h.sched.reservations,
                  last_plan=h.sched.last_plan, job=h.sched.job)
    return types.SimpleNamespace(**(fields | changes))


def test_a_queue_over_its_bound():
    # Queue-only counts waiting segments; capacity admission, utterances not begun.
    h = Harness(config=SchedulerConfig(admission="queue-only"))
    h.sched.admit(h.utterance("book", B, 2, deadline=1e6), 0.0)
    h.sched.admit(h.utterance("talk", I, 1), 0.0)
    tight = dataclasses.replace(h.config, max_queue_background=1, max_queue_interactive=1)
    assert problems(checked(h, config=tight)) == ["background queue over its bound"]
    utterances = dataclasses.replace(tight, admission="capacity", max_queue_interactive=0)
    assert problems(checked(h, config=utterances)) == ["interactive queue over its bound"]


def test_a_held_place_with_segments():
    h, _ = running()
    assert problems(checked(h, reservations=["book"])) == [
        "utterance 'book' holds a place and has segments"]


@pytest.mark.parametrize(("change", "said"), [
    (dict(decode=(3, 3)), "a job appears twice in the last plan"),
    (dict(slots=(2, 0)), "the last plan's slots (2, 0) do not match its jobs (2, 3, 1)"),
    (dict(slots=(2, 0, 0)), "the last plan's slots (2, 0, 0) do not match its jobs (2, 3, 1)"),
    (dict(work=()), "the last plan's work does not match its prefills"),
    (dict(batch_size=3), "batch size 3 for 2 decode rows"),
    (dict(batch_size=1), "batch size 1 for 2 decode rows"),
    (dict(prefill_batch=3), "prefill batch 3 for 1 prompts"),
    (dict(prefill=(2, 1), slots=(2, 1, 0, 1), work=(None, None)), "prefill batch 1 for 2 prompts"),
    (dict(lane=B), "interactive job in a background step"),
])
def test_a_bad_last_plan(change, said):
    h, _ = running()
    bad = dataclasses.replace(h.sched.last_plan, **change)
    assert said in problems(checked(h, last_plan=bad))


def plan_problem(h: Harness, **change) -> str:
    with pytest.raises(AssertionError) as info:
        check_plan(h.sched, dataclasses.replace(h.sched.last_plan, **change))
    return str(info.value)


def test_a_plan_naming_a_job_not_running_or_on_another_slot():
    h, (b0, b1, t0) = running()
    check_plan(h.sched, h.sched.last_plan)
    assert plan_problem(h, decode=(3, 9)) == "plan names job 9 which is not running"
    assert plan_problem(h, slots=(2, 1, 1)) == "plan gives job 3 slot 1; it holds 0"
    t0.batch_cap = 2
    assert plan_problem(h) == "job 3 runs in a batch over its cap 2"


def test_a_plan_that_does_not_say_what_each_prefill_follows():
    h, (b0, b1, _) = running()
    assert h.sched.last_plan.follows == (b0.id,)  # book's second segment plays after its first
    assert plan_problem(h, follows=()) == "follows () does not name one job per prefill job"


def test_a_plan_over_its_buckets():
    h, (_, b1, t0) = running()
    assert plan_problem(h, prompt_bucket=b1.prompt_len - 1) == (
        f"prompt of {b1.id} longer than the prompt bucket")
    t0.tokens = 300  # past the 256 bucket, which is not the last
    assert plan_problem(h) == f"decode of {t0.id} at KV length {t0.kv_len} over bucket 256"
    last = max(h.config.kv_buckets)
    t0.tokens = last  # in the last bucket, the cache itself: ends at its capacity
    check_plan(h.sched, dataclasses.replace(h.sched.last_plan, kv_bucket=last))
