"""A scripted assistant reply, split the way a language model streams it (examples, tests)."""

from __future__ import annotations

import re

REPLY = ("Sure, here is the plan for tomorrow. The meeting starts at nine, "
         "and lunch is at noon. After that you are free for the rest of the day.")


def llm_tokens(text: str) -> list[str]:
    """Split text into LLM-like tokens: word pieces with their spaces."""
    return [piece for word in re.findall(r"\S+\s*", text)
            for piece in (word[i:i + 5] for i in range(0, len(word), 5))]
