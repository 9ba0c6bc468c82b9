"""Interactive admission by capacity, retry hints and fair service, on a fake clock."""

import pytest
from scheduler_fakes import Harness

from scheduler import CODES_PER_SECOND, CostModel, JobState, Lane, RefusalReason, SchedulerConfig

I, B = Lane.INTERACTIVE, Lane.BACKGROUND
SIZES = (1, 2, 4, 8, 16, 32, 64)
BUCKETS = (256, 512, 1024, 2048)


def flat(seconds: float) -> CostModel:
    """A launch-bound (GPU-like, or the tone runner's) step: the same at any batch."""
    return CostModel.from_table({(b, k): seconds for b in SIZES for k in BUCKETS})


# Two rows cost one, four cost double: interactive steps carry two streams.
STEEP = CostModel.from_table({(b, k): {1: 0.010, 2: 0.010, 4: 0.020, 8: 0.040}[b]
                              for b in (1, 2, 4, 8) for k in BUCKETS})
FLAT64 = SchedulerConfig(batch_sizes=SIZES, max_slots=64)


OVERLOADED = "overloaded"


def admit_streams(h, count, length, prefix="s"):
    """Each admission's answer: None, or the refusal's reason ("overloaded")."""
    answers = [h.sched.admit(h.utterance(f"{prefix}{k}", I, 1, length=length), h.now)
               for k in range(count)]
    return [None if a is None else a.reason.value for a in answers]


def run_counting_underruns(h):
    """Run to idle; count interactive codes that came after the stream's
    audio so far had run out (its playback started at its first code)."""
    underruns = 0
    while (plan := h.step()) is not None:
        for job_id in plan.jobs:
            job = h.sched.job(job_id) or next((j for j in h.ended if j.id == job_id), None)
            if job is None or job.lane is not I or job.tokens < 2:
                continue
            needed_at = job.first_code_at + (job.tokens - 1) / CODES_PER_SECOND
            underruns += h.now > needed_at + 1e-9
    return underruns


@pytest.fixture
def track_ended(monkeypatch):
    """Let run_counting_underruns see jobs that ended in the step just run."""
    from scheduler.book import JobBook

    def install(h):
        h.ended = []
        original = JobBook.end

        def end(book, job, state, now, release=False):
            h.ended.append(job)
            original(book, job, state, now, release)
        monkeypatch.setattr(JobBook, "end", end)
        return h
    return install


def test_a_flat_runner_takes_streams_up_to_its_slots_then_refuses_at_once_with_a_hint():
    h = Harness(config=FLAT64, cost=flat(0.010))
    assert h.sched.saturation(h.now).capacity == 64
    assert admit_streams(h, 64, length=200) == [None] * 64
    ref = h.sched.admit(h.utterance("one-more", I, 1, length=200), h.now)
    assert ref is not None and ref.reason is RefusalReason.OVERLOADED
    # Every slot is taken by a stream 200 codes long: none frees within the budget.
    assert 1.0 < ref.retry_after_s < 4.0
    load = h.sched.saturation(h.now)
    assert (load.streams, load.capacity) == (64, 64) and load.retry_after_s > 0
    # The old rule queues it (and serves it late).
    q = Harness(config=SchedulerConfig(batch_sizes=SIZES, max_slots=64, admission="queue-only",
                                       max_queue_interactive=100), cost=flat(0.010))
    assert admit_streams(q, 65, length=200) == [None] * 65


def test_streams_of_several_sentences_are_not_refused_for_their_count():
    def admitted(admission):
        h = Harness(config=SchedulerConfig(batch_sizes=SIZES, max_slots=64, admission=admission),
                    cost=flat(0.010))
        return sum(h.sched.admit(h.utterance(f"s{k}", I, 2, length=20), h.now) is None
                   for k in range(64))

    # The batch has room for 64 streams; the old bound of 64 waiting segments
    # refused half of them.
    assert (admitted("capacity"), admitted("queue-only")) == (64, 32)


