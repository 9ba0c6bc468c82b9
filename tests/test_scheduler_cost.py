"""Cost model lookups, calibration and EWMA; config sizes and buckets."""

import json
import re

import pytest

from scheduler import CostModel, SchedulerConfig


def test_exact_and_rounded_up_lookups():
    cost = CostModel.from_table({(1, 256): 0.04, (4, 256): 0.06, (4, 512): 0.07, (1, 512): 0.05})
    assert cost.step_time(1, 256) == 0.04
    assert cost.step_time(3, 200) == 0.06  # batch 3 -> 4, bucket 200 -> 256
    assert cost.step_time(2, 300) == 0.07
    # Beyond the table: scaled up linearly, never cheaper.
    assert cost.step_time(8, 512) == pytest.approx(0.14)
    assert cost.step_time(4, 1024) == pytest.approx(0.14)


def test_sparse_tables_fall_back_to_a_dominating_entry():
    cost = CostModel.from_table({(1, 256): 0.04, (8, 1024): 0.1})
    assert cost.step_time(1, 1024) == 0.1
    assert cost.step_time(8, 256) == 0.1


def test_ewma_moves_toward_measurements_and_calibrate_overrides():
    cost = CostModel.from_table({(1, 256): 0.1}, alpha=0.5)
    cost.observe(1, 256, 0.14)
    assert cost.step_time(1, 256) == pytest.approx(0.12)
    cost.observe(1, 256, 0.0)  # no measurement: ignored
    assert cost.step_time(1, 256) == pytest.approx(0.12)
    cost.observe(2, 256, 0.3)  # a new shape enters the table
    assert cost.step_time(2, 256) == pytest.approx(0.3)
    cost.calibrate({(1, 256): 0.05})
    assert cost.step_time(1, 256) == 0.05


def test_profiles_have_the_documented_shape():
    cpu, gpu = CostModel.default_cpu(), CostModel.default_gpu()
    assert cpu.step_time(1, 256) == pytest.approx(0.043)
    assert cpu.step_time(8, 256) == pytest.approx(0.100)
    assert gpu.step_time(1, 256) == pytest.approx(0.012)
    assert gpu.step_time(64, 256) == pytest.approx(0.016)
    assert gpu.tokens_per_second(8, 256) > 6 * gpu.tokens_per_second(1, 256)


def test_json_rows(tmp_path):
    rows = [{"batch": 1, "bucket": 256, "seconds": 0.05}, {"batch": 8, "bucket": 256, "seconds": 0.11}]
    path = tmp_path / "steps.json"
    path.write_text(json.dumps(rows))
    cost = CostModel.from_json_rows(json.loads(path.read_text()))
    assert cost.step_time(4, 256) == 0.11


@pytest.mark.parametrize(("table", "says"), [
    ({}, "^cost table is empty$"), ({(0, 256): 0.1}, r"^bad cost entry \(0, 256\): 0.1$"),
    ({(1, 256): 0.0}, r"^bad cost entry \(1, 256\): 0.0$"),
    ({(1, 256): -1.0}, r"^bad cost entry \(1, 256\): -1.0$")])
def test_bad_tables_raise_saying_which_entry(table, says):
    with pytest.raises(ValueError, match=says):
        CostModel.from_table(table)


@pytest.mark.parametrize("alpha", [0.0, 1.5])
def test_a_smoothing_factor_outside_0_1_raises(alpha):
    with pytest.raises(ValueError, match=r"^alpha must be in \(0, 1\]$"):
        CostModel.from_table({(1, 256): 0.1}, alpha=alpha)


def test_config_pads_batches_and_picks_buckets():
    cfg = SchedulerConfig(batch_sizes=(8, 1, 4, 2), kv_buckets=(512, 256))
    assert cfg.batch_sizes == (1, 2, 4, 8)
    assert [cfg.padded_batch(n) for n in (1, 2, 3, 5, 8)] == [1, 2, 4, 8, 8]
    with pytest.raises(ValueError):
        cfg.padded_batch(9)
    assert [cfg.bucket(n) for n in (1, 256, 257, 5000)] == [256, 256, 512, 512]
    assert cfg.background_slots == 8  # one full batch, below max_slots - reserve
    assert SchedulerConfig(max_slots=4).background_slots == 3  # the reserve stays free


