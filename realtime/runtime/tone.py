"""ToneRunner: a Runner with no model, for protocol-level tests and server benches.

It honours the ``realtime.runtime.api.Runner`` contract exactly like the torch
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
  purpose, to exercise the worker's loop recovery.

Thread: like every Runner, used only on the model thread.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import numpy as np

from realtime.runtime.api import (
    SAMPLE_RATE,
    SAMPLES_PER_STEP,
    PreparedJob,
    SegmentRequest,
    VoiceError,
)
from scheduler.plan import JobId, StepOutput, StepPlan

_WORD = re.compile(r"\w", re.UNICODE)
_SEED_VOICE = re.compile(r"^seed:-?\d+$")
_TABLE_CODES = 470  # ~10 s of tone per frequency, repeated beyond


@dataclass
class _ToneJob:
    target: int  # codes this segment will produce
    streaming: bool
    frequency: float
    fail: bool
    oom: bool
    crash: bool
    tokens: int = 0


class ToneRunner:
    """A deterministic stand-in for the model runner.

    ``codes_per_char`` sets segment length from text length (at least
    ``min_codes``, at most ``max_codes``); ``step_seconds`` is slept per step
    (and per batch of prepared jobs by ``prepare_seconds``) to imitate model time.
    """

    sample_rate = SAMPLE_RATE
    weights_kind = "tone"
    device = "cpu"

    def __init__(
        self,
        *,
        step_seconds: float = 0.0,
        codes_per_char: float = 1.0,
        min_codes: int = 4,
        max_codes: int = 2048,
        max_slots: int = 16,
        batch_sizes: tuple[int, ...] = (1, 2, 4, 8),
        kv_buckets: tuple[int, ...] = (256, 512, 1024, 2048),
        voices: tuple[str, ...] = ("default", "alice", "bob"),
        amplitude: float = 0.3,
        fail_marker: str = "FAIL",
        oom_marker: str = "OOM",
        crash_marker: str = "CRASH",
        prepare_seconds: float = 0.0,
        codes_per_step: int = 1,
    ) -> None:
        self.step_seconds = step_seconds
        self.codes_per_char = codes_per_char
        self.min_codes = min_codes
        self.max_codes = max_codes
        self.max_slots = max_slots
        self.batch_sizes = tuple(batch_sizes)
        self.kv_buckets = tuple(kv_buckets)
        self.voices = tuple(voices)
        self.amplitude = amplitude
        self.fail_marker = fail_marker
        self.oom_marker = oom_marker
        self.crash_marker = crash_marker
        self.prepare_seconds = prepare_seconds
        # > 1 only for benches of the server itself: the real model makes one
        # code per step, which makes step bookkeeping dominate a no-model run.
        self.codes_per_step = max(1, codes_per_step)
        self._prepared: dict[JobId, _ToneJob] = {}
        self._slots: dict[JobId, _ToneJob] = {}
        self._tables: dict[float, np.ndarray] = {}
        self.steps = 0  # executed plans, for tests
        self.max_batch_seen = 0

    # -- Runner protocol ---------------------------------------------------------

    def warmup(self) -> dict[tuple[int, int], float]:
        seconds = max(self.step_seconds, 1e-4)
        return {(b, k): seconds for b in self.batch_sizes for k in self.kv_buckets}

    def prepare(self, job_id: JobId, request: SegmentRequest) -> PreparedJob:
        self._check_voice(request.voice)
        if self.prepare_seconds:
            time.sleep(self.prepare_seconds)
        text = request.text
        if not _WORD.search(text):
            return PreparedJob(prompt_len=0, empty=True)
        target = int(round(len(text) * self.codes_per_char))
        target = max(self.min_codes, min(target, self.max_codes, request.params.max_new_tokens))
        self._prepared[job_id] = _ToneJob(
            target=target,
            streaming=request.streaming,
            frequency=220.0 + 20.0 * (job_id % 12),
            fail=bool(self.fail_marker) and self.fail_marker in text,
            oom=bool(self.oom_marker) and self.oom_marker in text,
            crash=bool(self.crash_marker) and self.crash_marker in text,
        )
        return PreparedJob(prompt_len=8 + len(text))

    def execute(self, plan: StepPlan) -> StepOutput:
        start = time.perf_counter()
        self.steps += 1
        for job_id in plan.release:
            self._slots.pop(job_id, None)
            self._prepared.pop(job_id, None)
        jobs = plan.jobs
        self.max_batch_seen = max(self.max_batch_seen, len(jobs))
        states = [self._prepared.get(j) or self._slots.get(j) for j in jobs]
        if any(s is not None and s.crash for s in states):
            for j in jobs:
                self._prepared.pop(j, None)
                self._slots.pop(j, None)
            raise RuntimeError("synthetic crash requested by the text")
        if len(jobs) > 1 and any(s is not None and s.oom for s in states):
            return StepOutput(oom=True, seconds=time.perf_counter() - start)
        if self.step_seconds:
            time.sleep(self.step_seconds)
        out = StepOutput()
        finished: list[JobId] = []
        for job_id in plan.prefill:
            state = self._prepared.pop(job_id, None)
            if state is None:
                out.failed[job_id] = "prefill of a job that was never prepared"
                continue
            if len(self._slots) >= self.max_slots:
                out.failed[job_id] = "no free KV slot"
                continue
            self._slots[job_id] = state
        for job_id in jobs:
            state = self._slots.get(job_id)
            if state is None:
                out.failed.setdefault(job_id, "decode of a job without a slot")
                continue
            if state.fail:
                out.failed[job_id] = "synthetic failure requested by the text"
                del self._slots[job_id]
                continue
            before = state.tokens
            state.tokens = min(state.tokens + self.codes_per_step, state.target)
            out.tokens[job_id] = state.tokens
            done = state.tokens >= state.target
            if state.streaming:
                out.audio[job_id] = self._tone(state, before, state.tokens)
            elif done:
                out.audio[job_id] = self._tone(state, 0, state.tokens)
            if done:
                finished.append(job_id)
                del self._slots[job_id]
        out.finished = tuple(finished)
        out.seconds = time.perf_counter() - start
        return out

    def forget(self, job_id: JobId) -> None:
        self._prepared.pop(job_id, None)
        self._slots.pop(job_id, None)

    # -- helpers -------------------------------------------------------------------

    @property
    def slots_in_use(self) -> int:
        return len(self._slots)

    @property
    def prepared_jobs(self) -> int:
        return len(self._prepared)

    def _check_voice(self, voice: str | None) -> None:
        if voice is None or voice in self.voices or _SEED_VOICE.match(voice):
            return
        raise VoiceError(f"voice {voice[:40]!r} is not a named voice or seed:<int>")

    def _tone(self, state: _ToneJob, first_code: int, end_code: int) -> np.ndarray:
        # A cached table keeps the runner's own cost far below the server's,
        # which is what the server bench measures.
        table = self._tables.get(state.frequency)
        if table is None:
            n = np.arange(_TABLE_CODES * SAMPLES_PER_STEP)
            table = (self.amplitude * np.sin(2 * np.pi * state.frequency * n / SAMPLE_RATE)
                     ).astype(np.float32)
            self._tables[state.frequency] = table
        if end_code <= _TABLE_CODES:
            # A read-only view, not a copy: a stand-in for the model should cost
            # next to nothing, and consumers never write into the audio they get.
            view = table[first_code * SAMPLES_PER_STEP:end_code * SAMPLES_PER_STEP]
            view.flags.writeable = False
            return view
        idx = np.arange(first_code * SAMPLES_PER_STEP, end_code * SAMPLES_PER_STEP) % table.size
        return table[idx]