def test_capacity_is_the_streams_that_keep_real_time_with_headroom():
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8)), cost=STEEP)
    # Two rows per step at 10 ms, a quarter of the steps kept for background:
    # two streams get 75 codes/s (>= 46.875 * 1.3), three would get 50.
    assert h.sched.capacity.stream_capacity(256) == 2
    assert admit_streams(h, 2, length=50) == [None, None]
    ref = h.sched.admit(h.utterance("third", I, 1, length=50), h.now)
    assert ref.reason is RefusalReason.OVERLOADED
    assert ref.message == ("the interactive lane is at its capacity of 2 real-time streams at this "
                           "utterance's length")


def test_a_capacity_of_one_stream_is_named_in_the_singular():
    linear = CostModel.from_table({(b, k): 0.012 * b for b in (1, 2, 4, 8) for k in BUCKETS})
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8)), cost=linear)  # rows cost what streams do
    assert h.sched.capacity.stream_capacity(256) == 1
    assert admit_streams(h, 1, length=50) == [None]
    ref = h.sched.admit(h.utterance("second", I, 1, length=50), h.now)
    assert "capacity of 1 real-time stream at" in ref.message


def test_a_machine_slower_than_real_time_still_serves_one_stream():
    h = Harness(cost=CostModel.default_cpu())
    assert h.sched.capacity.stream_capacity(256) == 1
    assert h.sched.admit(h.utterance("a", I, 1), h.now) is None
    assert h.sched.admit(h.utterance("b", I, 1), h.now).reason is RefusalReason.OVERLOADED


def test_admitted_streams_never_run_dry_and_queue_only_lets_them(track_ended):
    def offered(admission):
        h = track_ended(Harness(config=SchedulerConfig(admission=admission), cost=STEEP))
        admitted = sum(r is None for r in admit_streams(h, 6, length=150))
        return admitted, run_counting_underruns(h)

    assert offered("capacity") == (2, 0)
    admitted, underruns = offered("queue-only")
    assert admitted == 6 and underruns > 100


def test_a_stream_waits_for_a_slot_only_when_it_frees_within_the_budget():
    cfg = SchedulerConfig(batch_sizes=SIZES, max_slots=4, interactive_first_audio_s=0.1)
    h = Harness(config=cfg, cost=flat(0.010))
    admit_streams(h, 3, length=400)
    [short] = h.utterance("short", I, 1, length=30)
    h.sched.admit([short], h.now)
    h.step()  # all four hold their slots
    # No slot, and none frees within the 100 ms budget: refused, with the
    # time at which the first one to free would make it fit.
    ref = h.sched.admit(h.utterance("late", I, 1, length=50), h.now)
    assert ref.reason is RefusalReason.OVERLOADED and "budget" in ref.message
    assert ref.retry_after_s == pytest.approx(29 * 0.010 + 0.040 - 0.1, abs=0.015)
    while short.tokens < 27:
        h.step()
    # Now "short" is about to end: the next one is admitted and waits for its slot.
    [waits] = h.utterance("waits", I, 1, length=50)
    assert h.sched.admit([waits], h.now) is None
    arrival = h.now
    while waits.first_code_at is None:
        h.step()
    assert waits.first_code_at - arrival <= 0.1


def test_retry_hints_are_bounded_and_never_zero():
    bounds = dict(retry_after_min_s=0.2, retry_after_max_s=5.0)
    h = Harness(config=SchedulerConfig(batch_sizes=SIZES, max_slots=2, **bounds), cost=flat(0.010))
    admit_streams(h, 2, length=2000)  # ~ 27 s of work each
    assert h.sched.admit(h.utterance("x", I, 1), h.now).retry_after_s == 5.0
    # At capacity with streams a code from their end: the estimate is ~ 0.
    g = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8), **bounds), cost=STEEP)
    admit_streams(g, 2, length=1)
    assert g.sched.admit(g.utterance("y", I, 1), g.now).retry_after_s == 0.2


