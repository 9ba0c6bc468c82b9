"""Every threshold of scheduler/config.py pinned at its edge: just inside and
just outside, so a changed comparison or constant fails here (validation,
batch and bucket limits, the background's slot share, the real-time step,
the fill wait's slack test and the starvation bound)."""

from __future__ import annotations

import pytest
from scheduler_fakes import Harness

from scheduler import CODES_PER_SECOND, CostModel, Lane, SchedulerConfig

I, B = Lane.INTERACTIVE, Lane.BACKGROUND
CPU = CostModel.default_cpu()
EPS = 1e-6


@pytest.mark.parametrize(("fields", "ok"), [
    ({"max_slots": 4, "interactive_reserved_slots": 3}, True),
    ({"max_slots": 4, "interactive_reserved_slots": 4}, False),
    ({"interactive_reserved_slots": 1}, True),
    ({"interactive_reserved_slots": 0}, False),
    ({"interactive_batch_size": 1}, True),
    ({"interactive_batch_size": 0}, False),
    ({"interactive_steps_per_background": 1}, True),
    ({"interactive_steps_per_background": 0}, False),
    ({"first_audio_steps": 1}, True),
    ({"first_audio_steps": 0}, False),
    ({"realtime_headroom": 0.0}, True),
    ({"realtime_headroom": -EPS}, False),
    ({"stream_reservation_s": 0.0}, True),
    ({"stream_reservation_s": -EPS}, False),
    ({"interactive_first_audio_s": EPS}, True),
    ({"interactive_first_audio_s": 0.0}, False),
    ({"retry_after_min_s": 2.0, "retry_after_max_s": 2.0}, True),
    ({"retry_after_min_s": 2.0 + EPS, "retry_after_max_s": 2.0}, False),
    ({"retry_after_min_s": EPS}, True),
    ({"retry_after_min_s": 0.0}, False),
    ({"batch_sizes": (1, 2)}, True),
    ({"batch_sizes": (0, 2)}, False),
    ({"batch_sizes": ()}, False),
    ({"kv_buckets": ()}, False),
    ({"prompt_buckets": ()}, False),
    ({"admission": "queue-only"}, True),
    ({"admission": "capacity "}, False),
])
def test_validation_edges(fields, ok):
    if ok:
        SchedulerConfig(**fields)
    else:
        with pytest.raises(ValueError):
            SchedulerConfig(**fields)


def test_shapes_are_sorted_and_deduplicated():
    cfg = SchedulerConfig(batch_sizes=(4, 1, 4, 2), kv_buckets=(512, 256), prompt_buckets=(64, 32))
    assert cfg.batch_sizes == (1, 2, 4) and cfg.max_batch == 4
    assert cfg.kv_buckets == (256, 512) and cfg.prompt_buckets == (32, 64)


def test_batch_padding_at_each_size():
    cfg = SchedulerConfig()  # batch sizes 1, 2, 4, 8
    assert [cfg.padded_batch(n) for n in range(1, 9)] == [1, 2, 4, 4, 8, 8, 8, 8]
    with pytest.raises(ValueError):
        cfg.padded_batch(9)


def test_kv_and_prompt_buckets_at_their_edges():
    cfg = SchedulerConfig()  # KV 256 ... 2048, prompts 32 ... 256
    assert cfg.bucket(1) == 256 and cfg.bucket(256) == 256 and cfg.bucket(257) == 512
    assert cfg.bucket(2048) == 2048 and cfg.bucket(2049) == 2048  # the cache: ends there
    assert cfg.prompt_bucket(32) == 32 and cfg.prompt_bucket(33) == 64
    assert cfg.prompt_bucket(256) == 256 and cfg.prompt_bucket(257) == 257  # no graph


@pytest.mark.parametrize(("max_slots", "reserved", "expected"), [
    (16, 1, 8),  # one full batch
    (9, 1, 8),   # the reserve and one batch meet exactly
    (8, 1, 7),   # the reserve binds
    (8, 2, 6),
])
def test_background_slots_keep_the_reserve_and_one_batch(max_slots, reserved, expected):
    cfg = SchedulerConfig(max_slots=max_slots, interactive_reserved_slots=reserved)
    assert cfg.background_slots == expected


