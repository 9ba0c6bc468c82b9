"""A scripted assistant reply, split the way a language model streams it, and the
command-line flags the examples that speak it share (examples, tests)."""

from __future__ import annotations

import argparse
import re

from clients.client import DEFAULT_URL

REPLY = ("Sure, here is the plan for tomorrow. The meeting starts at nine, "
         "and lunch is at noon. After that you are free for the rest of the day.")


def llm_tokens(text: str) -> list[str]:
    """Split text into LLM-like tokens: word pieces with their spaces."""
    return [piece for word in re.findall(r"\S+\s*", text)
            for piece in (word[i:i + 5] for i in range(0, len(word), 5))]


def example_parser(prog: str, description: str, token_delay_ms: float) -> argparse.ArgumentParser:
    """-o, --url, --token, --text, --token-delay-ms, --interrupt-after."""
    p = argparse.ArgumentParser(prog=prog, description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-o", "--output", required=True, help="WAV file to write")
    p.add_argument("--url", default=DEFAULT_URL)
    p.add_argument("--token", default=None)
    p.add_argument("--text", default=REPLY, help="the scripted LLM reply")
    p.add_argument("--token-delay-ms", type=float, default=token_delay_ms)
    p.add_argument("--interrupt-after", type=float, default=None, metavar="S")
    return p