def test_the_first_audio_budget_is_derived_from_the_cost_model():
    h = Harness(config=FLAT64, cost=flat(0.010))
    # One step in flight, then prefill (2 steps) and the first code at full
    # capacity (64 streams, a quarter of steps kept: 13.3 ms), plus 30%.
    assert h.sched.first_audio_s == pytest.approx(0.010 + 1.3 * (0.020 + 0.0133), rel=0.01)
    chunked = Harness(config=SchedulerConfig(batch_sizes=SIZES, max_slots=64, first_audio_steps=12),
                      cost=flat(0.010))
    assert chunked.sched.first_audio_s > h.sched.first_audio_s + 0.1
    fixed = Harness(config=SchedulerConfig(interactive_first_audio_s=0.5), cost=flat(0.010))
    assert fixed.sched.first_audio_s == 0.5
    # Even a free model leaves time for the event loop's hand-offs.
    assert Harness(cost=flat(1e-5)).sched.first_audio_s == pytest.approx(0.05)


def test_later_segments_of_an_admitted_stream_are_never_refused_for_load():
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8)), cost=STEEP)
    admit_streams(h, 2, length=50)
    assert h.sched.admit(h.utterance("third", I, 1), h.now) is not None
    for k in range(1, 10):
        assert h.sched.add(h.job("s0", I, index=k, length=20), h.now) is None


def test_more_streams_than_rows_are_served_round_robin():
    # One row per step (no riders), six streams over capacity (queue-only):
    # every stream gets a code at least every six steps.
    h = Harness(config=SchedulerConfig(admission="queue-only", rider_overhead=0.0),
                cost=CostModel.default_cpu())
    jobs = [j for k in range(6) for j in h.utterance(f"s{k}", I, 1, length=30)]
    for job in jobs:
        h.sched.admit([job], h.now)
    last = {}
    worst = 0
    for n, plan in enumerate(h.run()):
        for job_id in plan.jobs:
            if job_id in last:
                worst = max(worst, n - last[job_id])
            last[job_id] = n
    assert worst <= 6


def test_background_keeps_its_starvation_bound_beside_admitted_streams():
    cfg = SchedulerConfig(urgent_slack_s=5.0, interactive_steps_per_background=3)
    h = Harness(cost=CostModel.default_cpu(), config=cfg)
    h.sched.admit([h.job("bg", B, length=40, deadline=4.0)], 0.0)
    lanes = []
    for k in range(60):  # a stream always live: a new one as soon as one is admitted
        h.sched.admit(h.utterance(f"t{k}", I, 1, length=10), h.now)
        plan = h.step()
        if plan is None:
            break
        lanes.append(plan.lane)
    run = longest = 0
    for lane in lanes[:40]:
        run = run + 1 if lane is I else 0
        longest = max(longest, run)
    assert B in lanes[:4] and longest <= 3


def test_a_request_slow_on_an_idle_model_is_not_refused_for_its_own_time():
    # Long KV is dear here: alone, this job's first audio takes longer than the
    # budget derived at the shortest bucket. That is not load: admitted.
    table = {(b, k): 0.005 * (k // 256) for b in (1, 2, 4, 8) for k in BUCKETS}
    h = Harness(config=SchedulerConfig(first_audio_steps=12), cost=CostModel.from_table(table))
    [job] = h.utterance("long", I, 1, length=1500, prompt_len=300)
    assert h.sched.capacity.start_estimate([job], 0.0).alone > h.sched.first_audio_s
    assert h.sched.admit([job], 0.0) is None


def test_a_streamed_utterance_holds_its_place_until_its_first_sentence():
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8)), cost=STEEP)
    assert h.sched.saturation(h.now).capacity == 2
    # Nothing to speak yet (no sentence end): judged with a nominal segment,
    # nothing queued, but the place is held.
    assert h.sched.admit_empty("streamed", I, h.now, h.now) is None
    assert h.sched.idle and h.sched.saturation(h.now).streams == 1
    assert admit_streams(h, 2, length=80) == [None, OVERLOADED]
    late = h.sched.admit_empty("late", I, h.now, h.now)
    assert late.reason is RefusalReason.OVERLOADED and late.retry_after_s > 0.5
    # Its first sentence arrives: queued though the lane is full, and the held
    # place became that stream (not one more).
    assert h.sched.add(h.job("streamed", I, index=0, length=40), h.now) is None
    assert len(h.sched.capacity.streams()) == 2
    assert h.sched.saturation(h.now).streams == 2
    assert "streamed" not in h.sched.reservations


