"""clients.probe_words: when word timings arrive against their audio (pure arithmetic)."""

import pytest

from clients.probe_report import UtteranceRecord, summarize, table
from clients.probe_words import word_timing_stats

# Three 100 ms frames arriving at 1.0, 1.05, 1.3 s: playback starts at 1.0 and runs out
# at 1.2, so the third frame plays from its arrival (a 100 ms stall) at 1.3.
FRAMES = [(1.0, 0.1), (1.05, 0.1), (1.3, 0.1)]


def test_timings_before_their_audio_have_a_positive_lead_and_margin():
    words = [(0.99, 0.0), (0.99, 150.0), (1.2, 250.0)]
    stats = word_timing_stats(FRAMES, words)
    assert stats.words == 3 and stats.late == 0
    # leads: 1.0-0.99, 1.05-0.99, 1.3-1.2 (s) -> 10, 60, 100 ms
    assert stats.lead_ms_min == pytest.approx(10.0) and stats.lead_ms_median == pytest.approx(60.0)
    # margins: due 1.0, 1.15, 1.35 -> 10, 160, 150 ms
    assert stats.margin_ms_min == pytest.approx(10.0)


def test_a_timing_after_its_audio_was_due_is_late():
    # "150 ms" is due at 1.15 s (frame 2 plays from 1.1); its timing came at 1.2.
    stats = word_timing_stats(FRAMES, [(0.99, 0.0), (1.2, 150.0)])
    assert stats.late == 1
    assert stats.margin_ms_min == pytest.approx(-50.0)
    assert stats.lead_ms_min == pytest.approx(-150.0)  # after its frame arrived, too


def test_the_stall_moves_when_audio_is_due():
    # The third frame's start (200 ms) is due at 1.3 s, its arrival, not at 1.2 s.
    stats = word_timing_stats(FRAMES, [(1.25, 200.0)])
    assert stats.late == 0 and stats.margin_ms_min == pytest.approx(50.0)


def test_words_past_the_audio_are_not_scored():
    stats = word_timing_stats(FRAMES[:1], [(0.9, 50.0), (0.9, 500.0)])
    assert stats.words == 1
    assert word_timing_stats([], [(0.9, 0.0)]).words == 0


def test_the_summary_and_table_report_word_timings():
    recs = [UtteranceRecord(level=1, lane="interactive", chars=10, audio_ms=300.0,
                            words=3, word_lead_ms=60.0, word_lead_ms_min=10.0,
                            word_margin_ms_min=10.0 - 60 * i, words_late=i) for i in range(2)]
    [point] = summarize(recs)
    words = point["lanes"]["interactive"]["words"]
    assert words["words"] == 6 and words["late"] == 1 and words["margin_ms_min"] == -50.0
    text = table([point])
    assert "margin before due" in text and text.rstrip().endswith("| 1")
