"""Interactive playback deadlines and the background completion estimate."""

import pytest

from scheduler import Job, JobState, Lane
from scheduler.estimate import finish_times, first_late
from scheduler.playout import ScheduledUtterance, follows, playback


def seg(index, est=94, deadline=None, arrival=0.0, job_id=None):
    return Job(id=job_id if job_id is not None else index, utterance="u", index=index,
               lane=Lane.INTERACTIVE, prompt_len=10, est_tokens=est, deadline=deadline, arrival=arrival)


def test_segment_zero_is_due_at_its_deadline_or_the_default():
    utt = ScheduledUtterance("u", Lane.INTERACTIVE, 1, 0.0, {0: seg(0, deadline=0.5)})
    assert playback(utt, 0, 0.3).first_audio_due == 0.5
    utt = ScheduledUtterance("u", Lane.INTERACTIVE, 1, 0.0, {0: seg(0, arrival=2.0)})
    assert playback(utt, 0, 0.3).first_audio_due == pytest.approx(2.3)


def test_next_segment_is_due_when_the_previous_audio_ends():
    a, b = seg(0, est=94), seg(1, est=47)
    a.first_code_at, a.tokens, a.state, a.started_at = 1.0, 10, JobState.ACTIVE, 0.9
    utt = ScheduledUtterance("u", Lane.INTERACTIVE, 1, 0.0, {0: a, 1: b})
    pa = playback(utt, 0, 0.3)
    assert pa.starts == 1.0 and pa.runs_dry == pytest.approx(1.0 + 10 / 46.875)
    assert pa.ends == pytest.approx(1.0 + 94 / 46.875)
    assert playback(utt, 1, 0.3).first_audio_due == pytest.approx(pa.ends)


def test_a_segment_arriving_after_the_audio_went_quiet_is_due_promptly():
    a, b = seg(0, est=47), seg(1, arrival=10.0)
    a.first_code_at, a.tokens, a.state = 0.2, 47, JobState.FINISHED
    utt = ScheduledUtterance("u", Lane.INTERACTIVE, 1, 0.0, {0: a, 1: b})
    assert playback(utt, 1, 0.3).first_audio_due == pytest.approx(10.3)


def test_a_segment_follows_the_nearest_earlier_one_not_cancelled():
    a, b, c = seg(0), seg(1), seg(2)
    utt = ScheduledUtterance("u", Lane.INTERACTIVE, 1, 0.0, {0: a, 1: b, 2: c})
    assert follows(utt, 0) is None
    assert follows(utt, 2) == b.id
    a.state = JobState.FINISHED  # running, ended or failed: its audio plays first
    assert follows(utt, 1) == a.id
    b.state = JobState.CANCELLED  # plays nothing
    assert follows(utt, 2) == a.id
    a.state = JobState.CANCELLED
    assert follows(utt, 2) is None


def bg(job_id, tokens, deadline=None):
    return Job(id=job_id, utterance=job_id, index=0, lane=Lane.BACKGROUND, prompt_len=10,
               est_tokens=tokens, deadline=deadline)


def test_list_scheduling_on_parallel_rows():
    jobs = [bg(1, 9), bg(2, 9), bg(3, 9)]  # 10 steps each with the prefill
    done = finish_times(jobs, 100.0, machines=2, step_seconds=lambda j: 0.1)
    assert done[1] == pytest.approx(101.0) and done[2] == pytest.approx(101.0)
    assert done[3] == pytest.approx(102.0)  # waits for a free row
    late = first_late(jobs, done)
    assert late is None
    jobs[2].deadline = 101.5
    assert first_late(jobs, done) is jobs[2]
    assert first_late(jobs, done, skip=lambda j: j.id == 3) is None


def test_running_jobs_count_only_their_remaining_codes():
    job = bg(1, 100)
    job.state, job.tokens = JobState.ACTIVE, 90
    done = finish_times([job], 0.0, machines=1, step_seconds=lambda j: 1.0, safety=2.0)
    assert done[1] == pytest.approx(20.0)