def test_a_burst_of_streamed_turns_is_admitted_only_up_to_capacity_and_ends_free_their_places():
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8)), cost=STEEP)
    answers = [h.sched.admit_empty(f"turn{k}", I, h.now, h.now) for k in range(4)]
    assert answers[:2] == [None] * 2
    assert all(a.reason is RefusalReason.OVERLOADED for a in answers[2:])
    # Retry when a held turn is expected to have spoken its first sentence at least.
    assert all(1.0 < a.retry_after_s < 5.0 for a in answers[2:])
    load = h.sched.saturation(h.now)
    assert (load.streams, load.capacity) == (2, 2) and load.retry_after_s > 1.0
    h.sched.release("turn1")  # cancelled before its first sentence
    h.sched.release("turn1")  # a second release is harmless
    h.sched.release("never-held")
    assert h.sched.saturation(h.now).streams == 1
    assert h.sched.admit_empty("turn3", I, h.now, h.now) is None


def test_held_places_count_against_the_kv_slots_they_will_need():
    # Rate is no limit here (a flat step at any batch): the eight slots are.
    h = Harness(config=SchedulerConfig(batch_sizes=SIZES, max_slots=8), cost=flat(0.010))
    assert h.sched.saturation(h.now).capacity == 8
    assert [h.sched.admit_empty(f"turn{k}", I, h.now, h.now) for k in range(8)] == [None] * 8
    late = h.sched.admit_empty("late", I, h.now, h.now)
    assert late.reason is RefusalReason.OVERLOADED and "first audio" in late.message
    # A slot frees once a held turn has spoken its nominal sentence (~2 s at 10 ms a code).
    assert 0.5 < late.retry_after_s < 2.0
    whole = h.sched.admit(h.utterance("whole", I, 1), h.now)
    assert whole is not None and whole.reason is RefusalReason.OVERLOADED


def test_a_held_place_lapses_and_the_late_text_is_still_served():
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8), stream_reservation_s=5.0),
                cost=STEEP)
    for k in range(2):
        assert h.sched.admit_empty(f"silent{k}", I, h.now, h.now) is None
    assert h.sched.admit_empty("next", I, h.now, h.now) is not None
    h.now += 4.9
    assert h.sched.admit_empty("next", I, h.now, h.now) is not None
    h.now += 0.2  # past the hold: the silent ones no longer count
    assert h.sched.saturation(h.now).streams == 0
    assert h.sched.admit_empty("next", I, h.now, h.now) is None
    # A lapsed one's sentence, when it comes at last, is not refused, and is served.
    assert h.sched.add(h.job("silent0", I, index=0, length=40), h.now) is None
    h.run()
    assert h.sched.idle and len(h.finished()) == 1


@pytest.mark.parametrize("config", [
    SchedulerConfig(batch_sizes=(1, 2, 4, 8), stream_reservation_s=0.0),
    SchedulerConfig(batch_sizes=(1, 2, 4, 8), admission="queue-only"),
], ids=["no-hold", "queue-only"])
def test_without_holding_a_streamed_utterance_counts_once_its_text_comes(config):
    h = Harness(config=config, cost=STEEP)
    assert h.sched.admit_empty("streamed", I, h.now, h.now) is None
    assert h.sched.saturation(h.now).streams == 0
    assert admit_streams(h, 2, length=80) == [None] * 2
    assert h.sched.add(h.job("streamed", I, index=0, length=40), h.now) is None
    assert len(h.sched.capacity.streams()) == 3


