"""Whether word timings come in time: the probe's score for `speak(timestamps=True)`.

A client highlights or records a word when its audio plays, so the word's timing must
be there by then. Given the arrival of each audio frame and of each word's timing, this
module replays the audio as `clients/playback.py`'s player does (it starts at the first
frame and plays in real time, stalling when audio runs out) and reports, per word:
- its lead: when the frame holding the word's first sample arrived, minus when the
  word's timing arrived (>= 0: the timing came first);
- its margin: when that sample was due to play, minus when the timing arrived; a
  negative margin is a word whose timing came after its audio was due (`late`).
Pure arithmetic, no clock of its own.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Arrival times are sums of floats: "exactly on time" must not count as late.
_EPSILON_S = 1e-6


@dataclass(frozen=True, slots=True)
class WordTimingStats:
    """Over one utterance's words (ms; None without words): the smallest and the median
    lead, the smallest margin, and how many words' timings came after their audio was
    due to play."""

    words: int
    lead_ms_min: float | None
    lead_ms_median: float | None
    margin_ms_min: float | None
    late: int


def _play_starts(frames: Sequence[tuple[float, float]]) -> list[float]:
    """When each frame starts to play (s), the player starting at the first arrival."""
    starts: list[float] = []
    play_end: float | None = None
    for arrival, duration in frames:
        start = arrival if play_end is None or arrival > play_end + _EPSILON_S else play_end
        starts.append(start)
        play_end = start + duration
    return starts


def word_timing_stats(frames: Sequence[tuple[float, float]],
                      words: Sequence[tuple[float, float]]) -> WordTimingStats:
    """`frames`: (arrival s, duration s) in order; `words`: (timing's arrival s, the
    word's start_ms on the utterance's audio clock). A word past the audio received
    (an utterance cut short) is not scored."""
    starts = _play_starts(frames)
    leads: list[float] = []
    margins: list[float] = []
    frame, frame_start_ms = 0, 0.0
    for received, start_ms in sorted(words, key=lambda w: w[1]):
        while frame < len(frames) and frame_start_ms + 1000.0 * frames[frame][1] <= start_ms:
            frame_start_ms += 1000.0 * frames[frame][1]
            frame += 1
        if frame == len(frames):
            break
        due = starts[frame] + (start_ms - frame_start_ms) / 1000.0
        leads.append(1000.0 * (frames[frame][0] - received))
        margins.append(1000.0 * (due - received))
    if not leads:
        return WordTimingStats(0, None, None, None, 0)
    late = sum(1 for m in margins if m < -1000.0 * _EPSILON_S)
    return WordTimingStats(len(leads), min(leads), statistics.median(leads), min(margins), late)