EMPTY = "batch_sizes, kv_buckets and prompt_buckets must not be empty"
RESERVED = "need 1 <= interactive_reserved_slots < max_slots"
AT_LEAST_1 = "interactive_batch_size and interactive_steps_per_background must be >= 1"
STEPS = "first_audio_steps must be >= 1 and realtime_headroom >= 0"
RETRY = "need 0 < retry_after_min_s <= retry_after_max_s"


@pytest.mark.parametrize(("kwargs", "says"), [
    (dict(batch_sizes=()), EMPTY), (dict(kv_buckets=()), EMPTY), (dict(prompt_buckets=()), EMPTY),
    (dict(batch_sizes=(0, 1)), "batch sizes must be >= 1"),
    (dict(interactive_reserved_slots=0), RESERVED), (dict(max_slots=1), RESERVED),
    (dict(interactive_batch_size=0), AT_LEAST_1), (dict(interactive_steps_per_background=0), AT_LEAST_1),
    (dict(admission="fair"),
     "admission must be one of ('capacity', 'strict', 'queue-only'), not 'fair'"),
    (dict(interactive_first_audio_s=0.0), "interactive_first_audio_s must be > 0 (or None: derived)"),
    (dict(first_audio_steps=0), STEPS), (dict(realtime_headroom=-0.1), STEPS),
    (dict(stream_reservation_s=-1.0), "stream_reservation_s must be >= 0"),
    (dict(retry_after_min_s=0.0), RETRY), (dict(retry_after_min_s=2.0, retry_after_max_s=1.0), RETRY),
])
def test_bad_configs_raise_saying_what_is_wrong(kwargs, says):
    with pytest.raises(ValueError, match=f"^{re.escape(says)}$"):
        SchedulerConfig(**kwargs)


def test_a_noisy_warm_up_is_bounded_by_the_shapes_that_dominate_it():
    # Batch 2 measured while the machine was busy: no dearer than batch 4 can be.
    cost = CostModel.from_table({(1, 256): 0.010, (2, 256): 0.136, (4, 256): 0.012,
                                 (4, 512): 0.015, (2, 512): 0.2})
    assert cost.step_time(2, 256) == 0.012
    assert cost.step_time(2, 512) == 0.015
    assert cost.step_time(1, 256) == 0.010


def test_measured_steps_keep_lookups_monotone_and_recover():
    cost = CostModel.from_table({(b, 256): 0.010 for b in (1, 2, 4, 8)}, alpha=1.0)
    cost.observe(2, 256, 0.012)  # real steps (sampling, vocoder) cost more than warm-up's
    assert [cost.step_time(b, 256) for b in (1, 2, 4, 8)] == [0.010, 0.012, 0.012, 0.012]
    # The bigger batches were raised only because batch 2 was: they come back with it,
    # so a policy that stopped using them does not keep thinking them dear.
    cost.observe(2, 256, 0.010)
    assert [cost.step_time(b, 256) for b in (1, 2, 4, 8)] == pytest.approx([0.010] * 4, rel=0.01)


def test_one_stalled_step_moves_the_estimate_by_at_most_half():
    cost = CostModel.from_table({(1, 256): 0.010}, alpha=1.0)
    cost.observe(1, 256, 1.0)  # the whole machine stalled for a second
    assert cost.step_time(1, 256) == pytest.approx(0.015)


def test_a_shape_the_policy_stopped_using_does_not_stay_stale():
    cost = CostModel.from_table({(b, 256): 0.010 for b in (1, 2, 4, 8)}, alpha=0.5)
    for _ in range(20):  # a slow spell at batch 8 (a busy machine)
        cost.observe(8, 256, 0.030)
    assert cost.step_time(8, 256) > 0.025
    for _ in range(2000):  # then only batch 1 runs, at its calibrated speed
        cost.observe(1, 256, 0.010)
    assert cost.step_time(8, 256) == pytest.approx(0.010, rel=0.05)
