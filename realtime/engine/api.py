"""What the model runtime offers the worker: requests in, a step executor.

The worker (realtime/server/work/worker.py) owns one ``Runner`` on the model thread. The
contract has two calls:

- ``prepare(request) -> PreparedJob`` runs the text front end once per
  segment (normalization, speaker, prompt, sampling settings). The worker
  calls it on its preparation thread (``realtime/server/work/preparation.py``), one
  call at a time in submission order, while steps run: it must share no
  unguarded state with ``execute``. It keeps nothing: the ``PreparedJob``'s
  ``work`` travels with the scheduler's job and comes back to the runner in
  the ``StepPlan`` that prefills it. A segment refused or cancelled before
  it runs needs no clean-up.
- ``execute(plan) -> StepOutput`` runs one step exactly as planned: it drops
  the released jobs, prefills new jobs into the KV slots the plan names,
  decodes the running ones, and reports codes, ends and audio. The runner
  holds a job from its prefill until it reports it finished or failed, or a
  plan releases it; ``reset()`` drops every job at once (after the worker's
  loop failed).

Thread: ``prepare`` on the preparation thread (above); every other method
on the model thread only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from scheduler import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_KV_BUCKETS,
    DEFAULT_PROMPT_BUCKETS,
    StepOutput,
    StepPlan,
)

if TYPE_CHECKING:
    from realtime.engine.vocoder.encoder import SampleEncoder

SAMPLE_RATE = 24000
# One GPT step is 2 mel frames of hop 256 = 512 samples (21.33 ms).
SAMPLES_PER_STEP = 512


class WeightsKind(enum.StrEnum):
    """What the served weights are (``hello.model.weights``). Anything but
    ``CHECKPOINT`` makes noise, not speech, and clients must say so."""

    CHECKPOINT = "checkpoint"
    RANDOM = "random"  # full size, seeded
    TINY_RANDOM = "tiny-random"  # tiny sizes, seeded: tests and CI
    TONE = "tone"  # no model: a synthetic tone (load tests, benches)


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling, with upstream ChatTTS's defaults."""

    temperature: float = 0.3
    top_p: float = 0.7
    top_k: int = 20
    repetition_penalty: float = 1.05
    seed: int | None = None
    min_new_tokens: int = 0
    max_new_tokens: int = 2048


# Upstream's ``Chat.RefineTextParams`` sampling (ChatTTS 0.2.5): the refine
# pass draws text tokens hotter than audio codes and with no repetition penalty.
REFINE_SAMPLING = SamplingParams(temperature=0.7, top_p=0.7, top_k=20, repetition_penalty=1.0,
                                 min_new_tokens=0, max_new_tokens=384)


@dataclass(frozen=True)
class RefineRequest:
    """Run ChatTTS's refine-text pass before a segment's audio: the GPT's
    text head rewrites the normalized text under ``prompt`` (upstream's
    ``RefineTextParams.prompt``: ``""``, the model's own choice, or levels
    such as ``"[oral_2][laugh_0][break_6]"``), sampling with ``params``
    (upstream's defaults; ``seed`` None: derived from the segment's seed)."""

    prompt: str = ""
    params: SamplingParams = REFINE_SAMPLING


@dataclass(frozen=True, slots=True)
class SeedVoice:
    """A speaker drawn from the checkpoint's speaker statistics with a
    generator seeded ``seed`` (what upstream's ``sample_random_speaker``
    gives after ``torch.manual_seed(seed)``)."""

    seed: int


@dataclass(frozen=True, slots=True)
class EmbeddingVoice:
    """A speaker embedding in upstream's text encoding (``Speaker._encode``);
    the runtime refuses one that does not decode to the model's width."""

    encoded: str


@dataclass(frozen=True, slots=True)
class NamedVoice:
    """A name of the runtime's voice table (``Runner.voices``)."""

    name: str


# A voice as the runtime receives it: the server resolves the wire's syntax
# (``protocol.voices``) into one of these, so the runtime parses none.
Voice = SeedVoice | EmbeddingVoice | NamedVoice


@dataclass(frozen=True)
class VoiceSample:
    """A voice from a recording, as upstream's ``InferCodeParams`` carries it:
    ``spk_smp`` is upstream's encoded [num_vq, T] DVAE codes
    (``Speaker.encode_prompt``), ``txt_smp`` what the recording says."""

    spk_smp: str
    txt_smp: str


