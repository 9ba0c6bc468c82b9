"""ToneRunner: a Runner with no model, for protocol-level tests and server benches.

It honours the ``realtime.engine.api.Runner`` contract exactly like the torch
runtime does — slots, prefill/decode/release, ``StepOutput`` with token counts,
finished jobs and 24 kHz float32 audio — but its "codes" are a counter and its
audio a deterministic sine tone (512 samples per code, the real step size).
How long a segment lasts follows its text length, so tests control audio length
with text. Failures are injected by markers in the text:

- ``fail_marker`` (default ``"FAIL"``): the job comes back in ``failed`` at its
  first step (the client sees ``internal``);
- ``oom_marker`` (``"OOM"``): any step whose plan holds such a job together with
  another job reports ``oom=True`` (nothing advances), so the scheduler must
  split the batch; alone it runs normally;
- ``crash_marker`` (``"CRASH"``): ``execute`` raises, breaking the contract on
  purpose, to exercise the worker's loop recovery;
- ``device_marker`` (``"CUDAERROR"``): ``execute`` raises ``DeviceFailure``, as
  the torch runtime does when a CUDA error breaks the device.

Thread: like every Runner, used only on the model thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from realtime.engine.api import (
    SAMPLE_RATE,
    SAMPLES_PER_STEP,
    DeviceFailure,
    EmbeddingVoice,
    NamedVoice,
    PreparedJob,
    SegmentRequest,
    Voice,
    VoiceError,
    WeightsKind,
)
from realtime.speech.script import has_words

if TYPE_CHECKING:
    from realtime.engine.vocoder.encoder import SampleEncoder
from scheduler import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_KV_BUCKETS,
    DEFAULT_PROMPT_BUCKETS,
    JobId,
    StepOutput,
    StepPlan,
)

_TABLE_CODES = 470  # ~10 s of tone per frequency, repeated beyond


@dataclass(frozen=True, slots=True)
class ToneSpec:
    """A prepared segment (``PreparedJob.work``)."""

    target: int  # codes this segment will produce
    streaming: bool
    frequency: float
    fail: bool
    oom: bool
    crash: bool
    device_lost: bool = False


@dataclass(slots=True)
class _ToneJob:
    """A job the runner holds, from its prefill to its end."""

    spec: ToneSpec
    slot: int
    tokens: int = 0


class ToneRunner:
    """A deterministic stand-in for the model runner.

    ``codes_per_char`` sets segment length from text length (at least
    ``min_codes``, at most ``max_codes``); ``step_seconds`` is slept per step
    (and per batch of prepared jobs by ``prepare_seconds``) to imitate model time.
    A step reports the wall-clock time it took, and the worker the loop's whole
    turn, as a real runner's do; with ``nominal_cost`` it reports
    ``step_seconds`` itself (``StepOutput.nominal``): the cost model, and with
    it the capacity and the retry hints, then stay those of a model of that
    step time, however loaded the machine running the tests is.
    """

    sample_rate = SAMPLE_RATE
    weights_kind = WeightsKind.TONE
    device = "cpu"
    offers_refine = False  # a tone has no text to refine
    first_audio_steps = 1  # every code sounds at once

    def __init__(
        self,
        *,
        step_seconds: float = 0.0,
        codes_per_char: float = 1.0,
        min_codes: int = 4,
        max_codes: int = 2048,
        max_slots: int = 16,
        batch_sizes: tuple[int, ...] = DEFAULT_BATCH_SIZES,
        kv_buckets: tuple[int, ...] = DEFAULT_KV_BUCKETS,
        voices: tuple[str, ...] = ("default", "alice", "bob"),
        amplitude: float = 0.3,
        fail_marker: str = "FAIL",
        oom_marker: str = "OOM",
        crash_marker: str = "CRASH",
        device_marker: str = "CUDAERROR",
        prepare_seconds: float = 0.0,
        codes_per_step: int = 1,
        nominal_cost: bool = False,
    ) -> None:
        self.step_seconds = step_seconds
        self.nominal_cost = nominal_cost
        self.codes_per_char = codes_per_char
        self.min_codes = min_codes
        self.max_codes = max_codes
        self.max_slots = max_slots
        self.batch_sizes = tuple(batch_sizes)
        self.kv_buckets = tuple(kv_buckets)
        self.voices = tuple(voices)
        self.sample_encoder: SampleEncoder | None = None  # no model: no voices from a sample
        self.amplitude = amplitude
        self.fail_marker = fail_marker
        self.oom_marker = oom_marker
        self.crash_marker = crash_marker
        self.device_marker = device_marker
        self.prepare_seconds = prepare_seconds
        # > 1 only for benches of the server itself: the real model makes one
        # code per step, which makes step bookkeeping dominate a no-model run.
        self.codes_per_step = max(1, codes_per_step)
        self.prompt_buckets = DEFAULT_PROMPT_BUCKETS
        self._prepared_count = 0
        self._slots: dict[JobId, _ToneJob] = {}
        self._tables: dict[float, np.ndarray] = {}
        self.steps = 0  # executed plans, for tests
        self.max_batch_seen = 0

    # -- Runner protocol ---------------------------------------------------------

    def warmup(self) -> dict[tuple[int, int], float]:
        seconds = max(self.step_seconds, 1e-4)
        return {(b, k): seconds for b in self.batch_sizes for k in self.kv_buckets}

    def warmup_first(self) -> dict[tuple[int, int], float]:
        return self.warmup()  # nothing to leave for later

    warmup_left = 0

    def warm_idle(self, cost: object = None) -> dict[tuple[int, int], float]:
        return {}

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        self._check_voice(request.voice)
        if self.prepare_seconds:
            time.sleep(self.prepare_seconds)
        text = request.text
        if not has_words(text):
            return PreparedJob(prompt_len=0, empty=True)
        target = int(round(len(text) * self.codes_per_char))
        target = max(self.min_codes, min(target, self.max_codes, request.params.max_new_tokens))
        self._prepared_count += 1
        spec = ToneSpec(
            target=target,
            streaming=request.streaming,
            frequency=220.0 + 20.0 * (self._prepared_count % 12),
            fail=bool(self.fail_marker) and self.fail_marker in text,
            oom=bool(self.oom_marker) and self.oom_marker in text,
            crash=bool(self.crash_marker) and self.crash_marker in text,
            device_lost=bool(self.device_marker) and self.device_marker in text,
        )
        return PreparedJob(prompt_len=8 + len(text), work=spec)

    def reset(self) -> None:
        self._slots.clear()

    def execute(self, plan: StepPlan) -> StepOutput:
        start = time.perf_counter()
        self.steps += 1
        for job_id in plan.release:
            self._slots.pop(job_id, None)
        jobs = plan.jobs
        self.max_batch_seen = max(self.max_batch_seen, len(jobs))
        specs = [self._slots[j].spec if j in self._slots else None for j in plan.decode]
        specs += [w for w in plan.work if isinstance(w, ToneSpec)]
        if any(s.crash for s in specs if s is not None):
            for j in jobs:
                self._slots.pop(j, None)
            raise RuntimeError("synthetic crash requested by the text")
        if any(s.device_lost for s in specs if s is not None):
            raise DeviceFailure("synthetic device failure requested by the text")
        if len(jobs) > 1 and any(s.oom for s in specs if s is not None):
            return StepOutput(oom=True, seconds=time.perf_counter() - start)
        if self.step_seconds:
            time.sleep(self.step_seconds)
        out = StepOutput()
        self._take_prefills(plan, out)
        finished: list[JobId] = []
        for job_id, slot in zip(jobs, plan.slots):
            job = self._slots.get(job_id)
            if job is None or job.slot != slot:
                out.failed.setdefault(job_id, f"no job of this id in slot {slot}")
                self._slots.pop(job_id, None)
                continue
            spec = job.spec
            if spec.fail:
                out.failed[job_id] = "synthetic failure requested by the text"
                del self._slots[job_id]
                continue
            before = job.tokens
            job.tokens = min(job.tokens + self.codes_per_step, spec.target)
            out.tokens[job_id] = job.tokens
            done = job.tokens >= spec.target
            if spec.streaming:
                out.audio[job_id] = self._tone(spec, before, job.tokens)
            elif done:
                out.audio[job_id] = self._tone(spec, 0, job.tokens)
            if done:
                finished.append(job_id)
                del self._slots[job_id]
        out.finished = tuple(finished)
        return self._timed(out, start)

    def _timed(self, out: StepOutput, start: float) -> StepOutput:
        """``out`` with the step's time: measured from ``start``, or nominal."""
        if self.nominal_cost:
            out.seconds, out.nominal = self.step_seconds, True
        else:
            out.seconds = time.perf_counter() - start
        return out

    def _take_prefills(self, plan: StepPlan, out: StepOutput) -> None:
        """Hold each prefill job in its slot, as the plan's contract says."""
        taken = {job.slot for job in self._slots.values()}
        for job_id, slot, spec in zip(plan.prefill, plan.prefill_slots, plan.work):
            if (job_id in self._slots or slot in taken or not 0 <= slot < self.max_slots
                    or not isinstance(spec, ToneSpec)):
                out.failed[job_id] = f"prefill into slot {slot} breaks the runner's contract"
                continue
            taken.add(slot)
            self._slots[job_id] = _ToneJob(spec, slot)

    # -- helpers -------------------------------------------------------------------

    @property
    def slots_in_use(self) -> int:
        return len(self._slots)

    def _check_voice(self, voice: Voice | None) -> None:
        match voice:
            case NamedVoice(name=name) if name not in self.voices:
                raise VoiceError(f"voice {name[:40]!r} is not a named voice or seed:<int>")
            case EmbeddingVoice(encoded=encoded):
                raise VoiceError(f"voice {encoded[:40]!r} is not a named voice or seed:<int>")

    def _tone(self, spec: ToneSpec, first_code: int, end_code: int) -> np.ndarray:
        # A cached table keeps the runner's own cost far below the server's,
        # which is what the server bench measures.
        table = self._tables.get(spec.frequency)
        if table is None:
            n = np.arange(_TABLE_CODES * SAMPLES_PER_STEP)
            table = (self.amplitude * np.sin(2 * np.pi * spec.frequency * n / SAMPLE_RATE)
                     ).astype(np.float32)
            self._tables[spec.frequency] = table
        if end_code <= _TABLE_CODES:
            # A read-only view, not a copy: a stand-in for the model should cost
            # next to nothing, and consumers never write into the audio they get.
            view = table[first_code * SAMPLES_PER_STEP:end_code * SAMPLES_PER_STEP]
            view.flags.writeable = False
            return view
        idx = np.arange(first_code * SAMPLES_PER_STEP, end_code * SAMPLES_PER_STEP) % table.size
        return table[idx]
