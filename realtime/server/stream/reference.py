"""One voice across sentences: ``params.reference: "first"``.

Upstream ChatTTS 0.2.5 (``Chat._infer``, with ``split_text`` and more than one
sentence and no ``spk_smp`` of the caller's): it synthesizes sentence 1 alone,
decodes it to a waveform (Decoder + Vocos, 24 kHz), encodes that waveform
with the DVAE (``sample_audio_speaker``) into ``spk_smp``, sets ``txt_smp``
to sentence 1's normalized text, and then synthesizes every sentence, the
first again included, with both in the prompt (the speaker embedding kept).

We do the same for sentences 2..n, without running sentence 1 twice: its
audio is what the client already got. ``FirstReference`` lets sentence 1 go
and holds the later sentences until sentence 1's audio is complete and
encoded (on the encoder's thread, ``realtime.server.voices.samples``), then releases them
with ``VoiceSample(spk_smp, sentence 1's text)``; the runtime normalizes that
text as it normalized sentence 1. Sentence 2 therefore waits for sentence 1's
own audio and one encode, and for nothing else (not its playback). A
sentence 1 that says nothing passes the role to the next one; when the
encode fails the later sentences go unconditioned (logged), as with "none".

Thread: event loop only.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from realtime.engine.api import SegmentRequest, VoiceSample
from realtime.server.voices.samples import SampleVoices
from realtime.server.work.handoff import SegmentWork

log = logging.getLogger(__name__)


class NoReference:
    """Every sentence on its own (``"none"``): everything goes at once."""

    def admit(self, works: tuple[SegmentWork, ...]) -> tuple[SegmentWork, ...]:
        return works

    def on_audio(self, job_id: int | None, samples: np.ndarray) -> None: ...
    def on_resolved(self, job_id: int | None, spoke: bool) -> None: ...
    def close(self) -> None: ...


def first_reference(request: SegmentRequest, samples: SampleVoices | None,
                    release: Callable[[list[SegmentWork]], None]) -> FirstReference | NoReference:
    """The gate for an utterance whose segments are ``request`` but for their
    text: ``NoReference`` when it asks for none, already speaks from a sample
    (upstream too skips its reference then), or the weights cannot encode."""
    if request.reference != "first" or request.sample is not None:
        return NoReference()
    if samples is None or samples.encoder is None:
        return NoReference()  # documented: "first" acts as "none" on weights without a DVAE
    return FirstReference(samples, release)


class FirstReference:
    """See the module docstring. ``release(works)`` is called (on the loop)
    with the held sentences once they may go; the utterance submits them."""

    def __init__(self, samples: SampleVoices, release: Callable[[list[SegmentWork]], None]) -> None:
        self.samples = samples
        self.release = release
        self.job: SegmentWork | None = None  # the reference sentence, once submitted
        self.audio: list[np.ndarray] = []
        self.held: list[SegmentWork] = []
        self.sample: VoiceSample | None = None
        self.open = False  # later sentences go at once (with ``sample``, or without on failure)
        self._task: asyncio.Task[None] | None = None

    def admit(self, works: tuple[SegmentWork, ...]) -> tuple[SegmentWork, ...]:
        """The part of ``works`` that may be submitted now; the rest is held."""
        if self.open:
            return tuple(self._conditioned(w) for w in works)
        out: tuple[SegmentWork, ...] = ()
        if self.job is None and works:
            self.job, out, works = works[0], works[:1], works[1:]
        self.held.extend(works)
        return out

    def on_audio(self, job_id: int | None, samples: np.ndarray) -> None:
        if self.job is not None and job_id == self.job.job_id and not self.open:
            self.audio.append(samples)

    def on_resolved(self, job_id: int | None, spoke: bool) -> None:
        """The job ended: ``spoke`` when it finished with audio."""
        if self.job is None or job_id != self.job.job_id or self.open:
            return
        if not spoke or not self.audio:  # it said nothing: the next sentence is the reference
            self.job, self.audio = None, []
            held, self.held = self.held, []
            self.release(held)
            return
        wav = np.concatenate(self.audio)
        self.audio = []
        self._task = asyncio.get_running_loop().create_task(self._encode(wav, self.job.request.text))

    def close(self) -> None:
        """The utterance ended: no release after this."""
        self.open, self.held = True, []
        if self._task is not None:
            self._task.cancel()

    async def _encode(self, wav: np.ndarray, text: str) -> None:
        try:
            self.sample = VoiceSample(await self.samples.encode(wav), text)
        except Exception as exc:  # noqa: BLE001 - the utterance goes on unconditioned, never fails
            log.warning("reference encode failed (%s: %s); later sentences go unconditioned",
                        type(exc).__name__, exc)
        if self.open:
            return  # closed meanwhile
        self.open = True
        held, self.held = self.held, []
        self.release([self._conditioned(w) for w in held])

    def _conditioned(self, work: SegmentWork) -> SegmentWork:
        if self.sample is None:
            return work
        return replace(work, request=replace(work.request, sample=self.sample))
