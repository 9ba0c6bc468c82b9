"""The GEMM plan settled by whole steps, and remembered per machine.

``cpu.plan`` measures each matrix shape alone and proposes a backend per
(shape, row class). ``begin`` prepares the model's matrices from that proposal
(or from the plan cached for this machine, measuring nothing) and keeps every
candidate's packed form; once the model is built, ``settle`` runs whole
decode steps at each batch size (and a prefill) with the proposal ("mixed")
and with each single backend, alternating rounds, and keeps the proposal
only where it beats the best single backend by more than the noise
(``cpu.step_verdict``); the forms nobody uses are then dropped, the decision
is logged and stored (``cpu.plan_cache``), so the next start on this machine
pays for none of it.

Prefill keeps a form the decode classes already hold unless the one its
verdict chose is faster by more than ``cpu.plan.MARGIN`` (or the noise):
each further form is another copy of the weights, packed at every start
(int8 on the Xeon with AMX: ``int8_onednn`` for prefill was 3.9% faster than
``int8_vnni``, within a 45% noise, and its prepack ~6 s of each warm start).

Single backends whose per-shape estimate of a step (the shapes' isolated
times summed) is more than ``SINGLE_SLACK`` times the best estimate are not
tried: the isolated times misjudge a step by 10-20%, not by half, and each
tried backend holds a full copy of the weights while the trial runs.

With ``policy.defer_packing`` a cached plan is built with plain ``mm``
forms only (the transposed matrices: what the first requests run on) and
``Begun.deferred`` holds one piece per matrix that packs the plan's other
forms (MKL's, oneDNN's: opaque, so no cache can hold them) and puts them in
place; the runner runs them in idle time after ``/readyz`` (warm_start.py),
or all at once before a full warm-up. Until a matrix's piece has run, its
row classes multiply with ``mm``: results within fp32 rounding of the packed
forms' (the backends differ in accumulation order only, ``cpu.gemm``).

Thread: build time and the deferred pieces: the model thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

import torch

from realtime.engine.cpu import plan_cache
from realtime.engine.cpu.form_state import FormSource
from realtime.engine.cpu.forms import FAMILIES, PACKERS, candidates
from realtime.engine.cpu.gemm import Matrix, PlainMatrix
from realtime.engine.cpu.plan import MARGIN, PREFILL, GemmPolicy, Prepared, prepare
from realtime.engine.cpu.step_verdict import MIXED, StepVerdict, decide, prefer_held, time_plans
from realtime.engine.model.prepared_cache import CacheKey

log = logging.getLogger(__name__)

SINGLE_SLACK = 1.5
ROUNDS = 5  # whole-step rounds per row class (medians of these)
STEPS = 2  # timed steps per round (after one warm step)
PREFILL_ROUNDS = 3
KV_LEN = 128  # the attention length the trial's decode steps read

Shape = tuple[int, int]


@dataclass
class Begun:
    """``begin``'s result: what to build the model from, and what ``settle`` needs."""

    prepared: Prepared
    policy: GemmPolicy
    key: CacheKey | None = None
    cached: bool = False  # the plan came from the machine's cache: nothing to try
    deferred: list[Callable[[], None]] = field(default_factory=list)  # packing left for later

    @property
    def trial(self) -> bool:
        return bool(self.prepared.groups) and not self.cached


