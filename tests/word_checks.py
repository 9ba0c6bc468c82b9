"""What the word-timing tests check of a received utterance (``conftest.Transcript``).

``check_words_precede_their_audio``: frame by frame, every word whose final
``start_ms`` lies before the end of the frame was received (in a ``words``
message's ``words`` or ``pending``) before that frame. That is the promise of
docs/protocol.md, "When they come": a client interrupted at audio time ``t``
knows every word that started before ``t``.
"""

from __future__ import annotations

from typing import Any

from protocol.pcm import BYTES_PER_SAMPLE
from protocol.stream import Kind

# Word times are rounded to the microsecond on the wire (protocol/stream.py's slack).
SLACK_MS = 1e-3


def final_words(t: Any) -> list:
    """Every segment's committed words, in order: the times a client ends with."""
    return [w for message in t.words for w in message.words]


def check_words_precede_their_audio(t: Any, fmt: str = "pcm_s16le", rate: int = 24000) -> int:
    """Assert the promise above for transcript ``t``; return how many frames
    carried the start of a word that was known only through ``pending``."""
    words = final_words(t)
    assert words, "no words came"
    committed = known = 0
    audio_ms = 0.0
    through_pending = 0
    for kind, item in t.events:
        if kind is Kind.WORDS:
            committed += len(item.words)
            known = committed + len(item.pending)
        elif kind is Kind.AUDIO:
            audio_ms += len(item.payload) / BYTES_PER_SAMPLE[fmt] * 1000 / rate
            started = sum(1 for w in words if w.start_ms < audio_ms - SLACK_MS)
            assert known >= started, (
                f"a frame ending at {audio_ms:.3f} ms carries the start of word "
                f"{words[known].word!r} ({words[known].start_ms:.3f} ms), not yet received")
            through_pending += started > committed
    return through_pending
