"""The one-walk ranking agrees with playout.playback and the segment-order rule."""

from hypothesis import given, settings
from hypothesis import strategies as st
from mutation_budget import examples

from scheduler import Job, JobState, Lane
from scheduler.playout import ScheduledUtterance, playback
from scheduler.ranking import ranked_interactive, runnable

FIRST_AUDIO, LEAD = 0.3, 1.0

_segment = st.tuples(
    st.sampled_from(list(JobState)),
    st.integers(0, 200),  # tokens
    st.integers(8, 300),  # est_tokens
    st.one_of(st.none(), st.floats(0.0, 5.0)),  # deadline
    st.floats(0.0, 5.0),  # arrival
    st.one_of(st.none(), st.floats(0.0, 5.0)),  # first code at
    st.floats(0.0, 8.0),  # last code at (after the first)
)


def _utterance(seq, segments, indices):
    utt = ScheduledUtterance(seq, Lane.INTERACTIVE, seq, 0.0)
    for n, (index, (state, tokens, est, deadline, arrival, first, last)) in enumerate(
            zip(indices, segments)):
        job = Job(id=seq * 100 + n, utterance=seq, index=index, lane=Lane.INTERACTIVE,
                  prompt_len=10, est_tokens=est, deadline=deadline, arrival=arrival)
        job.state, job.tokens = state, tokens
        if state is JobState.ACTIVE or (state.terminal and first is not None):
            job.started_at = 0.0
            job.first_code_at = first if first is not None else 0.1
            job.last_code_at = max(job.first_code_at, last)
        utt.segments[index] = job
    return utt


def _next_in_order(utt, job):
    return all(s.started or s.state.terminal for i, s in utt.segments.items() if i < job.index)


def _brute_force(utts):
    rows = []
    for utt in utts:
        for job in utt.segments.values():
            if job.state.terminal or (job.state is JobState.WAITING and not _next_in_order(utt, job)):
                continue
            when = playback(utt, job.index, FIRST_AUDIO)
            if job.state is JobState.ACTIVE:  # behind: by its newest code, turn about
                key = max(when.runs_dry, job.last_code_at)
            else:  # never ahead of its own arrival
                key = max(when.first_audio_due - LEAD, job.arrival)
            rows.append((key, utt.seq, job.index, job.id, job))
    rows.sort(key=lambda r: r[:4])
    return [r[-1] for r in rows]


@st.composite
def _utterances(draw):
    utts = []
    for seq in range(1, draw(st.integers(1, 3)) + 1):
        segments = draw(st.lists(_segment, min_size=1, max_size=6))
        indices = draw(st.permutations(range(len(segments))))  # inserted out of order too
        utts.append(_utterance(seq, segments, indices))
    return utts


@settings(max_examples=examples(300), deadline=None)
@given(_utterances())
def test_ranking_matches_playback_and_segment_order(utts):
    assert ranked_interactive(utts, FIRST_AUDIO, LEAD) == _brute_force(utts)
    for utt in utts:
        expected = [j for _, j in sorted(utt.segments.items()) if not j.state.terminal
                    and (j.state is JobState.ACTIVE or _next_in_order(utt, j))]
        assert list(runnable(utt)) == expected


def test_only_the_first_unstarted_segment_may_start():
    utt = _utterance(1, [(JobState.ACTIVE, 5, 50, None, 0.0, 0.1, 0.2),
                         (JobState.WAITING, 0, 50, None, 0.0, None, 0.0),
                         (JobState.WAITING, 0, 50, None, 0.0, None, 0.0)], [0, 1, 2])
    assert [j.index for j in runnable(utt)] == [0, 1]
    assert {j.index for j in ranked_interactive([utt], FIRST_AUDIO, LEAD)} == {0, 1}


def test_a_new_segment_never_overtakes_a_stream_already_dry_when_it_came():
    # The stream's 46 codes ran out at ~1.0 s, long before its newest code.
    running = _utterance(1, [(JobState.ACTIVE, 46, 200, None, 0.0, 0.0, 0.5)], [0])
    came_after = _utterance(2, [(JobState.WAITING, 0, 50, None, 1.2, None, 0.0)], [0])
    came_before = _utterance(3, [(JobState.WAITING, 0, 50, None, 0.4, None, 0.0)], [0])
    order = [j.utterance for j in ranked_interactive([running, came_after, came_before],
                                                    FIRST_AUDIO, LEAD)]
    assert order == [3, 1, 2]


def test_streams_that_are_behind_take_turns():
    # Both ran dry long ago; the one served less recently goes first, even
    # though the other started earlier and is further behind its playback.
    early = _utterance(1, [(JobState.ACTIVE, 10, 200, None, 0.0, 0.0, 2.0)], [0])
    late = _utterance(2, [(JobState.ACTIVE, 10, 200, None, 0.0, 1.0, 1.5)], [0])
    assert [j.utterance for j in ranked_interactive([early, late], FIRST_AUDIO, LEAD)] == [2, 1]
