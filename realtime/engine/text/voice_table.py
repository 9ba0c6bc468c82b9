"""The named voices every server offers out of the box.

Each name is a fixed ChatTTS speaker: ``SeedVoice(N)`` samples the
checkpoint's speaker statistics with a generator seeded N
(``frontend.Speakers``), so a name means the same voice on every replica
running the same checkpoint.

OpenAI's thirteen voice names are here so that clients written for OpenAI's
speech API (the ``openai`` package defaults, Open WebUI, scripts) work
unchanged. They do not sound like OpenAI's voices: the seeds are fixed but
were not chosen by ear (the build machines have no trained checkpoint).
``ash`` and ``cedar`` keep the seeds they had before OpenAI's names came, and
``default``, ``birch`` and ``dune`` stay. A deployment's ``--voices-file``
(read by the server: ``realtime/server/voices/file.py``) adds names and remaps any
of these (``RuntimeOptions.voices``).
"""

from __future__ import annotations

from realtime.engine.api import SeedVoice

OPENAI_VOICE_NAMES: tuple[str, ...] = (
    "alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage",
    "shimmer", "verse", "marin", "cedar",
)

# Insertion order is the order of hello.voices and GET /v1/voices.
DEFAULT_VOICES: dict[str, SeedVoice] = {
    "default": SeedVoice(0),
    "alloy": SeedVoice(11),
    "ash": SeedVoice(2),
    "ballad": SeedVoice(13),
    "coral": SeedVoice(17),
    "echo": SeedVoice(19),
    "fable": SeedVoice(23),
    "onyx": SeedVoice(29),
    "nova": SeedVoice(31),
    "sage": SeedVoice(37),
    "shimmer": SeedVoice(41),
    "verse": SeedVoice(43),
    "marin": SeedVoice(47),
    "cedar": SeedVoice(5),
    "birch": SeedVoice(3),
    "dune": SeedVoice(7),
}
