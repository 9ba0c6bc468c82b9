"""What the server bench speaks with our server: its settings (the tone
runner: no model, ``--tone-codes-per-char`` codes of audio a character) and
how a client sees an utterance end. ``bench.server`` and
``bench.server_callgrind`` both start the server this way.
"""

from __future__ import annotations


def server_args(port: int, text: str, connections: int, codes_per_char: float = 1.0) -> list[str]:
    """``python`` arguments of our server with the bench's settings (tone runner)."""
    return ["-m", "realtime", "serve", "--weights", "tone", "--port", str(port),
            "--tone-codes-per-step", "64", "--tone-codes-per-char", str(codes_per_char),
            "--text-chars-per-minute", "0",
            "--max-text-chars", str(len(text) + 10), "--max-message-bytes", str(4 * len(text) + 1024),
            "--max-connections", str(connections + 100), "--log-level", "warning"]


def is_end(msg: str) -> bool:
    """Whether a text message ends the utterance (``done``); an ``error`` raises."""
    if '"error"' in msg:
        raise RuntimeError(msg)
    return '"done"' in msg
