"""What the runtime is asked for each segment of a ``speak``.

``segment_request(speak)`` turns the wire's ``speak`` (voice, chunking,
``params``) into the runtime's ``SegmentRequest`` with the text left empty;
the utterance fills in each sentence. Fields the ``speak`` leaves out take
the server's defaults: upstream ChatTTS's sampling, speed level 5,
``reference`` ``DEFAULT_REFERENCE`` and no refine pass (``lane_params``
turns it on for the background lane under ``--refine-background``).
``frame_s`` is how long the audio frames the client gets are.
``params.refine`` becomes upstream's refine prompt: ``true`` the empty one
(upstream's ``RefineTextParams`` default: the model's own choice), levels
``[oral_N][laugh_N][break_N]`` in that order (a level left out is left out
of the prompt), a string as it is.

Thread: pure functions.
"""

from __future__ import annotations

from dataclasses import replace

from protocol import Params, RefineLevels, Speak
from protocol.params import Refine
from realtime.audio.formats import frame_seconds
from realtime.engine.api import RefineRequest, SamplingParams, SegmentRequest
from realtime.server.voices.samples import SampleVoices, resolve
from realtime.speech.speed import DEFAULT_LEVEL

# params.reference when a speak leaves it out: each sentence on its own. "first"
# costs one DVAE encode per utterance, longer prompts, and sentence 2 no longer
# decoding beside sentence 1 (measured in docs/server.md, "One voice across sentences").
DEFAULT_REFERENCE = "none"


def segment_request(speak: Speak, samples: SampleVoices | None = None) -> SegmentRequest:
    """The runtime request of every segment of ``speak`` (text left empty);
    ``samples`` resolves named uploads and sample voices (``realtime.server.voices.samples``)."""
    p = speak.params
    voice, sample = resolve(speak.voice, samples.named if samples is not None else {})
    return SegmentRequest(text="", voice=voice, sample=sample, params=_sampling(speak),
                          streaming=speak.chunking == "token",
                          speed=DEFAULT_LEVEL if p.speed is None else p.speed,
                          reference=p.reference or DEFAULT_REFERENCE,
                          refine=refine_request(p.refine),
                          frame_s=frame_seconds(speak.format, speak.frame_ms))


def refine_request(refine: Refine | None) -> RefineRequest | None:
    """The runtime's refine pass for ``params.refine`` (None: no pass)."""
    if refine is None or refine is False:
        return None
    if refine is True:
        return RefineRequest("")
    if isinstance(refine, RefineLevels):
        levels = (("oral", refine.oral), ("laugh", refine.laugh), ("break", refine.break_))
        return RefineRequest("".join(f"[{name}_{n}]" for name, n in levels if n is not None))
    return RefineRequest(refine)


def lane_params(lane: str, params: Params, refine_background: bool) -> Params:
    """``params`` with the lane's server defaults: the refine pass on the
    background lane when ``refine_background`` and ``params.refine`` is absent."""
    if refine_background and lane == "background" and params.refine is None:
        return replace(params, refine=True)
    return params


def _sampling(speak: Speak) -> SamplingParams:
    p = speak.params
    base = SamplingParams()
    return SamplingParams(
        temperature=base.temperature if p.temperature is None else p.temperature,
        top_p=base.top_p if p.top_p is None else p.top_p,
        top_k=base.top_k if p.top_k is None else p.top_k,
        repetition_penalty=(base.repetition_penalty if p.repetition_penalty is None
                            else p.repetition_penalty),
        seed=p.seed,
        # A segment the model runs always yields audio (EOS is masked at step 0),
        # so only segments whose text normalizes to nothing — known when they are
        # prepared — are silent, and the utterance's last frame can be flagged.
        min_new_tokens=1,
    )
