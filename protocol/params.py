"""``speak.params``: the per-utterance controls of ChatTTS, on the wire.

``Params`` holds the sampling overrides (``temperature``, ``top_p``,
``top_k``, ``repetition_penalty``, ``seed``) and ChatTTS's own controls:
``speed`` (the ``[speed_N]`` level of the prompt), ``refine`` (run the
refine-text pass first) and ``reference`` (condition sentences 2..n on
sentence 1's audio). ``protocol.params_reader.parse_params`` reads the
``params`` object of a ``speak``. Every field is optional; None (absent or
``null``) keeps the server's default.

``refine`` on the wire is ``false``, ``true``, an object of levels
(``RefineLevels``: ``oral`` 0-9, ``laugh`` 0-2, ``break`` 0-7, the ranges
ChatTTS's README gives for its ``[oral_N][laugh_N][break_N]`` prompt) or a
prompt string.

Thread: pure data and functions, safe from any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Ranges the protocol document states; the seed's ceiling is an unsigned
# 32-bit value, which every client language can hold.
SEED_MAX = 2**32 - 1
TEMPERATURE_MAX = 2.0  # > 0
TOP_P_MAX = 1.0  # > 0
TOP_K_MAX = 626  # the number of ids in one ChatTTS codebook
REPETITION_PENALTY_MIN = 1.0
REPETITION_PENALTY_MAX = 2.0

# ChatTTS's prompt levels: [speed_0]..[speed_9], 5 is upstream's default.
SPEED_MIN = 0
SPEED_MAX = 9
DEFAULT_SPEED = 5
# [oral_N][laugh_N][break_N]: the ranges of ChatTTS's README (0.2.5).
REFINE_LEVELS: dict[str, tuple[int, int]] = {"oral": (0, 9), "laugh": (0, 2), "break": (0, 7)}
REFINE_PROMPT_MAX_CHARS = 256
REFERENCES: tuple[str, ...] = ("first", "none")


def _without_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


@dataclass(frozen=True, slots=True)
class RefineLevels:
    """The refine prompt by levels; a level left None takes the server's
    default for it."""

    oral: int | None = None
    laugh: int | None = None
    break_: int | None = None

    def to_wire(self) -> dict[str, Any]:
        return _without_none({"oral": self.oral, "laugh": self.laugh, "break": self.break_})


Refine = bool | RefineLevels | str


@dataclass(frozen=True, slots=True)
class Params:
    """Per-utterance overrides; None keeps the server default. ``refine``
    False is an explicit "no refine pass"."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    repetition_penalty: float | None = None
    seed: int | None = None
    speed: int | None = None
    refine: Refine | None = None
    reference: str | None = None

    @property
    def wants_refine(self) -> bool:
        """True when the request asks for the refine pass in any form."""
        return self.refine is not None and self.refine is not False

    def to_wire(self) -> dict[str, Any]:
        refine = self.refine.to_wire() if isinstance(self.refine, RefineLevels) else self.refine
        return _without_none(
            {
                "temperature": self.temperature,
                "top_p": self.top_p,
                "top_k": self.top_k,
                "repetition_penalty": self.repetition_penalty,
                "seed": self.seed,
                "speed": self.speed,
                "refine": refine,
                "reference": self.reference,
            }
        )
