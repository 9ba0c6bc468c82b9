"""The model runner: one ``StepPlan`` in, one ``StepOutput`` out.

``ModelRunner`` implements ``realtime.runtime.api.Runner`` over our
``StaticGPT`` and the streaming vocoder. ``prepare`` turns a segment request
into a ``JobSpec`` (prompt, sampling, seed) and keeps nothing. Per ``execute``,
exactly as planned:

1. release: the plan's released jobs are dropped;
2. prefill: new jobs run their prompts in the KV slots the plan names
   (batched, right padded) and draw their first code;
3. decode: every decode job advances one code;
4. one host read of the step's EOS flags (the scheduler needs to know who
   finished before it can plan the next step; this is the only sync);
5. audio: streaming jobs push new hidden states into their ``VocoderStream``
   every ``PUSH_EVERY`` codes; what is due across all jobs runs as one bounded
   Decoder + Vocos call (``vocoder_batch``). A finished job whose audio must
   wait keeps its slot, is skipped by decodes, and is reported finished in
   the step that delivers its audio.

With CUDA graphs the runner runs the plan's padded shapes (``batch_size`` and
``kv_bucket`` for decode, ``prefill_batch`` and ``prompt_bucket`` for
prefill); eagerly it runs just the real rows and attends only up to the
batch's longest length, which the plan's bucket bounds.

Device state per slot is written in place at index (slot, code number):
codes, hidden states and K/V, so re-running a step after an out-of-memory
failure simply overwrites what the failed attempt wrote.

Thread: every method runs on the model thread only.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

import torch

from realtime.runtime.api import (
    SAMPLE_RATE,
    DeviceFailure,
    PreparedJob,
    RequestError,
    RuntimeOptions,
    SamplingParams,
    SegmentRequest,
)
from realtime.runtime.frontend import Prompt, Speakers, TextFrontEnd, validate_params
from realtime.runtime.model import KVCache, StaticGPT
from realtime.runtime.sampling import PENALTY_WINDOW, RowParams, sample
from realtime.runtime.shapes import EOS_CODE
from realtime.runtime.vocoder import VocoderStream, Window
from realtime.runtime.vocoder_batch import STEPS_PER_CALL, Due, vocode_step
from realtime.runtime.weights import ModelAssets
from scheduler import JobId, StepOutput, StepPlan

log = logging.getLogger(__name__)

PUSH_EVERY = 4  # codes between pushes into a streaming job's vocoder


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A prepared segment: what ``prepare`` hands out as ``PreparedJob.work``."""

    prompt: Prompt
    params: SamplingParams
    seed: int
    streaming: bool
    max_new: int


@dataclass
class _Job:
    """A job the runner holds, from its prefill to its end."""

    id: JobId
    spec: JobSpec
    slot: int
    n_codes: int = 0  # valid codes so far (an EOS step adds none)
    pushed: int = 0  # hidden states already in the vocoder stream
    stream: VocoderStream | None = None
    done: bool = False


@dataclass
class _StepResult:
    jobs: list[_Job]
    eos: torch.Tensor  # [B] bool on device


@dataclass
class _BatchParams:
    key: tuple = ()
    params: RowParams | None = None


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.OutOfMemoryError)


def _is_device_lost(exc: BaseException) -> bool:
    """A CUDA error that breaks the context for the whole process (by type:
    torch raises ``AcceleratorError`` for them; out of memory is separate)."""
    return isinstance(exc, torch.AcceleratorError) and not _is_oom(exc)


