"""The refine-text pass: ChatTTS's GPT text head rewrites a segment's text.

Upstream ``Chat._refine_text`` (ChatTTS 0.2.5) on our static-KV decoder, in
the KV slots the scheduler gives audio jobs:

- the prompt is ``[Sbreak]{text}[Pbreak]{prompt}`` (upstream's
  ``Speaker.decorate_text_prompts``), embedded with ``emb_text`` alone (no
  speaker), prefilled from position 0 of the job's slot;
- each step: ``head_text`` logits in fp32 / temperature -> repetition
  penalty over the last 16 tokens drawn (upstream's processor; at its
  default 1.0 upstream adds none, and a factor 1 changes nothing) -> top-p
  -> top-k (both keeping at least 3) -> ``[Ebreak]`` masked before
  ``min_new`` -> a draw (``sampling.draw``: the Gumbel-max form of the same
  distribution with counter noise, so greedy picks equal upstream's and
  seeded draws follow its processors, not ``torch.multinomial``'s stream);
- the pass ends at ``[Ebreak]`` (not kept) or after ``max_new`` tokens (384);
- the text kept is the tokens below ``[break_0]`` (upstream drops the
  prompt-level controls: ``i[i.less(break_0_ids)]``), decoded as upstream's
  ``Tokenizer.decode`` does, then stripped of ``[Stts]``, ``[spk_emb]``,
  ``[empty_spk]`` and outer spaces as ``decorate_code_prompts`` strips it.

A refined segment is one scheduler job in two phases. ``RefineStage.execute``
runs the plan's refine rows itself (eagerly: no graphs for the text head)
and hands the rest of the plan to the audio executor; when a pass ends it
builds the segment's audio prompt from the refined text and prefills it into
the same slot in the same step (a second, prefill-only plan through the
audio executor), so the job's codes begin with no trip back to the
scheduler. ``StepOutput.refining``/``refined`` tell the scheduler.

Thread: the model thread.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import torch

from realtime.engine.api import PreparedJob, RequestError, SamplingParams, SegmentRequest
from realtime.engine.model.gpt_ends import GptModel
from realtime.engine.model.weights import ModelAssets
from realtime.engine.sampling import PENALTY_WINDOW, RowParams, draw, process_logits
from realtime.engine.step_failure import fail_step
from realtime.engine.text.frontend import validate_params
from scheduler import JobId, Refined, StepOutput, StepPlan

log = logging.getLogger(__name__)

# Upstream's decorate_code_prompts removes these from the text it is given.
_STRIPPED = ("[Stts]", "[spk_emb]", "[empty_spk]")
_MASK32 = 0xFFFFFFFF


def refine_seed(seed: int) -> int:
    """The refine pass's seed from the segment's (a different noise stream
    from the audio codes drawn with ``seed``)."""
    return (seed * 0x9E3779B1 + 0x7F4A7C15) & _MASK32


@dataclass(frozen=True, slots=True)
class RefineWork:
    """``PreparedJob.work`` of a segment with a refine pass: the refine
    prompt's ``ids``, its sampling, and ``audio``, the segment's request
    for its audio prompt (its text replaced by the refined text then;
    ``audio.text`` itself is the normalized text, spoken should the pass
    keep nothing)."""

    ids: tuple[int, ...]
    params: SamplingParams
    seed: int
    max_new: int
    audio: SegmentRequest


@dataclass
class _Pass:
    id: JobId
    work: RefineWork
    slot: int
    tokens: list[int] = field(default_factory=list)
    done: bool = False


class RefineStage:
    """The refine passes a runner holds; see the module docstring.

    ``prepare_audio`` and ``execute_audio`` are the runner's own
    ``prepare``/``execute`` for audio jobs (a request without ``refine``,
    a plan without refine rows); ``shapes`` the runner's (batch sizes,
    prompt buckets), which the audio prompts' prefill is padded to."""

    def __init__(self, model: GptModel, cache, assets: ModelAssets, max_len: int,
                 prepare_audio: Callable[[SegmentRequest], PreparedJob],
                 execute_audio: Callable[[StepPlan], StepOutput],
                 shapes: tuple[tuple[int, ...], tuple[int, ...]]):
        self.model, self.cache, self.max_len = model, cache, max_len
        self.tokenizer = tokenizer = assets.tokenizer
        head = cast(torch.nn.Linear, assets.embed.head_text).weight.detach()  # weight norm folded
        self.head = head.to(device=model.device, dtype=torch.float32)  # [V, D]
        self.eos = cast(int, tokenizer.convert_tokens_to_ids("[Ebreak]"))
        self.break_0 = cast(int, tokenizer.convert_tokens_to_ids("[break_0]"))
        self.prepare_audio, self.execute_audio, self.shapes = prepare_audio, execute_audio, shapes
        self.passes: dict[JobId, _Pass] = {}
        # Tests set ``record`` to keep each ended pass's tokens ([Ebreak] not
        # included) in ``finished_tokens``; serving leaves it off.
        self.record = False
        self.finished_tokens: dict[JobId, list[int]] = {}

    # --- prepare ----------------------------------------------------------------------

    def prepare(self, request: SegmentRequest, normalized: str, seed: int) -> PreparedJob:
        """The refine job of ``request`` whose text normalized to
        ``normalized`` (not empty); ``seed`` is the segment's. Raises
        RequestError when the refine prompt leaves no room in a slot."""
        assert request.refine is not None
        refine = request.refine
        validate_params(refine.params)
        prompt = f"[Sbreak]{normalized}[Pbreak]{refine.prompt}"
        ids = tuple(self.tokenizer(prompt, add_special_tokens=False)["input_ids"])
        max_new = min(refine.params.max_new_tokens, self.max_len - len(ids) - 1)
        if max_new < 1:
            raise RequestError(f"segment too long to refine: {len(ids)} prompt tokens")
        audio = dataclasses.replace(request, text=normalized, normalized=True, refine=None,
                                    params=dataclasses.replace(request.params, seed=seed))
        own = refine.params.seed
        work = RefineWork(ids, refine.params, refine_seed(seed) if own is None else own, max_new, audio)
        # The refined text is the input plus the breaks and fillers it gains.
        expected = min(max_new, len(ids) + len(ids) // 4 + 4)
        return PreparedJob(prompt_len=len(ids), work=work, refine_tokens=expected)

    def text_of(self, tokens: list[int]) -> str:
        """The refined text of a pass's tokens, as upstream makes it."""
        kept = [t for t in tokens if t < self.break_0]
        text = self.tokenizer.batch_decode([kept], skip_special_tokens=False)[0]
        for tag in _STRIPPED:
            text = text.replace(tag, "")
        return text.strip()

    # --- execute ----------------------------------------------------------------------

    def involved(self, plan: StepPlan) -> bool:
        """Does ``plan`` touch a refine pass?"""
        return bool(self.passes) or any(isinstance(w, RefineWork) for w in plan.work)

    def reset(self) -> None:
        self.passes.clear()

    def execute(self, plan: StepPlan) -> StepOutput:
        """The runner's ``execute`` for a plan with refine rows."""
        start = time.perf_counter()
        for job_id in plan.release:
            self.passes.pop(job_id, None)
        new, audio_pre = [], []
        for job_id, slot, work in zip(plan.prefill, plan.prefill_slots, plan.work):
            if isinstance(work, RefineWork):
                new.append(_Pass(job_id, work, slot))
            else:
                audio_pre.append((job_id, slot, work))
        held = [self.passes.get(j) for j in plan.decode]
        running = [p for p in held if p is not None and not p.done]
        audio_dec = [(j, s) for j, s, p in zip(plan.decode, plan.decode_slots, held) if p is None]
        out = StepOutput()
        failed = self._text_step(new, running, out)
        if out.oom:
            out.seconds = time.perf_counter() - start
            return out
        rest = dataclasses.replace(
            plan, prefill=tuple(j for j, _, _ in audio_pre), decode=tuple(j for j, _ in audio_dec),
            slots=tuple(s for _, s, _ in audio_pre) + tuple(s for _, s in audio_dec),
            work=tuple(w for _, _, w in audio_pre))
        if not rest.is_empty:
            done = self.execute_audio(rest)
            if done.oom:  # nothing advanced: undo this step's text tokens too
                self._undo(new, running)
                done.seconds = time.perf_counter() - start
                return done
            _merge(out, done)
        out.refining = {p.id: len(p.tokens) for p in new + running if p.id not in failed}
        ready = [p for p in self.passes.values() if p.done and p.id in set(plan.jobs)]
        if ready:
            self._begin_audio(ready, plan, out)
        out.seconds = time.perf_counter() - start
        return out

    def _text_step(self, new: list[_Pass], running: list[_Pass], out: StepOutput) -> set[JobId]:
        """One token for every pass of ``new`` (prefilled) and ``running``;
        a failure fails those passes (out of memory: ``out.oom``, nothing
        kept). Returns the ids failed."""
        if not new and not running:
            return set()
        try:
            tokens = self._draw(new, running)
        except Exception as exc:  # noqa: BLE001 - fail_step logs it, or raises a lost device
            ids = [p.id for p in new + running]
            fail_step(exc, out, ids, "refine step")
            if out.failed.keys() & set(ids):
                for job_id in ids:
                    self.passes.pop(job_id, None)
                return set(out.failed)
            return set()  # out of memory: nothing kept, nothing failed
        for p, token in zip(new + running, tokens):
            self.passes[p.id] = p
            if token == self.eos:
                p.done = True
                continue
            p.tokens.append(token)
            p.done = len(p.tokens) >= p.work.max_new
        return set()

    def _undo(self, new: list[_Pass], running: list[_Pass]) -> None:
        for p in new:
            self.passes.pop(p.id, None)
        for p in running:
            if not p.done or len(p.tokens) >= p.work.max_new:
                p.tokens.pop()
            p.done = False

    @torch.no_grad()
    def _draw(self, new: list[_Pass], running: list[_Pass]) -> list[int]:
        hidden = []
        if new:
            hidden.append(self._prefill(new))
        if running:
            hidden.append(self._decode(running))
        passes = new + running
        device, vocab = self.model.device, self.head.shape[0]
        h = hidden[0] if len(hidden) == 1 else torch.cat(hidden)
        logits = (h @ self.head.T).unsqueeze(1)  # [B, 1, V] fp32
        history = torch.tensor([[vocab] * max(PENALTY_WINDOW - len(p.tokens), 0)
                                + p.tokens[-PENALTY_WINDOW:] for p in passes], device=device)
        steps = torch.tensor([len(p.tokens) for p in passes], device=device)
        params = RowParams.build([p.work.params for p in passes], [p.work.seed for p in passes],
                                 vocab, device)
        picked = draw(process_logits(logits, history.unsqueeze(1), steps, params, self.eos),
                      params.seed, steps)
        return picked[:, 0].cpu().tolist()

    def _prefill(self, passes: list[_Pass]) -> torch.Tensor:
        """Prompts into their slots: the last prompt position's fp32 hidden [P, D]."""
        model, n = self.model, len(passes)
        length = max(len(p.work.ids) for p in passes)
        x = torch.zeros(n, length, model.shape.hidden, dtype=model.dtype, device=model.device)
        for i, p in enumerate(passes):
            ids = torch.tensor(p.work.ids, device=model.device)
            x[i, :len(ids)] = model.emb_text.index_select(0, ids)
        slots = torch.tensor([p.slot for p in passes], device=model.device)
        hidden = model.prefill(x, slots, self.cache, [len(p.work.ids) for p in passes])
        last = torch.tensor([len(p.work.ids) - 1 for p in passes], device=model.device)
        return hidden[torch.arange(n, device=model.device), last]

    def _decode(self, passes: list[_Pass]) -> torch.Tensor:
        """The previous token of each pass at its next position: fp32 hidden [B, D]."""
        model, device = self.model, self.model.device
        prev = torch.tensor([p.tokens[-1] for p in passes], device=device)
        positions = [len(p.work.ids) + len(p.tokens) - 1 for p in passes]
        slot_list = [p.slot for p in passes]
        run = slot_list == list(range(slot_list[0], slot_list[0] + len(passes)))
        return model.decode(model.emb_text.index_select(0, prev), torch.tensor(slot_list, device=device),
                            torch.tensor(positions, device=device), self.cache, max(positions) + 1,
                            slot_list[0] if run else None)

    # --- into audio -------------------------------------------------------------------

    def _begin_audio(self, ready: list[_Pass], plan: StepPlan, out: StepOutput) -> None:
        """Prefill the audio prompts of passes that ended into their slots."""
        begun: list[tuple[_Pass, PreparedJob, str]] = []
        for p in ready:
            text = self.text_of(p.tokens) or p.work.audio.text
            try:
                prepared = self.prepare_audio(dataclasses.replace(p.work.audio, text=text))
                if prepared.empty:  # nothing left of the refined text to read
                    text = p.work.audio.text
                    prepared = self.prepare_audio(p.work.audio)
            except RequestError as exc:
                out.failed[p.id] = f"refined segment unusable: {exc}"
                self.passes.pop(p.id)
                continue
            begun.append((p, prepared, text))
        if not begun:
            return
        rows, bucket = self._prefill_shape(len(begun), max(pj.prompt_len for _, pj, _ in begun))
        audio = self.execute_audio(StepPlan(
            plan.lane, prefill=tuple(p.id for p, _, _ in begun), slots=tuple(p.slot for p, _, _ in begun),
            work=tuple(pj.work for _, pj, _ in begun), prefill_batch=rows, prompt_bucket=bucket))
        if audio.oom:
            log.warning("out of device memory starting %d refined segments: next step", len(begun))
            return  # the passes stay done: the next step tries again
        _merge(out, audio)
        for p, prepared, text in begun:
            self.passes.pop(p.id)
            if self.record:
                self.finished_tokens[p.id] = list(p.tokens)
            if p.id not in audio.failed:
                out.refined[p.id] = Refined(prepared.prompt_len, text)
                log.debug("job %s refined in %d tokens: %r", p.id, len(p.tokens), text)


    def _prefill_shape(self, n: int, length: int) -> tuple[int, int]:
        """(rows, prompt bucket) for ``n`` prompts up to ``length`` tokens: the
        offered shapes where they cover it (a captured graph may run it)."""
        batch_sizes, buckets = self.shapes
        rows = next((b for b in batch_sizes if b >= n), n)
        return rows, next((k for k in buckets if k >= length), length)


def _merge(out: StepOutput, more: StepOutput) -> None:
    out.tokens.update(more.tokens)
    out.finished = out.finished + more.finished
    out.failed.update(more.failed)
    out.audio.update(more.audio)
