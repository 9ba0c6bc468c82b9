"""The named voices every server offers out of the box.

Each name is a fixed ChatTTS speaker: ``seed:N`` samples the checkpoint's
speaker statistics with a generator seeded N (``frontend.Speakers``), so a
name means the same voice on every replica running the same checkpoint.

OpenAI's thirteen voice names are here so that clients written for OpenAI's
speech API (the ``openai`` package defaults, Open WebUI, scripts) work
unchanged. They do not sound like OpenAI's voices: the seeds are fixed but
were not chosen by ear (the build machines have no trained checkpoint).
``ash`` and ``cedar`` keep the seeds they had before OpenAI's names came, and
``default``, ``birch`` and ``dune`` stay. A deployment's ``--voices-file``
(a JSON object of name -> ``"seed:N"``, ``{"seed": N}`` or an encoded
embedding) adds names and remaps any of these.
"""

from __future__ import annotations

OPENAI_VOICE_NAMES: tuple[str, ...] = (
    "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage",
    "shimmer", "verse", "marin", "cedar",
)

# Insertion order is the order of hello.voices and GET /v1/voices.
DEFAULT_VOICES: dict[str, str] = {
    "default": "seed:0",
    "alloy": "seed:11",
    "ash": "seed:2",
    "ballad": "seed:13",
    "coral": "seed:17",
    "echo": "seed:19",
    "fable": "seed:23",
    "onyx": "seed:29",
    "nova": "seed:31",
    "sage": "seed:37",
    "shimmer": "seed:41",
    "verse": "seed:43",
    "marin": "seed:47",
    "cedar": "seed:5",
    "birch": "seed:3",
    "dune": "seed:7",
}
