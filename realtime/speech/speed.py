"""ChatTTS's speed levels as tempo: the planning figure and OpenAI's ``speed``.

ChatTTS reads its speed from the prompt token ``[speed_N]`` (N = 0..9,
upstream's default 5). The token is learned, not a time-stretch, so there is
no exact tempo per level. We plan with a geometric ladder: each level speaks
``TEMPO_STEP`` times faster than the one below, level 5 being 1.0. The step
is our assumption, not a measurement (this project has no trained checkpoint
to time against; docs/server.md says so): ChatTTS's users describe
``[speed_0]`` as markedly slow and ``[speed_9]`` as brisk, roughly half and
one and a half times the default, which a step of 1.15 gives (0.50 and 1.75).

Two readers use the ladder, so they agree with each other:
- ``duration_factor(level)``: how much longer than at level 5 the same text
  takes (the scheduler's code estimate scales by it; slower speech = more codes).
- ``level_for_tempo(tempo)``: the level nearest a tempo multiplier such as
  OpenAI's ``speed`` (0.25-4.0), nearest on the log scale, clamped to 0..9;
  monotonic, and 1.0 gives 5.
"""

from __future__ import annotations

import math

SPEED_LEVELS = range(10)
DEFAULT_LEVEL = 5
TEMPO_STEP = 1.15


def tempo(level: int) -> float:
    """The assumed tempo of ``[speed_<level>]`` relative to level 5."""
    return float(TEMPO_STEP ** (level - DEFAULT_LEVEL))


def duration_factor(level: int) -> float:
    """How many times longer than at level 5 speech at ``level`` takes."""
    return 1.0 / tempo(level)


def level_for_tempo(multiplier: float) -> int:
    """The speed level nearest ``multiplier`` (> 0) on the log scale, 0..9."""
    if not multiplier > 0:
        raise ValueError(f"a tempo multiplier is > 0, not {multiplier}")
    level = DEFAULT_LEVEL + round(math.log(multiplier) / math.log(TEMPO_STEP))
    return min(max(level, SPEED_LEVELS[0]), SPEED_LEVELS[-1])