class ModelRunner:
    """``Runner`` over ChatTTS weights; see the module docstring."""

    sample_rate = SAMPLE_RATE

    def __init__(self, assets: ModelAssets, options: RuntimeOptions, device: torch.device,
                 dtype: torch.dtype, vocoder, graphs=None):
        self.assets, self.options = assets, options
        self.torch_device, self.dtype = device, dtype
        self.device = "cuda" if device.type == "cuda" else "cpu"
        self.weights_kind = assets.kind
        self.max_slots = options.max_slots
        self.batch_sizes = tuple(sorted(options.batch_sizes))
        self.kv_buckets = tuple(sorted(options.kv_buckets))
        self.prompt_buckets = tuple(sorted(options.prompt_buckets))
        self.shape = assets.shape
        self.model = StaticGPT(assets.shape, assets.gpt_state, assets.embed, device, dtype)
        self.max_len = min(max(self.kv_buckets), assets.shape.max_positions)
        self.cache = KVCache(assets.shape, self.max_slots, self.max_len, dtype, device)
        slots = self.max_slots + 1
        q, d = assets.shape.num_vq, assets.shape.hidden
        self.codes = torch.zeros(slots, self.max_len, q, dtype=torch.int64, device=device)
        self.hidden = torch.zeros(slots, self.max_len, d, dtype=torch.float32, device=device)
        self.front = TextFrontEnd(assets.tokenizer, Speakers(d, assets.spk_stat, options.voices_file))
        self.voices = self.front.speakers.names
        self.vocoder = vocoder
        self.graphs = graphs
        self.jobs: dict[JobId, _Job] = {}
        # Jobs done decoding whose last audio is still to render, oldest first.
        self._awaiting: dict[JobId, _Job] = {}
        self.vocoder_steps_per_call = STEPS_PER_CALL
        self._seeds = random.Random(options.seed)
        self._decode_params = _BatchParams()
        self.pad_batches = graphs is not None
        # Tests and benchmarks set this to keep each finished job's codes
        # ([n, Q] on the CPU) in ``finished_codes`` and the hidden states that
        # drew them and fed its vocoder ([n, D] fp32) in ``finished_hidden``;
        # serving leaves it off.
        self.record_codes = False
        self.finished_codes: dict[JobId, torch.Tensor] = {}
        self.finished_hidden: dict[JobId, torch.Tensor] = {}
        log.info("runtime: %s weights on %s (%s), %d slots x %d positions, KV cache %.1f MiB",
                 assets.kind.value, device, str(dtype).removeprefix("torch."), self.max_slots,
                 self.max_len, self.cache.nbytes / 2**20)

    # --- api.Runner -------------------------------------------------------------------

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        validate_params(request.params)
        prompt = self.front.build(request.text, request.voice)
        if prompt is None:
            return PreparedJob(prompt_len=0, empty=True)
        if prompt.length >= self.max_len - 1:
            raise RequestError(f"segment too long: {prompt.length} prompt tokens, "
                               f"at most {self.max_len - 2}")
        seed = request.params.seed
        if seed is None:
            seed = self._seeds.getrandbits(32)
        max_new = min(request.params.max_new_tokens, self.max_len - prompt.length)
        spec = JobSpec(prompt, request.params, seed, request.streaming, max_new)
        return PreparedJob(prompt_len=prompt.length, work=spec)

    def reset(self) -> None:
        self.jobs.clear()
        self._awaiting.clear()
        self._decode_params = _BatchParams()

    @torch.no_grad()
    def warmup(self) -> dict[tuple[int, int], float]:
        self.front.warmup()
        if self.graphs is not None:
            self.graphs.capture_all(self)
        timings = {}
        for b in self.batch_sizes:
            if b > self.max_slots:
                continue
            for bucket in self.kv_buckets:
                timings[(b, bucket)] = self._time_decode(b, min(bucket, self.max_len))
        return timings

    @torch.no_grad()
    def execute(self, plan: StepPlan) -> StepOutput:
        start = time.perf_counter()
        out = StepOutput()
        for job_id in plan.release:
            self.jobs.pop(job_id, None)
            self._awaiting.pop(job_id, None)
        pre, dec = self._jobs_of(plan, out)
        # Jobs decoded to their end whose audio is still queued decode no more.
        out.tokens.update((j.id, j.n_codes) for j in dec if j.done)
        dec = [j for j in dec if not j.done]
        try:
            results = []
            if pre:
                results.append(self._prefill(pre, plan))
            if dec:
                results.append(self._decode(dec, plan))
            jobs = [j for r in results for j in r.jobs]
            eos = torch.cat([r.eos for r in results]).cpu().tolist() if results else []
        except Exception as exc:  # mapped to failed/oom; only a lost device is raised
            for job in pre:
                del self.jobs[job.id]
            if _is_device_lost(exc):
                log.critical("the device failed in a step of %d jobs: %s", len(pre) + len(dec), exc)
                raise DeviceFailure(f"{type(exc).__name__}: {exc}") from exc
            if _is_oom(exc):
                log.warning("out of device memory in a step of %d jobs", len(pre) + len(dec))
                self._empty_device_cache()
                out.oom = True
                out.failed.clear()
            else:
                log.exception("model step failed for jobs %s", [j.id for j in pre + dec])
                for job in pre + dec:
                    out.failed[job.id] = f"model step failed: {type(exc).__name__}: {exc}"
                    self.jobs.pop(job.id, None)
            out.seconds = time.perf_counter() - start
            return out
        for job, hit_eos in zip(jobs, eos):
            if not hit_eos:
                job.n_codes += 1
            if hit_eos or job.n_codes >= job.spec.max_new:
                job.done = True
            out.tokens[job.id] = job.n_codes
        ended = self._audio(jobs, out)  # finished or failed
        out.finished = tuple(j for j in ended if j not in out.failed)
        if self.record_codes:
            for job in jobs:
                if job.done:
                    self.finished_codes[job.id] = self.codes[job.slot, :job.n_codes].cpu().clone()
                    self.finished_hidden[job.id] = self.hidden[job.slot, :job.n_codes].cpu().clone()
        for job_id in ended:
            self.jobs.pop(job_id, None)
        out.seconds = time.perf_counter() - start
        return out

    def _jobs_of(self, plan: StepPlan, out: StepOutput) -> tuple[list[_Job], list[_Job]]:
        """The plan's prefill jobs (now held) and decode jobs; a row that
        breaks the contract fails its job instead of corrupting a slot."""
        pre, dec = [], []
        taken = {j.slot for j in self.jobs.values()}
        for job_id, slot, spec in zip(plan.prefill, plan.prefill_slots, plan.work):
            if job_id in self.jobs or slot in taken or not 0 <= slot < self.max_slots \
                    or not isinstance(spec, JobSpec):
                out.failed[job_id] = f"prefill into slot {slot} breaks the runner's contract"
                continue
            taken.add(slot)
            job = self.jobs[job_id] = _Job(job_id, spec, slot)
            pre.append(job)
        for job_id, slot in zip(plan.decode, plan.decode_slots):
            job = self.jobs.get(job_id)
            if job is None or job.slot != slot:
                out.failed[job_id] = f"decode of a job not prefilled in slot {slot}"
                self.jobs.pop(job_id, None)
                continue
            dec.append(job)
        return pre, dec

    def _empty_device_cache(self) -> None:
        if self.torch_device.type == "cuda":
            torch.cuda.empty_cache()

    # --- model steps ------------------------------------------------------------------

    def _row_params(self, jobs: list[_Job]) -> RowParams:
        return RowParams.build([j.spec.params for j in jobs], [j.spec.seed for j in jobs],
                               self.shape.num_audio_tokens, self.torch_device)

    def _history(self, slots: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """The last PENALTY_WINDOW codes of each row: [B, Q, W], V where none."""
        offsets = torch.arange(-PENALTY_WINDOW, 0, device=self.torch_device)
        idx = steps.unsqueeze(1) + offsets  # [B, W]
        hist = self.codes[slots.unsqueeze(1), idx.clamp(min=0)]  # [B, W, Q]
        hist = hist.masked_fill((idx < 0).unsqueeze(2), self.shape.num_audio_tokens)
        return hist.permute(0, 2, 1).contiguous()

    def _sample_and_store(self, hidden: torch.Tensor, slots: torch.Tensor, steps: torch.Tensor,
                          params: RowParams) -> torch.Tensor:
        """Draw codes from fp32 ``hidden`` [B, D]; store codes and hidden; return EOS [B]."""
        logits = self.model.logits(hidden)
        codes = sample(logits, self._history(slots, steps), steps, params)
        self.codes.index_put_((slots, steps), codes)
        self.hidden.index_put_((slots, steps), hidden)
        return (codes == EOS_CODE).any(dim=1)

    def _prefill(self, jobs: list[_Job], plan: StepPlan) -> _StepResult:
        lengths = [j.spec.prompt.length for j in jobs]
        if self.pad_batches:
            length, rows = min(plan.prompt_bucket, self.max_len), max(plan.prefill_batch, len(jobs))
        else:
            length, rows = max(lengths), len(jobs)
        x = torch.zeros(rows, length, self.shape.hidden, dtype=self.dtype, device=self.torch_device)
        for i, job in enumerate(jobs):
            prompt = job.spec.prompt
            x[i, :prompt.length] = self.model.embed_prompt(prompt.ids, prompt.speaker,
                                                           self.front.spk_emb_id)
        slot_list = [j.slot for j in jobs] + [self.cache.scratch] * (rows - len(jobs))
        slots = torch.tensor(slot_list, device=self.torch_device)
        hidden = None
        if self.graphs is not None:
            hidden = self.graphs.prefill(x, slots)
        if hidden is None:
            hidden = self.model.prefill(x, slots, self.cache)
        last = torch.tensor([n - 1 for n in lengths], device=self.torch_device)
        n = len(jobs)
        final = hidden[torch.arange(n, device=self.torch_device), last]  # [P, D]
        steps = torch.zeros(n, dtype=torch.int64, device=self.torch_device)
        eos = self._sample_and_store(final, slots[:n], steps, self._row_params(jobs))
        return _StepResult(jobs, eos)

    def _decode(self, jobs: list[_Job], plan: StepPlan) -> _StepResult:
        n = len(jobs)
        key = tuple((j.id, j.slot) for j in jobs)
        if self._decode_params.key != key:
            self._decode_params = _BatchParams(key, self._row_params(jobs))
        params = self._decode_params.params
        positions = [j.spec.prompt.length + j.n_codes - 1 for j in jobs]
        slot_list = [j.slot for j in jobs]
        needed = max(positions) + 1
        rows = n
        if self.pad_batches:
            kv_len, rows = min(plan.kv_bucket, self.max_len), max(plan.batch_size, n)
        else:
            # Eager attention reads exactly the batch's longest length: the
            # cache read is memory-bound, so every position skipped is saved.
            kv_len = min(needed, self.max_len)
        pad = rows - n
        slots = torch.tensor(slot_list + [self.cache.scratch] * pad, device=self.torch_device)
        pos = torch.tensor(positions + [0] * pad, device=self.torch_device)
        steps = torch.tensor([j.n_codes for j in jobs], device=self.torch_device)
        prev = self.codes[slots[:n], steps - 1]  # [B, Q]
        x = self.model.embed_codes(prev)
        if pad:
            x = torch.cat([x, x.new_zeros(pad, x.shape[1])])
        hidden = None
        if self.graphs is not None:
            hidden = self.graphs.decode(x, slots, pos, kv_len)
        if hidden is None:
            run = slot_list == list(range(slot_list[0], slot_list[0] + n))
            first = slot_list[0] if run and not pad else None
            hidden = self.model.decode(x, slots, pos, self.cache, kv_len, first)
        eos = self._sample_and_store(hidden[:n], slots[:n], steps, params)
        return _StepResult(jobs, eos)

    # --- audio ------------------------------------------------------------------------

    def _audio(self, jobs: list[_Job], out: StepOutput) -> list[JobId]:
        """Vocode what is due (module docstring, step 5) into ``out``;
        returns the jobs whose last audio went out, or that failed."""
        for job in jobs:
            self._feed(job)
            if job.done:
                self._awaiting[job.id] = job
        running = [j for j in jobs if j.spec.streaming and not j.done]
        due = [self._due(j) for j in running + list(self._awaiting.values())]
        try:
            done = vocode_step(self.vocoder, due, self.vocoder_steps_per_call, _is_device_lost)
        except Exception as exc:  # only a lost device gets here
            raise DeviceFailure(f"{type(exc).__name__}: {exc}") from exc
        out.audio.update(done.audio)
        out.failed.update(done.failed)
        for job_id in [*done.failed, *done.ended]:
            self._awaiting.pop(job_id, None)
        return [*done.ended, *done.failed]

    def _feed(self, job: _Job) -> None:
        """Push a streaming job's new hidden states into its stream, every
        ``PUSH_EVERY`` codes and at its end."""
        if not job.spec.streaming:
            return
        if job.stream is None:
            job.stream = self.vocoder.start()
        if job.n_codes - job.pushed >= PUSH_EVERY or (job.done and job.n_codes > job.pushed):
            job.stream.append(self.hidden[job.slot, job.pushed:job.n_codes])
            job.pushed = job.n_codes

    def _due(self, job: _Job) -> Due:
        if job.stream is not None:
            return Due(job.id, job.stream.windows(final=job.done), job.stream, job.done)
        # A finished one-shot job's hidden states stay in its slot until it is reported finished.
        windows = [Window(self.hidden[job.slot, :job.n_codes], 0, 0, None)] if job.n_codes else []
        return Due(job.id, windows, None, True)

    # --- timing -----------------------------------------------------------------------

    def _time_decode(self, batch: int, kv_len: int, repeats: int = 2) -> float:
        """Seconds per decode step at (batch, kv_len) on scratch positions."""
        slots = torch.full((batch,), self.cache.scratch, device=self.torch_device)
        pos = torch.zeros(batch, dtype=torch.int64, device=self.torch_device)
        x = torch.zeros(batch, self.shape.hidden, dtype=self.dtype, device=self.torch_device)
        best = float("inf")
        for _ in range(repeats):
            self._sync()
            t = time.perf_counter()
            hidden = self.graphs.decode(x, slots, pos, kv_len) if self.graphs is not None else None
            if hidden is None:
                self.model.decode(x, slots, pos, self.cache, kv_len)
            self._sync()
            best = min(best, time.perf_counter() - t)
        return best

    def _sync(self) -> None:
        if self.torch_device.type == "cuda":
            torch.cuda.synchronize(self.torch_device)