def test_the_real_time_step_carries_the_headroom():
    assert SchedulerConfig(realtime_headroom=0.0).realtime_step_s == pytest.approx(1 / CODES_PER_SECOND)
    assert SchedulerConfig().realtime_step_s == pytest.approx(1 / (CODES_PER_SECOND * 1.3))


def _fill_wait_harness(slack_over_bound: float) -> Harness:
    """One lone background job whose slack is the fill wait's bound
    (``2 * wait + urgent_slack_s``) plus ``slack_over_bound``."""
    cfg = SchedulerConfig(background_fill_wait_s=0.1, urgent_slack_s=2.0)
    h = Harness(cost=CPU, config=cfg)
    job = h.job("a", B, length=5, deadline=1e6)
    h.sched.admit([job], 0.0)
    step = h.sched.forecast.step_seconds(1, 0.0, share=1.0)(job)
    job.deadline = (job.remaining_tokens + 1) * step + 2 * 0.1 + 2.0 + slack_over_bound
    return h


def test_the_fill_wait_holds_a_batch_only_above_its_slack_bound():
    assert _fill_wait_harness(+1e-4).sched.schedule(0.0) is None  # held for a fuller batch
    assert _fill_wait_harness(-1e-4).sched.schedule(0.0) is not None  # runs now
    # and only until the wait has passed since the oldest arrival
    h = _fill_wait_harness(+1.0)
    assert h.sched.schedule(0.1 - EPS) is None
    assert h.sched.schedule(0.1) is not None


@pytest.mark.parametrize("bound", [1, 3])
def test_the_starvation_bound_allows_exactly_that_many_interactive_steps(bound):
    cfg = SchedulerConfig(urgent_slack_s=5.0, interactive_steps_per_background=bound,
                          admission="queue-only")
    h = Harness(cost=CPU, config=cfg)
    h.sched.admit([h.job("bg", B, length=40, deadline=4.0)], 0.0)
    for k in range(30):
        h.sched.admit(h.utterance(f"t{k}", I, 1, length=10), h.now)
    lanes = [p.lane for p in h.run()]
    first_bg = lanes.index(B)
    runs, run = [], 0
    for lane in lanes[first_bg:first_bg + 40]:
        run = run + 1 if lane is I else 0
        runs.append(run)
    assert max(runs) == bound  # never more, and not fewer either


def test_background_is_urgent_only_below_its_slack():
    # Strict priority without urgency: a deadline far beyond the slack.
    cfg = SchedulerConfig(urgent_slack_s=5.0, interactive_steps_per_background=1,
                          admission="queue-only")
    h = Harness(cost=CPU, config=cfg)
    h.sched.admit([h.job("bg", B, length=40, deadline=1e6)], 0.0)
    for k in range(5):
        h.sched.admit(h.utterance(f"t{k}", I, 1, length=10), h.now)
    lanes = [p.lane for p in h.run()]
    # Five streams cannot keep real time here taking turns, so they share
    # steps (batching.add_stream_riders): fewer than 50 steps, all before any B.
    first_bg = lanes.index(B)
    assert set(lanes[:first_bg]) == {I} and set(lanes[first_bg:]) == {B}


@pytest.mark.parametrize(("over", "urgent"), [(+1e-4, False), (-1e-4, True)])
def test_urgency_turns_on_just_below_the_slack(over, urgent):
    h = Harness(cost=CPU, config=SchedulerConfig(urgent_slack_s=2.0))
    job = h.job("bg", B, length=40, deadline=1e6)
    h.sched.admit([job], 0.0)
    forecast = h.sched.forecast
    done = forecast.finish_times([job], 0.0, share=forecast.floor())[job.id]
    job.deadline = done + 2.0 + over
    assert forecast.urgent(0.0) is urgent
