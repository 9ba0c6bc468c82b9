"""A simulated real-time player, to count the stalls a listener would hear.

The player starts playing when the first frame arrives and then consumes audio at real
speed. When the next frame has not arrived by the time the buffered audio runs out, the
player stalls (an underrun) until it does. Pure arithmetic over arrival times, so the
probe can score every utterance without a sound device.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# Arrival times and durations are sums of floats: a frame "exactly on time" must not
# count as an underrun because of rounding.
_EPSILON_S = 1e-6


@dataclass(frozen=True, slots=True)
class PlaybackStats:
    """`underruns`: how many times playback stopped for lack of audio;
    `stall_ms`: total time stopped; `max_gap_ms`: largest time between two arrivals;
    `played_ms`: audio duration played."""

    underruns: int
    stall_ms: float
    max_gap_ms: float
    played_ms: float


def simulate_playback(frames: Iterable[tuple[float, float]], start_buffer_s: float = 0.0
                      ) -> PlaybackStats:
    """Play `frames` = (arrival time s, duration s) in arrival order.

    `start_buffer_s` delays the start of playback after the first arrival (a jitter
    buffer); 0 starts at once, as the probe's contract says.
    """
    underruns = 0
    stall = 0.0
    max_gap = 0.0
    played = 0.0
    play_end: float | None = None  # when the audio buffered so far runs out
    last_arrival: float | None = None
    for arrival, duration in frames:
        if last_arrival is not None:
            max_gap = max(max_gap, arrival - last_arrival)
        last_arrival = arrival
        played += duration
        if play_end is None:
            play_end = arrival + start_buffer_s + duration
        elif arrival > play_end + _EPSILON_S:
            underruns += 1
            stall += arrival - play_end
            play_end = arrival + duration
        else:
            play_end += duration
    return PlaybackStats(underruns, 1000.0 * stall, 1000.0 * max_gap, 1000.0 * played)
