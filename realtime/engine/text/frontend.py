"""The text front end: normalized text, a speaker, and the GPT prompt.

Text goes through ``TextNormalizer`` (realtime/engine/text/spoken.py: our
English and Chinese normalization, then upstream's ``Normalizer``) and is
wrapped as upstream wraps it: ``[Stts][spk_emb][speed_N]{text}[Ptts]`` (N the
request's speed level, upstream's default 5). The embedding at ``[spk_emb]``
is later replaced by the speaker vector.

A voice sample (``VoiceSample``: upstream's ``spk_smp``/``txt_smp``) goes
where ``Chat._infer_code`` puts it: the transcript right after the speaker
tag, ``[Stts][spk_emb]{txt_smp}[speed_5]{text}[Ptts]`` (``[empty_spk]``
without a speaker), and the sample's [T, num_vq] codes after ``[Ptts]``, as
the last T prompt positions, embedded as audio codes. The transcript is
normalized like the text (upstream inserts it as given; for a normalized
transcript, the only kind upstream's own reference makes, that is the same).

Speakers: voices come resolved (``api.Voice``; the server parses the wire's
syntax). A ``SeedVoice(N)`` samples from the checkpoint's speaker statistics
with a generator seeded N (what upstream's ``sample_random_speaker`` gives
after ``torch.manual_seed(N)``); an ``EmbeddingVoice`` is decoded as
upstream's encoded embedding; a ``NamedVoice`` is looked up in the voice
table (the names of ``voice_table.py``, then ``RuntimeOptions.voices``).

Thread: one caller at a time (the normalizer is not thread-safe):
``ModelRunner.prepare`` holds a lock around it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import torch

import realtime.engine.compat  # noqa: F401
from realtime.engine.api import (
    EmbeddingVoice,
    NamedVoice,
    RequestError,
    SamplingParams,
    SeedVoice,
    Voice,
    VoiceError,
    VoiceSample,
)
from realtime.engine.model.weights import decode_spk_stat
from realtime.engine.text.spoken import TextNormalizer
from realtime.engine.text.voice_table import DEFAULT_VOICES
from realtime.engine.vocoder.encoder import decode_codes

log = logging.getLogger(__name__)

SPEED_LEVELS = range(10)  # [speed_0]..[speed_9], the levels ChatTTS was trained with


@dataclass(frozen=True)
class Prompt:
    """A tokenized prompt: ``ids`` [L] text ids, ``speaker`` [hidden] fp16,
    ``codes`` [T, num_vq] int64 sample codes that follow the ids (or None)."""

    ids: torch.Tensor
    speaker: torch.Tensor
    text: str
    codes: torch.Tensor | None = None

    @property
    def text_length(self) -> int:
        return int(self.ids.shape[0])

    @property
    def length(self) -> int:
        return self.text_length + (0 if self.codes is None else int(self.codes.shape[0]))


def validate_params(p: SamplingParams) -> None:
    """Raise RequestError naming the first out-of-range sampling parameter."""
    checks = [
        (p.temperature > 0, "temperature must be > 0"),
        (0 < p.top_p <= 1, "top_p must be in (0, 1]"),
        (p.top_k >= 1, "top_k must be >= 1"),
        (p.repetition_penalty > 0, "repetition_penalty must be > 0"),
        (p.min_new_tokens >= 0, "min_new_tokens must be >= 0"),
        (p.max_new_tokens >= 1, "max_new_tokens must be >= 1"),
        (p.min_new_tokens <= p.max_new_tokens, "min_new_tokens must be <= max_new_tokens"),
    ]
    for ok, message in checks:
        if not ok:
            raise RequestError(message)


class Speakers:
    """Resolves voices to speaker vectors (fp16, like upstream's); ``voices``
    adds named voices to the table or replaces its entries."""

    def __init__(self, hidden: int, spk_stat: str,
                 voices: Iterable[tuple[str, SeedVoice | EmbeddingVoice]] = ()):
        self.hidden = hidden
        self.std, self.mean = decode_spk_stat(spk_stat)
        if self.std.shape[0] != hidden:
            raise ValueError(f"speaker statistics have {self.std.shape[0]} dims, model {hidden}")
        self.registry: dict[str, SeedVoice | EmbeddingVoice] = dict(DEFAULT_VOICES)
        self.registry.update(voices)
        self._cache: dict[Voice, torch.Tensor] = {}

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.registry)

    def from_seed(self, seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)
        return torch.randn(self.hidden, generator=gen, dtype=self.std.dtype).mul_(self.std).add_(self.mean)

    def resolve(self, voice: Voice) -> torch.Tensor:
        """Speaker vector [hidden] fp16; raises VoiceError."""
        if voice in self._cache:
            return self._cache[voice]
        match voice:
            case NamedVoice(name=name):
                spec = self.registry.get(name)
                if spec is None:
                    raise VoiceError(f"unknown voice {name[:40]!r}")
                vec = self.resolve(spec)
            case SeedVoice(seed=seed):
                vec = self.from_seed(seed)
            case EmbeddingVoice(encoded=encoded):
                vec = self._decode(encoded)
            case _:  # the server resolves wire strings before they get here
                raise TypeError(f"not a resolved voice: {voice!r:.60}")
        if len(self._cache) < 256:
            self._cache[voice] = vec
        return vec

    def _decode(self, encoded: str) -> torch.Tensor:
        from ChatTTS.model.speaker import Speaker
        try:
            arr = Speaker._decode(encoded)
        except Exception:  # noqa: BLE001 - lzma/base16384 raise several types on garbage
            raise VoiceError("voice is neither a known name, seed:N, nor a speaker embedding") from None
        if arr.shape[0] != self.hidden:
            raise VoiceError(f"speaker embedding has {arr.shape[0]} dims, the model {self.hidden}")
        return torch.from_numpy(arr.copy())


class TextFrontEnd:
    """Normalizer + tokenizer + speakers: text in, ``Prompt`` out."""

    def __init__(self, tokenizer, speakers: Speakers, num_vq: int = 4, num_audio_tokens: int = 626):
        self.tokenizer = tokenizer
        self.speakers = speakers
        self.normalizer = TextNormalizer()
        self.spk_emb_id = tokenizer.convert_tokens_to_ids("[spk_emb]")
        self.num_vq, self.num_audio_tokens = num_vq, num_audio_tokens
        self._samples: dict[VoiceSample, tuple[torch.Tensor, str]] = {}  # oldest first

    def warmup(self) -> None:
        """Compile the normalizer's numba kernels (seconds) before serving."""
        self.normalizer.warm_up()

    def normalize(self, text: str, lang: str | None = None) -> str:
        """The text the model reads ("" when nothing speakable is left)."""
        return self.normalizer.spoken(text, lang).text

    def build(self, text: str, voice: Voice | None, lang: str | None = None,
              speed: int = 5, sample: VoiceSample | None = None,
              normalized: bool = False) -> Prompt | None:
        """The prompt for ``text`` at speed level ``speed``; None when it
        normalizes to nothing. ``lang``: the language hint for text without
        letters of either script; ``normalized``: ``text`` is already what
        the model reads.

        Raises VoiceError for an unknown voice or an unusable sample,
        RequestError for text too long to normalize or a speed outside 0..9.
        """
        if type(speed) is not int or speed not in SPEED_LEVELS:
            raise RequestError(f"speed must be a level from 0 to 9, not {speed!r}")
        if voice is None and sample is None:
            raise VoiceError("a voice or a voice sample is needed")
        speaker = (self.speakers.resolve(voice) if voice is not None
                   else torch.zeros(self.speakers.hidden, dtype=self.speakers.std.dtype))
        codes, txt_smp = self.sample_codes(sample) if sample is not None else (None, "")
        normed = text if normalized else self.normalize(text, lang)
        if not normed:
            return None
        tag = "[spk_emb]" if voice is not None else "[empty_spk]"
        full = f"[Stts]{tag}{txt_smp}[speed_{speed}]{normed}[Ptts]"
        ids = self.tokenizer(full, add_special_tokens=False, return_tensors="pt")["input_ids"][0]
        return Prompt(ids=ids, speaker=speaker, text=normed, codes=codes)

    def sample_codes(self, sample: VoiceSample) -> tuple[torch.Tensor, str]:
        """A sample's codes [T, num_vq] and normalized transcript (cached per sample)."""
        cached = self._samples.get(sample)
        if cached is not None:
            return cached
        try:
            codes = decode_codes(sample.spk_smp)
        except ValueError as exc:
            raise VoiceError(f"voice sample: {exc}") from None
        if codes.shape[0] != self.num_vq or codes.shape[1] < 1:
            raise VoiceError(f"voice sample holds {tuple(codes.shape)} codes, the model "
                             f"reads [{self.num_vq}, T]")
        if int(codes.max()) >= self.num_audio_tokens:
            raise VoiceError("voice sample holds codes outside the model's audio ids")
        entry = (codes.T.contiguous(), self.normalize(sample.txt_smp))
        if len(self._samples) >= 64:
            self._samples.pop(next(iter(self._samples)))
        self._samples[sample] = entry
        return entry
