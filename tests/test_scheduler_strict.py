"""``admission="strict"``: a machine too slow for one real-time stream refuses
interactive work instead of serving it late; on a machine that keeps real
time it is the capacity rule exactly. Fake clock."""

from scheduler_fakes import Harness

from scheduler import CostModel, Lane, RefusalReason, SchedulerConfig

I, B = Lane.INTERACTIVE, Lane.BACKGROUND
BUCKETS = (256, 512, 1024, 2048)
SLOW = CostModel.from_table({(b, k): 0.030 + 0.004 * b for b in (1, 2, 4, 8) for k in BUCKETS})
# Two rows cost one, four cost double: interactive steps carry two streams.
STEEP = CostModel.from_table({(b, k): {1: 0.010, 2: 0.010, 4: 0.020, 8: 0.040}[b]
                              for b in (1, 2, 4, 8) for k in BUCKETS})


def harness(admission: str, cost: CostModel) -> Harness:
    return Harness(config=SchedulerConfig(admission=admission), cost=cost)


def test_a_machine_slower_than_real_time_refuses_every_stream_under_strict_admission():
    # 34 ms a lone step, the lane counts on 3 steps in 4: 22.1 codes/s.
    h = harness("strict", SLOW)
    assert h.sched.capacity.stream_capacity(256) == 0
    ref = h.sched.admit(h.utterance("a", I, 1), h.now)
    assert ref is not None and ref.reason is RefusalReason.OVERLOADED
    assert ref.message == ("this model keeps no interactive stream in real time (22.1 codes/s "
                           "alone, real time with the headroom needs 60.9); --admission strict "
                           "refuses them")  # 46.875 codes/s with 30% headroom
    # Nothing frees capacity but a better cost estimate: the longest hint.
    assert ref.retry_after_s == h.sched.config.retry_after_max_s
    # A streamed turn with no sentence yet is refused the same way, and holds no place.
    assert h.sched.admit_empty("b", I, h.now, h.now) is not None
    assert h.sched.reservations.count(h.now) == 0
    load = h.sched.saturation(h.now)
    assert (load.streams, load.capacity) == (0, 0) and load.retry_after_s is not None
    # Background work has deadlines, not a rate: still admitted.
    assert h.sched.admit(h.utterance("bg", B, 1, deadline=h.now + 60), h.now) is None


def test_the_capacity_rule_serves_the_same_slow_machine_one_stream():
    h = harness("capacity", SLOW)
    assert h.sched.capacity.stream_capacity(256) == 1
    assert h.sched.admit(h.utterance("a", I, 1), h.now) is None
    assert h.sched.admit(h.utterance("b", I, 1), h.now).reason is RefusalReason.OVERLOADED


def test_strict_admission_is_the_capacity_rule_where_real_time_holds():
    answers = {}
    for mode in ("capacity", "strict"):
        h = harness(mode, STEEP)
        answers[mode] = [h.sched.capacity.stream_capacity(256)] + [
            h.sched.admit(h.utterance(f"s{k}", I, 1, length=50), h.now) is None for k in range(3)]
    assert answers["strict"] == answers["capacity"] == [2, True, True, False]


def test_a_machine_just_fast_enough_for_real_time_with_headroom_is_served_strictly():
    # A lone stream needs a code every 1 / (46.875 * 1.3) = 16.41 ms; the lane
    # counts on every step while a background job could ride (share 1).
    edge = 1.0 / (46.875 * 1.3)
    inside = CostModel.from_table({(b, k): edge * 0.999 * (1 if b <= 2 else 4) for b in (1, 2, 4, 8)
                                   for k in BUCKETS})
    outside = CostModel.from_table({(b, k): edge * 1.001 * (1 if b <= 2 else 4) for b in (1, 2, 4, 8)
                                    for k in BUCKETS})
    assert harness("strict", inside).sched.capacity.stream_capacity(256) == 1
    assert harness("strict", outside).sched.capacity.stream_capacity(256) == 0
