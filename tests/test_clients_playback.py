"""clients.playback: the simulated real-time player used by the probe."""

import pytest

from clients.playback import simulate_playback


def test_frames_arriving_ahead_of_playback_never_stall():
    # 100 ms frames arriving every 50 ms: the buffer only grows.
    frames = [(0.05 * i, 0.1) for i in range(20)]
    stats = simulate_playback(frames)
    assert stats.underruns == 0
    assert stats.stall_ms == 0
    assert stats.played_ms == pytest.approx(2000.0)
    assert stats.max_gap_ms == pytest.approx(50.0)


def test_late_frames_count_underruns_and_stall_time():
    # 100 ms frames at 0.0, 0.1 (on time), 0.35 (150 ms late), 0.45 (on time), 0.6 (50 ms late).
    frames = [(0.0, 0.1), (0.1, 0.1), (0.35, 0.1), (0.45, 0.1), (0.6, 0.1)]
    stats = simulate_playback(frames)
    assert stats.underruns == 2
    assert stats.stall_ms == pytest.approx(200.0)
    assert stats.max_gap_ms == pytest.approx(250.0)


def test_start_buffer_absorbs_jitter():
    frames = [(0.0, 0.1), (0.15, 0.1), (0.2, 0.1)]
    assert simulate_playback(frames).underruns == 1
    assert simulate_playback(frames, start_buffer_s=0.1).underruns == 0


def test_empty_input():
    stats = simulate_playback([])
    assert (stats.underruns, stats.stall_ms, stats.played_ms) == (0, 0.0, 0.0)
