"""What OpenAI's ``instructions`` can say to ChatTTS, and nothing more.

OpenAI's ``instructions`` is free text for a style-following model ("speak
cheerfully, with a British accent"). ChatTTS follows no free-text style: it
has a handful of prompt controls, and this module reads the two this server
runs. ``speed_from_instructions`` reads the speed:

- a ChatTTS speed token ``[speed_N]`` (N = 0..9) anywhere in the text;
- else a speed word, whole words, any case: "very slow(ly)" -> 1,
  "slow(ly)"/"slower" -> 3, "fast"/"quick(ly)"/"faster" -> 7,
  "very fast"/"very quick(ly)" -> 9.

``refine_from_instructions`` reads the refine pass's levels: the tokens
``[oral_N]`` (0-9), ``[laugh_N]`` (0-2) and ``[break_N]`` (0-7) anywhere in
the text, the first of each kind, become the refine prompt in upstream's
order (``[oral_2][laugh_0][break_6]``). Everything else (tone, emotion,
accent, words such as "chatty") is ignored; docs/server.md says why.
Thread: pure functions.
"""

from __future__ import annotations

import re

from protocol.params import REFINE_LEVELS

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


_LEVEL_TOKENS = {name: re.compile(rf"\[{name}_([0-9])\]") for name in REFINE_LEVELS}


def refine_from_instructions(instructions: str | None) -> str | None:
    """The refine prompt the levels in ``instructions`` make (in upstream's
    order, each kind once, within its range); None when it names none."""
    if not instructions:
        return None
    prompt = ""
    for name, pattern in _LEVEL_TOKENS.items():
        low, high = REFINE_LEVELS[name]
        level = next((int(m.group(1)) for m in pattern.finditer(instructions)
                      if low <= int(m.group(1)) <= high), None)
        if level is not None:
            prompt += f"[{name}_{level}]"
    return prompt or None