@dataclass(frozen=True)
class SegmentRequest:
    """One segment (a sentence or clause) of an utterance to synthesize.

    ``voice`` is a resolved ``Voice``: a name of the voice table, a seed, or
    an encoded ChatTTS speaker embedding; None (only with a ``sample``) speaks
    with no speaker embedding, as upstream does for ``spk_emb=None``.
    ``sample`` conditions the segment on a recording (``spk_smp``/``txt_smp``
    in upstream's prompt). ``streaming`` asks for audio while the segment is
    still decoding (``chunking: token``); otherwise the segment's audio comes
    in one piece when it finishes. ``lang`` ("en"/"zh") is the language for
    text without letters of either script (its neighbours'); text with
    letters decides for itself. ``speed`` is ChatTTS's prompt level
    ``[speed_N]`` (0-9, upstream's default 5). ``reference`` is the
    utterance's choice for sentences 2..n: ``"first"`` (conditioned on
    sentence 1's audio and text) or ``"none"``; the server acts on it.
    ``normalized``: ``text`` is already exactly what the model reads
    (``TextNormalizer.spoken``'s text, made by the server's text thread), so
    ``prepare`` does not normalize it again; raw text (the default) is
    normalized in ``prepare``. ``refine``: run the refine-text pass first
    (``RefineRequest``); its text is what the audio prompt reads.
    ``frame_s``: the listener gets the audio in frames of this many seconds
    (the segment's last may be shorter; 0: as it is made), which the
    vocoder's reckoning of what the listener holds counts.
    """

    text: str
    voice: Voice | None = SeedVoice(0)
    params: SamplingParams = SamplingParams()
    streaming: bool = False
    sample: VoiceSample | None = None
    lang: str | None = None
    speed: int = 5
    reference: str = "none"
    normalized: bool = False
    refine: RefineRequest | None = None
    frame_s: float = 0.0


@dataclass(frozen=True, slots=True)
class PreparedJob:
    """What ``prepare`` made of a segment: the prompt length in tokens, and
    ``work``, the runner's own description of the job (opaque to everyone
    else; the plan that prefills the job hands it back). ``empty`` segments
    normalized to nothing: they are done with no audio and never scheduled.
    ``refine_tokens``: the text tokens its refine pass is expected to draw
    (0: none); ``prompt_len`` is then the refine prompt's length."""

    prompt_len: int
    work: object = None
    empty: bool = False
    refine_tokens: int = 0


# The choices of RuntimeOptions' string fields, defined here once: the
# engine's modules check them, the server's config (no torch there) too.
PRECISIONS = ("auto", "fp32", "bf16", "fp16", "int8", "int4")
CPU_ENGINES = ("auto", "ort", "torch")
VOCODER_OVERLAPS = ("auto", "on", "off")
VOCODER_PRECISIONS = ("auto", "fp32", "tf32", "bf16", "int8")
EOS_READS = ("auto", "deferred", "blocking")


@dataclass(frozen=True)
class RuntimeOptions:
    """How to build the runtime; filled from the server's config.

    ``weights``: ``auto`` (a checkpoint from ``model_dir`` or the hub cache or a
    hub download; else full-size random weights with a loud warning, unless
    ``require_weights``), ``random`` (full size, seeded), ``tiny-random`` (same
    classes, tiny sizes, seeded, in memory in well under a second) or a path to
    a checkpoint directory. ``precision``: ``auto`` picks bf16/fp16 on CUDA and
    int8 on CPU (``cpu.engine.DEFAULT_PRECISION``). ``lookahead_steps`` is the
    streaming vocoder's right context.
    ``auto_shapes`` names the shape fields (``batch_sizes``, ``kv_buckets``,
    ``max_slots``) left to the hardware: on CUDA they come from the GPU's
    memory (``cuda_profile``); on the CPU the values here stand. ``voices``:
    named voices added to the voice table or replacing its entries (the
    server reads them from ``--voices-file``).
    ``vocoder_overlap``: ``auto`` (on CUDA only), ``on`` or ``off``: the
    vocoder on its own stream, its audio delivered one step later
    (``vocoder_overlap``). ``vocoder_precision``: the vocoder's linears in
    ``fp32``, ``tf32`` (CUDA only) or ``bf16``, the head and the ISTFT in
    fp32 always; ``auto``: tf32 on CUDA, fp32 on the CPU
    (``vocoder_precision``).
    ``eos_read``: ``auto`` (deferred on CUDA only), ``deferred`` or
    ``blocking``: a step's EOS flags read one step later, while the next
    step runs, or in the step (``eos_read``).
    ``cache_dir``: where start-up work measured or prepared once per machine
    is kept (``prepared_cache``); None keeps nothing.
    ``cpu_engine``: what runs the decoder on a CPU: ``ort`` (ONNX Runtime),
    ``torch`` (our decoder, fp32 only) or ``auto`` (measured: ``cpu.engine``);
    on a CPU ``precision`` ``auto`` is int8 or int4, both ONNX Runtime's only,
    and ``bf16`` is refused.
    """

    weights: str = "auto"
    model_dir: str | None = None
    require_weights: bool = False
    device: str = "auto"
    precision: str = "auto"
    batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES
    kv_buckets: tuple[int, ...] = DEFAULT_KV_BUCKETS
    prompt_buckets: tuple[int, ...] = DEFAULT_PROMPT_BUCKETS
    max_slots: int = 16
    cuda_graphs: bool = True
    lookahead_steps: int = 8
    voices: tuple[tuple[str, SeedVoice | EmbeddingVoice], ...] = ()
    seed: int = 0
    cpu_engine: str = "auto"
    cpu_threads: int = 0
    record_steps: str | None = None
    auto_shapes: tuple[str, ...] = ()
    vocoder_overlap: str = "auto"
    vocoder_precision: str = "auto"
    eos_read: str = "auto"
    cache_dir: str | None = None  # prepared_cache.PreparedCache's root; None: off


