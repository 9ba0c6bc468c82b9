"""A deployment's named voices (``--voices-file``), read by the server.

The file is a JSON object of name -> voice: ``"seed:N"``, ``{"seed": N}``
or an encoded speaker embedding (the wire's syntax, ``protocol.voices``).
The server resolves each into the runtime's typed voice
(``RuntimeOptions.voices``), so the runtime parses no voice syntax. Errors
are ``ValueError`` with one line naming the file, meant for a start-up
error.

Thread: any (pure, but for reading the file).
"""

from __future__ import annotations

import json

from protocol.voices import is_embedding, seed_of
from realtime.engine.api import EmbeddingVoice, SeedVoice


def read_voices_file(path: str) -> tuple[tuple[str, SeedVoice | EmbeddingVoice], ...]:
    """The file's (name, voice) pairs, in its order."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as exc:
        raise ValueError(f"voices file {path} unreadable: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"voices file {path} must hold a JSON object of name -> voice")
    out: list[tuple[str, SeedVoice | EmbeddingVoice]] = []
    for name, spec in raw.items():
        if isinstance(spec, dict) and isinstance(spec.get("seed"), int):
            spec = f"seed:{spec['seed']}"
        if not isinstance(spec, str):
            raise ValueError(f"voices file {path}: voice {name!r} is not a string or {{seed}}")
        out.append((str(name), _voice(path, str(name), spec)))
    return tuple(out)


def _voice(path: str, name: str, spec: str) -> SeedVoice | EmbeddingVoice:
    seed = seed_of(spec)
    if seed is not None:
        return SeedVoice(seed)
    if is_embedding(spec):
        return EmbeddingVoice(spec)
    raise ValueError(f"voices file {path}: voice {name!r} is neither seed:N nor a speaker embedding")