def test_a_streamed_background_utterance_holds_nothing():
    h = Harness(config=SchedulerConfig(batch_sizes=(1, 2, 4, 8)), cost=STEEP)
    assert h.sched.admit_empty("narration", B, h.now, h.now) is None
    assert "narration" not in h.sched.reservations
    assert h.sched.saturation(h.now).streams == 0


def test_streams_falling_behind_stop_admissions_whatever_the_cost_model_says():
    h = Harness(config=FLAT64, cost=flat(0.010))
    [a] = h.utterance("a", I, 1, length=400)
    h.sched.admit([a], h.now)
    h.step()
    h.now += 1.0  # the machine stalled: a's audio ran out long ago
    ref = h.sched.admit(h.utterance("b", I, 1), h.now)
    assert ref is not None and ref.retry_after_s > 0
    assert ref.message == "admitted interactive streams are behind real time"
    h.step()
    for _ in range(50):  # it catches up (codes come faster than real time again)
        h.step()
    # Still behind: 51 codes is ~1.1 s of audio, started ~1.5 s ago.
    assert h.sched.admit(h.utterance("c", I, 1), h.now) is not None
    for _ in range(100):
        h.step()
    assert h.sched.admit(h.utterance("d", I, 1), h.now) is None


def test_a_next_sentence_starts_early_only_on_a_slot_no_waiting_stream_needs():
    cfg = SchedulerConfig(batch_sizes=SIZES, max_slots=3, admission="queue-only")
    h = Harness(config=cfg, cost=flat(0.010))
    two = h.job("two", I, 0, length=40), h.job("two", I, 1, length=300)
    h.sched.admit(list(two), h.now)
    h.sched.admit(h.utterance("one", I, 1, length=300), h.now)
    [short] = h.utterance("short", I, 1, length=5)
    h.sched.admit([short], h.now)
    while short.state is not JobState.FINISHED:  # three slots held all along
        h.step()
    # A slot frees as a new stream comes; "two"'s second sentence ranks first
    # (it is due within the start lead) but its stream is still playing.
    [new] = h.utterance("new", I, 1, length=50)
    h.sched.admit([new], h.now)
    h.step()
    assert new.started and not two[1].started
    while two[0].state is not JobState.FINISHED:
        h.step()
    h.step()
    assert two[1].started  # on its own stream's slot


def test_a_next_sentence_does_not_start_early_on_the_slot_a_held_turn_will_need():
    h = Harness(config=SchedulerConfig(batch_sizes=SIZES, max_slots=2), cost=flat(0.010))
    assert h.sched.admit_empty("held", I, h.now, h.now) is None
    two = h.job("two", I, 0, length=40), h.job("two", I, 1, length=40)
    assert h.sched.admit(list(two), h.now) is None
    for _ in range(5):
        h.step()
    assert two[0].started and not two[1].started  # the free slot is the held turn's
    h.sched.release("held")  # that turn ended before its first sentence
    h.step()
    assert two[1].started


def test_admission_counts_the_slot_a_sentence_started_early_holds():
    cfg = SchedulerConfig(batch_sizes=SIZES, max_slots=3, interactive_first_audio_s=0.1)
    h = Harness(config=cfg, cost=flat(0.010))
    two = h.utterance("two", I, 2, length=300)
    h.sched.admit(two, h.now)
    h.sched.admit(h.utterance("one", I, 1, length=300), h.now)
    h.step()
    h.step()
    assert two[1].started and h.sched.book.free_slots == 0  # two streams, three slots held
    ref = h.sched.admit(h.utterance("new", I, 1, length=50), h.now)
    assert ref is not None and "budget" in ref.message