class RequestError(ValueError):
    """The request cannot be served as asked (the client sees ``unsupported``,
    with ``field`` when one field is to blame)."""

    field: str | None = None


class VoiceError(RequestError):
    """The request names a voice the runtime cannot resolve."""

    field = "voice"


class DeviceFailure(RuntimeError):
    """The device is unusable: a CUDA error other than out of memory (a
    device-side assert, an illegal address). The CUDA context is broken for
    the whole process, so every job is lost and the process must restart;
    ``Runner.execute`` raises it instead of failing single jobs."""


class Runner(Protocol):
    """The model runtime as the worker drives it (see the module docstring).
    The shapes it offers become the scheduler's configuration."""

    sample_rate: int
    max_slots: int  # KV slots: plans name slots 0 .. max_slots - 1
    batch_sizes: tuple[int, ...]
    kv_buckets: tuple[int, ...]
    prompt_buckets: tuple[int, ...]
    weights_kind: WeightsKind  # hello.model.weights
    device: str  # "cuda" | "cpu" (hello.model.device)
    voices: tuple[str, ...]  # named voices (hello.voices, /v1/voices)
    offers_refine: bool  # runs ``SegmentRequest.refine`` (else ignores it)
    # Decode steps from a job's first code to its first audio: a streaming
    # vocoder's first chunk plus its lookahead (1: every code sounds).
    first_audio_steps: int
    # The DVAE encoder (``encoder.SampleEncoder``: audio -> spk_smp), None when
    # the weights have none; it runs off the model thread.
    sample_encoder: SampleEncoder | None

    def warmup(self) -> dict[tuple[int, int], float]:
        """Run (and on CUDA capture) every configured (batch size, bucket)
        once; return measured seconds per step for the cost model."""

    def warmup_first(self) -> dict[tuple[int, int], float]:
        """The warm-up a server needs before it is ready: ``warmup`` whole,
        or (a CPU runner) only what the first requests need, the rest left
        for idle time (``warmup_left`` pieces, one per ``warm_idle``)."""

    @property
    def warmup_left(self) -> int:
        """Warm-up pieces left for idle time (``/readyz``'s ``warming``)."""

    def warm_idle(self, cost: object = None) -> dict[tuple[int, int], float]:
        """Run one piece left for idle time (none: nothing); the step timings
        it measured, for the cost model (``cost``: the scheduler's, to judge by)."""

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        """Tokenize and build the prompt. Raises ``RequestError`` (a
        ``VoiceError`` for the voice) when the request cannot be served."""

    def execute(self, plan: StepPlan) -> StepOutput:
        """Run one step as planned. Never raises for a model failure of some
        jobs: those come back in ``failed``; out of memory comes back as
        ``oom=True`` with nothing advanced. Raises ``DeviceFailure`` (and
        nothing else) when the device itself is lost."""

    def reset(self) -> None:
        """Drop every job the runner holds (the worker's loop failed and
        starts over with a fresh scheduler)."""
