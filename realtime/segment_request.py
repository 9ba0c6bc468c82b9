"""What the runtime is asked for each segment of a ``speak``.

``segment_request(speak)`` turns the wire's ``speak`` (voice, chunking,
``params``) into the runtime's ``SegmentRequest`` with the text left empty;
the utterance fills in each sentence. Fields the ``speak`` leaves out take
the server's defaults: upstream ChatTTS's sampling, speed level 5, and
``reference`` ``DEFAULT_REFERENCE``.

Thread: pure functions.
"""

from __future__ import annotations

from protocol import Speak
from realtime.runtime.api import SamplingParams, SegmentRequest
from realtime.samples import SampleVoices, resolve
from realtime.textfront.speed import DEFAULT_LEVEL

# params.reference when a speak leaves it out: each sentence on its own. "first"
# costs one DVAE encode per utterance, longer prompts, and sentence 2 no longer
# decoding beside sentence 1 (measured in docs/server.md, "One voice across sentences").
DEFAULT_REFERENCE = "none"


def segment_request(speak: Speak, samples: SampleVoices | None = None) -> SegmentRequest:
    """The runtime request of every segment of ``speak`` (text left empty);
    ``samples`` resolves named uploads and sample voices (``realtime.samples``)."""
    p = speak.params
    voice, sample = resolve(speak.voice, samples.named if samples is not None else {})
    return SegmentRequest(text="", voice=voice, sample=sample, params=_sampling(speak),
                          streaming=speak.chunking == "token",
                          speed=DEFAULT_LEVEL if p.speed is None else p.speed,
                          reference=p.reference or DEFAULT_REFERENCE)


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
