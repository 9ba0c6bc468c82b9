"""What OpenAI's ``instructions`` can say to ChatTTS, and nothing more.

OpenAI's ``instructions`` is free text for a style-following model ("speak
cheerfully, with a British accent"). ChatTTS follows no free-text style: it
has a handful of prompt controls. ``speed_from_instructions`` reads the one
of them that this server runs, the speed:

- a ChatTTS speed token ``[speed_N]`` (N = 0..9) anywhere in the text;
- else a speed word, whole words, any case: "very slow(ly)" -> 1,
  "slow(ly)"/"slower" -> 3, "fast"/"quick(ly)"/"faster" -> 7,
  "very fast"/"very quick(ly)" -> 9.

Everything else (tone, emotion, accent, and the refine levels
``[oral_N][laugh_N][break_N]``, since this server has no refine pass yet) is
ignored; docs/server.md says why. Thread: pure functions.
"""

from __future__ import annotations

import re

_SPEED_TOKEN = re.compile(r"\[speed_([0-9])\]")
# Longest phrases first, so "very slowly" is not read as "slowly".
_SPEED_WORDS: tuple[tuple[re.Pattern[str], int], ...] = tuple(
    (re.compile(rf"\b{pattern}\b", re.IGNORECASE), level) for pattern, level in (
        (r"very\s+slow(?:ly)?", 1),
        (r"very\s+(?:fast|quick(?:ly)?)", 9),
        (r"slow(?:ly|er)?", 3),
        (r"(?:fast(?:er)?|quick(?:ly|er)?)", 7),
    )
)


def speed_from_instructions(instructions: str | None) -> int | None:
    """The ChatTTS speed level ``instructions`` asks for; None when it names none."""
    if not instructions:
        return None
    token = _SPEED_TOKEN.search(instructions)
    if token is not None:
        return int(token.group(1))
    for pattern, level in _SPEED_WORDS:
        if pattern.search(instructions):
            return level
    return None