def begin(weights: Sequence[torch.Tensor], policy: GemmPolicy, device: torch.device,
          dtype: torch.dtype, forms: FormSource | None = None) -> Begun:
    """Prepare ``weights`` [N, K] as ``cpu.plan.prepare`` does, from the cached
    plan of this machine if there is one (and the forms ``forms`` kept); in a
    measured mode (``auto``, ``int8``, ``bf16``) on a CPU where several of its
    forms run, every candidate's form is kept for ``settle``."""
    names = candidates(device, dtype, policy.mode) if policy.mode in FAMILIES else ()
    trial = device.type == "cpu" and len(names) > 1
    key = plan_cache.key(weights, policy, device, dtype, names) if trial else None
    fixed = plan_cache.load(policy.cache_dir, key) if trial else None
    deferred: list[Callable[[], None]] = []
    if fixed is not None and policy.defer_packing and policy.mode == "auto":  # fp32's mm first
        plain = {shape: dict.fromkeys(rows, "mm") for shape, rows in fixed.items()}
        prepared = prepare(weights, policy, device, dtype, fixed=plain, forms=forms)
        for shape, rows in fixed.items():
            if shape in prepared.choices:
                prepared.choices[shape].backends = dict(rows)  # the plan, as the log shows it
        deferred = [partial(_pack_later, m, fixed[(m.shape[1], m.shape[0])], policy)
                    for m in prepared.matrices
                    if any(b != "mm" for b in fixed.get((m.shape[1], m.shape[0]), {}).values())]
    else:
        prepared = prepare(weights, policy, device, dtype, keep=trial and fixed is None, fixed=fixed,
                           forms=forms)
    if fixed is not None:
        log.info("cpu gemm plan from this machine's cache (%s): no measurement%s",
                 plan_cache.describe_key(key) if key else "",
                 f"; {len(deferred)} matrices packed in idle time" if deferred else "")
    if trial and fixed is None and not any(c.seconds for c in prepared.choices.values()):
        prepared.groups.clear()  # nothing measured (tiny shapes): nothing to try
    return Begun(prepared, policy, key, cached=fixed is not None, deferred=deferred)


def _pack_later(matrix: Matrix, plan: dict[int, str], policy: GemmPolicy) -> None:
    """Pack ``matrix`` (built with ``mm`` only) for the backends ``plan``
    names per row class and serve those classes with them; a form that fails
    to pack leaves its classes on ``mm`` (logged)."""
    plain = next(f for f in matrix.forms if isinstance(f, PlainMatrix))
    weight = plain.w_t.t()  # [N, K], as the packers take it
    for backend in sorted({b for b in plan.values() if b != "mm"}):
        try:
            form = PACKERS[backend](weight, policy.pack_rows)
        except (RuntimeError, ValueError) as exc:
            log.warning("gemm backend %s failed to pack a %s matrix later (%s); using mm",
                        backend, tuple(weight.shape), exc)
            continue
        for rows, b in plan.items():
            if b == backend:
                matrix.set_form(_class_rows(policy, rows), form)


def settle(begun: Begun, step_at: Callable[[int], Callable[[], None]]) -> list[str]:
    """Decide each row class by whole steps (``step_at(rows)`` gives one
    step of that many rows, ``PREFILL`` a prefill), put the winners in place,
    drop the other forms and store the plan (one guessed because a budget
    ran out marked as such: ``cpu.plan_cache``). Returns the log lines of the
    verdicts (empty when there was nothing to try)."""
    if not begun.trial:
        return []
    prepared, policy = begun.prepared, begun.policy
    started = time.perf_counter()
    deadline = started + policy.step_budget_s
    lines = []
    complete = True  # every class judged by whole steps: only then is the plan kept
    classes = (*sorted(set(policy.batch_sizes)), PREFILL)
    for rows in classes:
        plans = _plans(prepared, rows)  # the best estimated single backend first
        seconds: dict[str, list[float]] = {}
        if len(plans) > 1 and time.perf_counter() < deadline:
            appliers = {name: (lambda m=mapping, r=rows: _apply(prepared, r, m, policy))
                        for name, mapping in plans.items()}
            rounds = PREFILL_ROUNDS if rows == PREFILL else ROUNDS
            seconds = time_plans(appliers, step_at(rows), rounds, 1 if rows == PREFILL else STEPS,
                                 deadline)
            verdict = decide(rows, seconds)
        else:
            complete = complete and len(plans) == 1
            first = next(iter(plans))
            verdict = StepVerdict(rows, first, {}, first)
        name, slower = verdict.chosen, 0.0
        if rows == PREFILL:  # a further copy of the weights only for a clear gain
            name, slower = prefer_held(seconds, name, _held(prepared, classes[:-1]), MARGIN)
        chosen = plans[name]
        _apply(prepared, rows, chosen, policy)
        for shape, backend in chosen.items():
            prepared.choices[shape].backends[rows] = backend
        label = f"{policy.prefill_rows} rows (prefill)" if rows == PREFILL else f"batch {rows}"
        lines.append(verdict.describe(label) if verdict.medians_ms else
                     f"{label}: {verdict.chosen} (" + (f"the only candidate within {SINGLE_SLACK}x of the "
                     "best per-shape estimate" if len(plans) == 1
                     else f"the trial's {policy.step_budget_s:.0f} s budget was spent: "
                     "the best single backend by its per-shape estimate") + ")")
        if name != verdict.chosen:
            lines[-1] += (f"; then {name}: the decode classes hold it and it is {slower:.1%} slower, "
                          f"within {MARGIN:.0%} (another form is another copy, packed at every start)")
    _drop_unused(prepared)
    log.info("cpu gemm plan settled by whole steps in %.1f s:\n  %s",
             time.perf_counter() - started, "\n  ".join(lines))
    guessed = not (complete and all(c.complete for c in prepared.choices.values()))
    if guessed:  # kept marked: measured again only by a start with time to spare
        log.warning("cpu gemm plan: measurement cut short by its budget (a loaded machine?); "
                    "cached as a guess (cpu.plan_cache)")
    plan_cache.store(policy.cache_dir, begun.key, {s: c.backends for s, c in prepared.choices.items()},
                     lines, guessed=guessed)
    return lines


