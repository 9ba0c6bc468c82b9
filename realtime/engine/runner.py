"""The model runner: one ``StepPlan`` in, one ``StepOutput`` out.

``ModelRunner`` implements ``realtime.engine.api.Runner`` over our
``StaticGPT`` and the streaming vocoder. ``prepare`` turns a segment request
into a ``JobSpec`` (prompt, sampling, seed: ``prepare.JobPreparer``) and
keeps nothing; the server calls it on its preparation thread, beside steps.
Per ``execute``, exactly as planned:

1. release: the plan's released jobs are dropped;
2. prefill: new jobs run their prompts in the KV slots the plan names
   (batched, right padded) and draw their first code; their prompts and
   sampling parameters cross to the device in two non-blocking copies;
3. decode: every decode job advances one code, entirely on the device
   (``step.DeviceStep``: per-slot positions, code counts and sampling
   parameters live there); its only input, the rows' slot ids, crosses when
   the batch's composition changes (one non-blocking copy), so a steady step
   sends nothing;
4. one host read of EOS flags, prefill and decode together
   (``eos_read.EosReader``): on the CPU this step's, in the step that drew
   them; on CUDA (``eos_read`` deferred) the previous step's, so the host
   reports, plans and launches the next step while this one's flags cross.
   A job known finished one step late discards the code drawn meanwhile;
   ``StepOutput.tokens`` counts the codes drawn (``HeldJob.drawn``), so the
   plan's buckets cover what the device writes;
5. audio: the runner's ``AudioStage`` (vocoder/stage.py) renders what is due
   across all jobs in one bounded Decoder + Vocos call. A finished job whose
   audio must wait keeps its slot, is skipped by decodes, and is reported
   finished in the step that delivers its audio.

With a ``Capture`` (CUDA graphs) the runner's ``GraphCache`` (over its
model, KV cache and device step, filled in ``warmup``) runs the plan's padded
shapes (decode: ``batch_size``, ``kv_bucket``; prefill: ``prefill_batch``,
``prompt_bucket``); eagerly just the real rows, attending up to the batch's
longest length. The decoder is ours (``model.gpt``) or the CPU engine's.

Device state per slot is written in place at (slot, code number): re-running
a step after an out-of-memory failure overwrites what the failed one wrote.

Thread: ``prepare`` on any thread (``JobPreparer`` locks); the rest on the
model thread only.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import torch

from realtime.engine import startup_clock
from realtime.engine.api import (
    SAMPLE_RATE,
    PreparedJob,
    RuntimeOptions,
    SegmentRequest,
)
from realtime.engine.cuda.graphs import Capture, GraphCache, GraphShapes
from realtime.engine.eos_read import EosReader, count_codes, deferred_for
from realtime.engine.held import HeldJob, JobSpec
from realtime.engine.model.gpt import StaticGPT
from realtime.engine.model.gpt_ends import GptModel
from realtime.engine.model.prepared_weights import WeightsEntry
from realtime.engine.model.weights import ModelAssets
from realtime.engine.ort.kv import OrtKV
from realtime.engine.prepare import JobPreparer
from realtime.engine.refine import RefineStage
from realtime.engine.sampling import MIN_KEEP
from realtime.engine.step import DeviceStep, upload
from realtime.engine.step_cost import with_step_overhead
from realtime.engine.step_failure import fail_step
from realtime.engine.text.frontend import Speakers, TextFrontEnd
from realtime.engine.vocoder.batch import STEPS_PER_CALL, STEPS_PER_CALL_CPU
from realtime.engine.vocoder.encoder import SampleEncoder
from realtime.engine.vocoder.overlap import overlap_for
from realtime.engine.vocoder.stage import AudioStage
from realtime.engine.vocoder.stream import StreamingVocoder
from scheduler import JobId, StepOutput, StepPlan

if TYPE_CHECKING:
    from realtime.engine.warm_start import StagedWarmup

log = logging.getLogger(__name__)


@dataclass
class _StepResult:
    jobs: list[HeldJob]
    eos: torch.Tensor  # [B] bool on device


@dataclass
class _BatchSlots:
    """The decode rows' slot ids on the device, kept while the batch's
    composition (slots, padding) stays the same."""

    key: tuple = ()
    slots: torch.Tensor = field(default_factory=lambda: torch.empty(0, dtype=torch.int64))


class ModelRunner:
    """``Runner`` over ChatTTS weights; see the module docstring."""

    sample_rate = SAMPLE_RATE
    offers_refine = True
    warmup_rest: StagedWarmup | None = None  # CPU: what warmup_first() left for idle time

    def __init__(self, assets: ModelAssets, options: RuntimeOptions, device: torch.device,
                 dtype: torch.dtype, vocoder: StreamingVocoder | None, capture: Capture | None = None,
                 model: GptModel | None = None):
        """``vocoder`` None: no audio (meta-device shape checks); ``capture``
        None: steps run eagerly; ``model`` None: our torch decoder."""
        self.assets, self.options = assets, options
        self.torch_device, self.dtype = device, dtype
        self.device = "cuda" if device.type == "cuda" else "cpu"
        self.weights_kind = assets.kind
        self.max_slots = options.max_slots
        self.batch_sizes = tuple(sorted(options.batch_sizes))
        self.kv_buckets = tuple(sorted(options.kv_buckets))
        self.prompt_buckets = tuple(sorted(options.prompt_buckets))
        self.shape = assets.shape
        self.model: GptModel = model or StaticGPT(
            assets.shape, assets.gpt_state, assets.embed, device, dtype,
            WeightsEntry.of(assets, options.cache_dir, device, dtype))
        startup_clock.mark("decoder matrices")
        self.max_len = min(max(self.kv_buckets), assets.shape.max_positions)
        self.cache = self.model.new_cache(self.max_slots, self.max_len, max(self.batch_sizes))
        slots = self.max_slots + 1
        q, d = assets.shape.num_vq, assets.shape.hidden
        self.codes = torch.zeros(slots, self.max_len, q, dtype=torch.int64, device=device)
        self.hidden = torch.zeros(slots, self.max_len, d, dtype=torch.float32, device=device)
        self.step = DeviceStep(self.model, self.cache, self.codes, self.hidden)
        self.front = TextFrontEnd(assets.tokenizer, Speakers(d, assets.spk_stat, options.voices),
                                  q, assets.shape.num_audio_tokens)
        self.voices = self.front.speakers.names
        self.sample_encoder = SampleEncoder(assets.dvae) if assets.dvae is not None else None
        self.vocoder, self.first_audio_steps = vocoder, 1 if vocoder is None else vocoder.first_audio_steps
        self.jobs: dict[JobId, HeldJob] = {}
        self.audio = AudioStage(vocoder, self.hidden,
                                STEPS_PER_CALL_CPU if device.type == "cpu" else STEPS_PER_CALL,
                                overlap_for(options.vocoder_overlap, device), self.jobs)
        self.eos = EosReader(device, deferred_for(options.eos_read, device))
        self.graphs = None if capture is None else GraphCache(
            cast(StaticGPT, self.model), self.cache, self.step, capture)
        self._decode_slots = _BatchSlots()
        self._state_stale = False  # a failed step may have advanced the device state
        self.pad_batches = self.graphs is not None
        self.preparer = JobPreparer(self.front, self.max_len, options.seed)
        self.refine = RefineStage(self.model, self.cache, assets, self.max_len, self.prepare,
                                  self._execute, (self.batch_sizes, self.prompt_buckets))
        self.preparer.refine = self.refine.prepare
        if isinstance(self.cache, OrtKV):  # rows of slots nobody holds are free to reuse
            self.cache.live = self._live_slots
        log.info("runtime: %s weights on %s (%s), %d slots x %d positions, KV cache %.1f MiB",
                 assets.kind.value, device, str(dtype).removeprefix("torch."), self.max_slots,
                 self.max_len, self.cache.nbytes / 2**20)

    # --- api.Runner -------------------------------------------------------------------

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        return self.preparer.prepare(request)

    def reset(self) -> None:
        self.refine.reset()
        self.jobs.clear()
        self.eos.drop()
        self.audio.reset()
        self._decode_slots = _BatchSlots()

    @torch.no_grad()
    def warmup(self) -> dict[tuple[int, int], float]:
        self.front.warmup()
        if self.graphs is not None:
            self.graphs.capture_all(GraphShapes.offered(self.batch_sizes, self.kv_buckets,
                                                        self.prompt_buckets, self.max_slots, self.max_len))
        timings = {(b, k): self._time_decode(b, min(k, self.max_len))
                   for b in self.batch_sizes if b <= self.max_slots for k in self.kv_buckets}
        table = with_step_overhead(self, timings)  # the cost model's seed: whole steps
        if self.torch_device.type == "cpu":
            from realtime.engine.cpu.stream_advice import log_advice
            log_advice(self, table, self.options.cache_dir)
        return table

    @torch.no_grad()
    def warmup_first(self) -> dict[tuple[int, int], float]:
        """``warmup`` for a server: on the CPU only what the first requests
        need, the rest left in ``warmup_rest`` for idle time (warm_start.py)."""
        if self.torch_device.type != "cpu":
            return self.warmup()
        from realtime.engine.model.prepared_cache import PreparedCache
        from realtime.engine.warm_start import StagedWarmup
        self.front.warmup()
        self.warmup_rest = StagedWarmup(self, PreparedCache(self.options.cache_dir))
        return self.warmup_rest.before_ready()

    @property
    def warmup_left(self) -> int:
        return 0 if self.warmup_rest is None else self.warmup_rest.left

    @torch.no_grad()
    def warm_idle(self, cost=None) -> dict[tuple[int, int], float]:
        return self.warmup_rest.step(cost) if self.warmup_rest is not None and self.warmup_rest.left else {}

    @torch.no_grad()
    def execute(self, plan: StepPlan) -> StepOutput:
        return self.refine.execute(plan) if self.refine.involved(plan) else self._execute(plan)

    def _execute(self, plan: StepPlan) -> StepOutput:
        start = time.perf_counter()
        out = StepOutput()
        for job_id in plan.release:
            self.jobs.pop(job_id, None)
            self.audio.awaiting.pop(job_id, None)
        pre, dec = self._jobs_of(plan, out)
        # Jobs decoded to their end whose audio is still queued decode no more,
        # nor does one whose code in flight is its last.
        out.tokens.update((j.id, j.n_codes) for j in dec if j.done)
        dec = [j for j in dec if not j.exhausted]
        try:
            results = []
            if pre:
                results.append(self._prefill(pre, plan))
            if dec:
                results.append(self._decode(dec, plan))
            if results:
                flags = results[0].eos if len(results) == 1 else torch.cat([r.eos for r in results])
                self.eos.launch([j for r in results for j in r.jobs], flags)
            # The step's one read of the device: its EOS flags, or the previous step's.
            read = self.eos.take(keep_newest=self.eos.deferred and bool(results))
        except Exception as exc:  # noqa: BLE001 - fail_step logs it, or raises a lost device
            self._state_stale = True
            for job in pre:
                del self.jobs[job.id]
            fail_step(exc, out, [j.id for j in pre + dec], "model step")
            if out.oom:  # nothing advanced: the scheduler retries the whole plan
                self._empty_device_cache()
                out.failed.clear()
            for job_id in out.failed:
                self.jobs.pop(job_id, None)
            out.seconds = time.perf_counter() - start
            return out
        jobs = count_codes(read, self.jobs)
        for job in jobs + pre + dec:  # codes drawn: the scheduler's buckets must cover them
            out.tokens[job.id] = job.n_codes if job.done else job.drawn
        ended = self.audio.render(jobs, out, self.jobs.__contains__)  # finished or failed
        out.finished = tuple(j for j in ended if j not in out.failed)
        for job_id in ended:
            self.jobs.pop(job_id, None)
        if not self.jobs:
            self.eos.drop()  # flags of codes drawn after the last job's end: nobody's
        out.seconds = time.perf_counter() - start
        return out

    def _jobs_of(self, plan: StepPlan, out: StepOutput) -> tuple[list[HeldJob], list[HeldJob]]:
        """The plan's prefill jobs (now held) and decode jobs; a row that
        breaks the contract fails its job instead of corrupting a slot."""
        pre, dec = [], []
        taken = {j.slot for j in self.jobs.values()}
        for i, (job_id, slot, spec) in enumerate(zip(plan.prefill, plan.prefill_slots, plan.work)):
            if job_id in self.jobs or slot in taken or not 0 <= slot < self.max_slots \
                    or not isinstance(spec, JobSpec):
                out.failed[job_id] = f"prefill into slot {slot} breaks the runner's contract"
                continue
            taken.add(slot)
            follows = plan.follows[i] if i < len(plan.follows) else None
            pre.append(self.jobs.setdefault(job_id, HeldJob(job_id, spec, slot, follows=follows)))
        for job_id, slot in zip(plan.decode, plan.decode_slots):
            held = self.jobs.get(job_id)
            if held is None or held.slot != slot:
                out.failed[job_id] = f"decode of a job not prefilled in slot {slot}"
                self.jobs.pop(job_id, None)
                continue
            dec.append(held)
        return pre, dec

    def _live_slots(self) -> set[int]:
        return {j.slot for j in self.jobs.values()} | {p.slot for p in self.refine.passes.values()}

    def _empty_device_cache(self) -> None:
        if self.torch_device.type == "cuda":
            torch.cuda.empty_cache()

    # --- model steps ------------------------------------------------------------------

    def _prefill(self, jobs: list[HeldJob], plan: StepPlan) -> _StepResult:
        lengths = [j.spec.prompt.length for j in jobs]
        n = len(jobs)
        if self.pad_batches:
            length, rows = min(plan.prompt_bucket, self.max_len), max(plan.prefill_batch, n)
        else:
            length, rows = max(lengths), n
        ints, floats = self._prefill_upload(jobs, rows)
        slots, last = ints[:rows], ints[rows:rows + n]
        ids = ints[rows + n * 4:]
        speakers = floats[n * 3:].view(n, self.shape.hidden)
        x = torch.zeros(rows, length, self.shape.hidden, dtype=self.dtype, device=self.torch_device)
        offset = 0
        for i, job in enumerate(jobs):
            prompt, n_ids = job.spec.prompt, len(job.spec.ids)
            x[i, :prompt.length] = self.model.embed_prompt(
                ids[offset:offset + n_ids], speakers[i].to(prompt.speaker.dtype),
                self.front.spk_emb_id, prompt.text_length)
            offset += n_ids
        hidden = None
        if self.graphs is not None:
            hidden = self.graphs.prefill(x, slots)
        if hidden is None:
            hidden = self.model.prefill(x, slots, self.cache, lengths + [length] * (rows - n))
        final = hidden[torch.arange(n, device=self.torch_device), last]  # [P, D]
        self.step.state.load(slots[:n], ints[rows + n:rows + n * 4].view(3, n).T,
                             floats[:n * 3].view(3, n).T)
        eos = self.step.first_codes(final, slots[:n], last + 1)
        return _StepResult(jobs, eos)

    def _prefill_upload(self, jobs: list[HeldJob], rows: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Everything a prefill needs from the host, in one int64 and one
        float32 device tensor (two non-blocking copies). ints: slots [rows]
        (padding: scratch), last prompt index [P], top_k, min_new, seed [P]
        each, then every prompt's ids; floats: temperature, 1 - top_p,
        penalty [P] each, then the speakers [P, D] (fp16 values, exact)."""
        n_audio = self.shape.num_audio_tokens
        specs = [j.spec for j in jobs]
        head = [j.slot for j in jobs] + [self.cache.scratch] * (rows - len(jobs))
        head += [s.prompt.length - 1 for s in specs]
        head += [min(max(s.params.top_k, MIN_KEEP), n_audio) for s in specs]
        head += [s.params.min_new_tokens for s in specs]
        head += [s.seed & 0xFFFFFFFF for s in specs]
        for s in specs:
            head += s.ids
        # 1 - top_p in double on the host, as upstream computes it.
        floats = [s.params.temperature for s in specs] + [1.0 - s.params.top_p for s in specs]
        floats += [s.params.repetition_penalty for s in specs]
        for s in specs:
            floats += s.speaker
        return (upload(torch.tensor(head, dtype=torch.int64), self.torch_device),
                upload(torch.tensor(floats, dtype=torch.float32), self.torch_device))

    def _decode(self, jobs: list[HeldJob], plan: StepPlan) -> _StepResult:
        n = len(jobs)
        positions = [j.spec.prompt.length + j.drawn - 1 for j in jobs]
        slot_list = [j.slot for j in jobs]
        if self.pad_batches:
            kv_len, rows = min(plan.kv_bucket, self.max_len), max(plan.batch_size, n)
        else:
            # Eager attention reads exactly the batch's longest length: the
            # cache read is memory-bound, so every position skipped is saved.
            kv_len, rows = min(max(positions) + 1, self.max_len), n
        slot_list += [self.cache.scratch] * (rows - n)
        slots = self._slots_on_device(tuple(slot_list))
        if self._state_stale:
            self._resync(jobs, slots[:n], positions)
        run = slot_list == list(range(slot_list[0], slot_list[0] + n))
        eos = self._run_decode(slots, kv_len, slot_list[0] if run and rows == n else None)
        return _StepResult(jobs, eos[:n])

    def _run_decode(self, slots: torch.Tensor, kv_len: int, first: int | None = None) -> torch.Tensor:
        """One decode step of rows ``slots``: the captured graph when there is
        one for the shape, else eagerly; the rows' EOS flags on the device."""
        eos = self.graphs.decode(slots, kv_len) if self.graphs is not None else None
        return eos if eos is not None else self.step.decode(slots, kv_len, first)

    def _slots_on_device(self, key: tuple) -> torch.Tensor:
        if self._decode_slots.key != key:
            slots = upload(torch.tensor(key, dtype=torch.int64), self.torch_device)
            self._decode_slots = _BatchSlots(key, slots)
        return self._decode_slots.slots

    def _resync(self, jobs: list[HeldJob], slots: torch.Tensor, positions: list[int]) -> None:
        """After a failed step (out of memory, say) the device state may have
        advanced for codes the jobs never got: restore it from the host's
        record (rare: one more copy)."""
        host = torch.tensor([positions, [j.drawn for j in jobs]], dtype=torch.int64)
        state = upload(host, self.torch_device)
        self.step.state.set_rows(slots, state[0], state[1])
        self._state_stale = False

    # --- timing -----------------------------------------------------------------------

    def _time_decode(self, batch: int, kv_len: int, repeats: int = 3) -> float:
        """Median seconds per decode step (sampling included) at (batch, kv_len) of
        ``repeats``: rows in the scratch slot at the bucket's last position, reading
        K/V pages a first, untimed step bound and ``touch`` wrote (docs/runtime.md)."""
        slots = torch.full((batch,), self.cache.scratch, device=self.torch_device)
        seconds = []
        for i in range(repeats + 1):
            self.step.state.position[self.cache.scratch] = kv_len - 1
            self._sync()
            t = time.perf_counter()
            self._run_decode(slots, kv_len)
            self._sync()
            if i == 0:
                self.cache.touch(kv_len)
            else:
                seconds.append(time.perf_counter() - t)
        return sorted(seconds)[len(seconds) // 2]

    def _sync(self) -> None:
        if self.torch_device.type == "cuda":
            torch.cuda.synchronize(self.torch_device)
