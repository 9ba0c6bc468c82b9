"""What the model runtime offers the worker: requests in, a step executor.

The worker (realtime/worker.py) owns one ``Runner`` on the model thread. For
each segment job it calls ``prepare`` once (text front end, speaker, prompt),
then hands the scheduler's ``StepPlan`` to ``execute`` every step and routes
the ``StepOutput`` back: token counts to the scheduler, audio to sessions.

Thread: every method runs on the model thread only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from scheduler.plan import JobId, StepOutput, StepPlan

SAMPLE_RATE = 24000
# One GPT step is 2 mel frames of hop 256 = 512 samples (21.33 ms).
SAMPLES_PER_STEP = 512


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


@dataclass(frozen=True)
class SegmentRequest:
    """One segment (a sentence or clause) of an utterance to synthesize.

    ``voice`` is a voice name from the registry, ``"seed:<int>"``, or an
    encoded ChatTTS speaker embedding. ``streaming`` asks for audio while the
    segment is still decoding (``chunking: token``); otherwise the segment's
    audio comes in one piece when it finishes.
    """

    text: str
    voice: str = "seed:0"
    params: SamplingParams = SamplingParams()
    streaming: bool = False


@dataclass(frozen=True)
class PreparedJob:
    """What ``prepare`` learned: the prompt length in tokens, and whether the
    text normalized to nothing (then the job is done with zero audio and never
    scheduled)."""

    prompt_len: int
    empty: bool = False


@dataclass(frozen=True)
class RuntimeOptions:
    """How to build the runtime; filled from the server's config.

    ``weights``: ``auto`` (a checkpoint from ``model_dir`` or the hub cache or a
    hub download; else full-size random weights with a loud warning, unless
    ``require_weights``), ``random`` (full size, seeded), ``tiny-random`` (same
    classes, tiny sizes, seeded, in memory in well under a second) or a path to
    a checkpoint directory. ``precision``: ``auto`` picks bf16/fp16 on CUDA and
    fp32 on CPU. ``lookahead_steps`` is the streaming vocoder's right context.
    """

    weights: str = "auto"
    model_dir: str | None = None
    require_weights: bool = False
    device: str = "auto"
    precision: str = "auto"
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8)
    kv_buckets: tuple[int, ...] = (256, 512, 1024, 2048)
    max_slots: int = 16
    cuda_graphs: bool = True
    lookahead_steps: int = 8
    voices_file: str | None = None
    seed: int = 0
    cpu_gemm: str = "auto"
    cpu_threads: int = 0
    record_steps: str | None = None


class VoiceError(ValueError):
    """The request names a voice the runtime cannot resolve (-> ``unsupported``)."""


class Runner(Protocol):
    sample_rate: int
    max_slots: int
    batch_sizes: tuple[int, ...]
    kv_buckets: tuple[int, ...]
    weights_kind: str  # "checkpoint" | "random" | "tiny-random" (hello.model.weights)
    device: str  # "cuda" | "cpu" (hello.model.device)
    voices: tuple[str, ...]  # named voices (hello.voices, /v1/voices)

    def warmup(self) -> dict[tuple[int, int], float]:
        """Run (and on CUDA capture) every configured (batch size, bucket)
        once; return measured seconds per step for the cost model."""

    def prepare(self, job_id: JobId, request: SegmentRequest) -> PreparedJob:
        """Tokenize and build the prompt; raises VoiceError or ValueError."""

    def execute(self, plan: StepPlan) -> StepOutput:
        """Run one step. Never raises for a model failure of some jobs: those
        come back in ``failed``; out of memory comes back as ``oom=True``."""

    def forget(self, job_id: JobId) -> None:
        """Drop a prepared job that will never run (refused or cancelled
        before it got a slot)."""