def _plans(prepared: Prepared, rows: int) -> dict[str, dict[Shape, str]]:
    """The candidates of row class ``rows``, best estimate first: each single
    backend that packed every shape (and, for prefill, runs any row count)
    within ``SINGLE_SLACK`` of the best per-shape estimate (over the shapes
    every one of them was timed on), and the per-shape proposal when it
    differs from all of them."""
    # Only the shapes the trial holds forms of (a model may add others to
    # ``choices`` later, its heads prepared apart: not the trial's to change).
    choices = {shape: c for shape, c in prepared.choices.items() if shape in prepared.groups}
    proposal = {shape: c.backends[rows] for shape, c in choices.items()}
    singles = [b for b in prepared.names if (rows != PREFILL or PACKERS[b].any_rows)
               and not any(b in c.dropped for c in choices.values())]
    estimates = dict.fromkeys(singles, 0.0)
    for shape, c in choices.items():
        timed = {b: c.seconds.get((rows, b)) for b in singles}
        if all(s is not None for s in timed.values()):
            for b, s in timed.items():
                estimates[b] += s * len(prepared.groups[shape][0])  # type: ignore[operator]
    best = min(estimates.values(), default=0.0)
    plans = {b: dict.fromkeys(choices, b) for b, est in sorted(estimates.items(), key=lambda kv: kv[1])
             if est <= best * SINGLE_SLACK}
    if proposal not in plans.values():
        plans[MIXED] = proposal
    return plans


def _held(prepared: Prepared, classes: Sequence[int]) -> list[str]:
    """The backends every shape of the trial runs some of ``classes`` on."""
    held = [{c.backends[r] for r in classes} for shape, c in prepared.choices.items()
            if shape in prepared.groups]
    return sorted(set.intersection(*held)) if held else []


def _class_rows(policy: GemmPolicy, rows: int) -> range | None:
    """The row counts row class ``rows`` serves (None: prefill, the larger ones)."""
    if rows == PREFILL:
        return None
    below = [c for c in policy.batch_sizes if c < rows]
    return range(max(below, default=0) + 1, rows + 1)


def _apply(prepared: Prepared, rows: int, mapping: dict[Shape, str], policy: GemmPolicy) -> None:
    served = _class_rows(policy, rows)
    for shape, (idx, packs) in prepared.groups.items():
        for j, i in enumerate(idx):
            prepared.matrices[i].set_form(served, packs.get_or_mm(j, mapping[shape]))


def _drop_unused(prepared: Prepared) -> None:
    for idx, packs in prepared.groups.values():
        for j, i in enumerate(idx):
            packs.drop_unused(j, {f.backend for f in prepared.matrices[i].forms})
    prepared.groups.clear()
