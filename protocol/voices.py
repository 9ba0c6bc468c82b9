"""What a ``voice`` string may be, judged by its syntax alone.

A speak's ``voice`` is one of four kinds:
- a name the server offers (listed in ``hello.voices``);
- ``"seed:<n>"``: a speaker drawn at random with seed ``n``, where ``n`` is a
  decimal integer 0..4294967295 written without sign or leading zeros;
- an encoded ChatTTS speaker embedding: the string ChatTTS itself produces
  (``Chat.sample_random_speaker()``), i.e. base16384 text: 16 to 4096
  characters from U+4E00..U+8DFF, optionally ended by one length marker from
  U+3D01..U+3D06. Whether it decodes to a usable embedding is decided by the
  runtime, which fails that utterance when it does not;
- a voice from a sample (what ``POST /v1/voices`` answers):
  ``"sample:<spk_smp>:<txt_smp>"``, where ``spk_smp`` is ChatTTS's own
  encoding of the recording's DVAE codes (``Chat.sample_audio_speaker()``:
  base16384 text as above, 16 to 8192 characters) and ``txt_smp`` its
  transcript (1 to 1000 characters, no control characters). Self-contained:
  any server with the same checkpoint speaks it.
Anything else is ``unsupported``. Names are tried first, so a server may offer
a name that would otherwise look like a seed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from enum import StrEnum

from protocol.params import SEED_MAX

SEED_PREFIX = "seed:"
_SEED_RE = re.compile(r"seed:(0|[1-9][0-9]{0,9})")

EMBEDDING_MIN_CHARS = 16
EMBEDDING_MAX_CHARS = 4096
EMBEDDING_PATTERN = f"[\u4e00-\u8dff]{{{EMBEDDING_MIN_CHARS},{EMBEDDING_MAX_CHARS}}}[\u3d01-\u3d06]?"
_EMBEDDING_RE = re.compile(EMBEDDING_PATTERN)

SAMPLE_PREFIX = "sample:"
SAMPLE_MAX_CHARS = 8192
TRANSCRIPT_MAX_CHARS = 1000
# Escapes written for the regex engine (Python's and ECMA's), not the string.
SAMPLE_PATTERN = (f"sample:([\u4e00-\u8dff]{{{EMBEDDING_MIN_CHARS},{SAMPLE_MAX_CHARS}}}"
                  f"[\u3d01-\u3d06]?):([^\u0000-\u001f\u007f]{{1,{TRANSCRIPT_MAX_CHARS}}})")
_SAMPLE_RE = re.compile(SAMPLE_PATTERN)


class VoiceKind(StrEnum):
    NAME = "name"
    SEED = "seed"
    EMBEDDING = "embedding"
    SAMPLE = "sample"


def seed_of(voice: str) -> int | None:
    """The seed of a ``"seed:<n>"`` voice, or None when ``voice`` is not one."""
    match = _SEED_RE.fullmatch(voice)
    if match is None:
        return None
    seed = int(match.group(1))
    return seed if seed <= SEED_MAX else None


def is_embedding(voice: str) -> bool:
    """True when ``voice`` has the syntax of an encoded speaker embedding."""
    return _EMBEDDING_RE.fullmatch(voice) is not None


def sample_of(voice: str) -> tuple[str, str] | None:
    """(spk_smp, txt_smp) of a sample voice, or None when ``voice`` is not one."""
    match = _SAMPLE_RE.fullmatch(voice)
    return None if match is None else (match.group(1), match.group(2))


def sample_voice(spk_smp: str, txt_smp: str) -> str:
    """The voice string for a sample (ValueError when the parts do not fit the syntax)."""
    voice = f"{SAMPLE_PREFIX}{spk_smp}:{txt_smp}"
    if _SAMPLE_RE.fullmatch(voice) is None:
        raise ValueError("the sample or its transcript does not fit a sample voice")
    return voice


def voice_kind(voice: str, names: Collection[str] | None) -> VoiceKind | None:
    """The kind of ``voice``, or None when it is none of the four.

    ``names`` are the offered voice names; None accepts any string that is
    neither a seed nor an embedding as a name (for decoding without an offer).
    """
    if names is not None and voice in names:
        return VoiceKind.NAME
    if seed_of(voice) is not None:
        return VoiceKind.SEED
    if is_embedding(voice):
        return VoiceKind.EMBEDDING
    if voice.startswith(SAMPLE_PREFIX):
        return VoiceKind.SAMPLE if sample_of(voice) is not None else None
    if names is None:
        return VoiceKind.NAME
    return None


__all__ = [
    "EMBEDDING_MAX_CHARS", "EMBEDDING_MIN_CHARS", "EMBEDDING_PATTERN", "SAMPLE_MAX_CHARS",
    "SAMPLE_PATTERN", "SAMPLE_PREFIX", "SEED_PREFIX", "TRANSCRIPT_MAX_CHARS", "VoiceKind",
    "is_embedding", "sample_of", "sample_voice", "seed_of", "voice_kind",
]
