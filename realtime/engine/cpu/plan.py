"""Which GEMM backend multiplies each weight matrix, chosen by measurement.

``prepare_matrices(weights, policy)`` turns a model's linear weights [N, K] into
``cpu.gemm.Matrix`` objects. A measured mode times a family's forms on the
model's own matrices, for each matrix shape and each row class (the decode
batch sizes, plus a prefill class of ``prefill_rows`` rows), and keeps the
fastest per (shape, row class): ``auto`` among fp32's (``cpu.gemm``), ``int8``
among the int8 forms this CPU runs (``cpu.int8``: fbgemm; oneDNN's AMX/VNNI
kernels; weight-only), ``bf16`` among the bf16 ones (``cpu.bf16``, where the
CPU has AMX or AVX-512-BF16). A forced mode (``mm``, ``mkl``, ``onednn``)
uses that backend for every decode row class.

How it measures, and why:
- Per shape, each candidate runs a pass over distinct matrices of that shape
  worth about an L3 cache (``WORKING_SET``, 32 MiB): a decode step streams all
  weights from memory, and one matrix timed alone would sit in L2/L3.
  Prefill rows are compute-bound: one matrix suffices.
- Candidates alternate within each round and the fastest of ``ROUNDS`` rounds
  is kept: other threads and processes only ever add time, so the minimum is
  the estimate least disturbed by them. A warm-up pass comes first (oneDNN
  builds a primitive per new shape).
- The whole measurement has a time budget (``policy.budget_s``); classes left
  unmeasured when it runs out take ``FALLBACK_ORDER``'s first available backend.
- A backend whose packing fails is dropped for that shape (logged).
- Shapes whose matrices total under ``min_measured_bytes`` (tiny test models)
  are not measured: they use the family's plain form (``FAMILIES``).
- Results are cached for the process, keyed by shape, row classes, threads
  and candidates: a second runner (tests, benches) reuses them.

A row count between classes uses the next class up (3 rows: the 4-row choice).
``mkl`` packs once for the largest batch size and pads fewer rows up to it;
``onednn`` packs once with that size as its hint. Forms nobody chose are dropped.

Thread: build time (the model thread); the cache is process-wide.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from realtime.engine.api import CPU_GEMMS
from realtime.engine.cpu import bf16 as cpu_bf16
from realtime.engine.cpu import int8 as cpu_int8
from realtime.engine.cpu.form_state import FormSource
from realtime.engine.cpu.forms import FAMILIES, PACKERS, candidates, family_of
from realtime.engine.cpu.gemm import Matrix, Packed

__all__ = ["FAMILIES", "PACKERS", "candidates", "family_of"]  # re-exported: cpu.forms

log = logging.getLogger(__name__)

WORKING_SET = 32 * 2**20  # bytes of distinct weights per timed pass (about an L3: streamed)
ROUNDS = 3
FALLBACK_ORDER = ("onednn", "mm")  # measured fastest on AMD and Intel alike, else plain
PREFILL = 0  # the row-class key of prefill (any row count above the batch sizes)
MARGIN = 0.10  # a second packed copy must be this much faster to be kept


@dataclass(frozen=True)
class GemmPolicy:
    """How to prepare a model's matrices.

    ``mode``: ``auto`` | ``mm`` | ``mkl`` | ``onednn`` | ``int8``.
    ``batch_sizes``: the decode row classes; ``prefill_rows``: the row count
    prefill is timed at; ``budget_s``: the bound on measuring, all shapes;
    ``min_measured_bytes``: shapes whose matrices total less use ``mm`` unmeasured;
    ``step_budget_s``, ``cache_dir``: the whole-step trial's (``cpu.plan_trial``).
    """

    mode: str = "auto"
    batch_sizes: tuple[int, ...] = (1, 2, 4, 8)
    prefill_rows: int = 64
    budget_s: float = 3.0
    min_measured_bytes: int = 4 * 2**20
    step_budget_s: float = 20.0  # the whole-step trial's bound (``cpu.plan_trial``)
    cache_dir: str | None = None  # where the settled plan is kept per machine; None: nowhere
    defer_packing: bool = False  # a cached plan's packed forms: made later (``cpu.plan_trial``)

    @property
    def pack_rows(self) -> int:
        return max(self.batch_sizes)


@dataclass
class ShapeChoice:
    """The backend per row class of one shape (``PREFILL`` for prefill), and
    the measured seconds per matrix per (row class, backend)."""

    backends: dict[int, str]
    seconds: dict[tuple[int, str], float] = field(default_factory=dict)
    dropped: dict[str, str] = field(default_factory=dict)  # backend -> why
    complete: bool = False  # every row class measured within the budget


_CACHE: dict[tuple, ShapeChoice] = {}


def policy_for(options) -> GemmPolicy:
    """The policy ``RuntimeOptions`` ask for: ``int8`` or ``bf16`` precision
    (bf16's matrices on a CPU: ``cpu.bf16``), else ``cpu_gemm``; row classes
    are the batch sizes that fit the slots; the settled plan is kept in
    ``options.cache_dir`` (None: nowhere), and a cached plan's packing is
    left to the runner's warm-up (``ModelRunner.warmup``, warm_start.py)."""
    sizes = tuple(b for b in options.batch_sizes if b <= options.max_slots) or (1,)
    mode = options.cpu_gemm
    if options.precision == "int8" or (options.precision == "bf16" and cpu_bf16.available() is None):
        mode = options.precision  # bf16 where this CPU lacks it: fp32 (build logs why)
    return GemmPolicy(mode=mode, batch_sizes=sizes, cache_dir=options.cache_dir,
                      defer_packing=True)


def pick(seconds: dict[tuple[int, str], float], classes: Sequence[int],
         any_rows: Callable[[str], bool], fallback: str = "mm",
         margin: float = MARGIN) -> dict[int, str]:
    """The backend per row class from measured ``seconds`` (pure: tests feed
    fake timings). The prefill class only considers backends that run any row
    count; a class with no measurement takes ``fallback``.

    Each extra form costs a copy of the weights, so the backend that wins the
    most classes (ties: ``FALLBACK_ORDER``) also takes every class where it is
    within ``margin`` (a fraction) of the fastest; others keep their winner.
    """
    fastest: dict[int, tuple[float, str]] = {}
    for rows in classes:
        timed = [(s, b) for (r, b), s in seconds.items()
                 if r == rows and (rows != PREFILL or any_rows(b))]
        if timed:
            fastest[rows] = min(timed)
    wins: dict[str, int] = {}
    for _, b in fastest.values():
        wins[b] = wins.get(b, 0) + 1
    rank = {b: i for i, b in enumerate(FALLBACK_ORDER)}
    main = min(wins, key=lambda b: (-wins[b], rank.get(b, len(rank)), b)) if wins else fallback
    chosen = {}
    for rows in classes:
        if rows not in fastest:
            chosen[rows] = fallback
            continue
        best, winner = fastest[rows]
        own = seconds.get((rows, main))
        usable = rows != PREFILL or any_rows(main)
        chosen[rows] = main if usable and own is not None and own <= best * (1 + margin) else winner
    return chosen


def _any_rows(backend: str) -> bool:
    return PACKERS[backend].any_rows


def _row_classes(policy: GemmPolicy) -> tuple[int, ...]:
    return (*sorted(set(policy.batch_sizes)), PREFILL)


def _fallback(names: Sequence[str]) -> str:
    return next((b for b in FALLBACK_ORDER if b in names), names[0] if names else "mm")


class _Packs:
    """Packed forms of one shape's weights, made on demand and shared between
    measuring and building (no matrix is packed twice for one backend); taken
    from ``source`` (forms kept by an earlier start) where it has them."""

    def __init__(self, weights: list[torch.Tensor], pack_rows: int, plain: str = "mm",
                 source: FormSource | None = None):
        self.weights, self.pack_rows, self.plain, self.source = weights, pack_rows, plain, source
        self.forms: dict[tuple[int, str], Packed] = {}

    def get(self, i: int, backend: str) -> Packed:
        key = (i, backend)
        if key not in self.forms:
            w, n = self.weights[i], len(self.weights)
            kept = self.source and self.source.cached(tuple(w.shape), n, i, backend, self.pack_rows)
            self.forms[key] = kept or PACKERS[backend](w, self.pack_rows)
        return self.forms[key]

    def get_or_mm(self, i: int, backend: str) -> Packed:
        """As ``get``; a backend that fails on this matrix gives the family's
        plain form (``mm`` for fp32) instead."""
        try:
            return self.get(i, backend)
        except (RuntimeError, ValueError) as exc:
            log.warning("gemm backend %s failed to pack matrix %d %s (%s); using %s",
                        backend, i, tuple(self.weights[i].shape), exc, self.plain)
            return self.get(i, self.plain)

    def drop_unused(self, i: int, used: set[str]) -> None:
        for key in [key for key in self.forms if key[0] == i and key[1] not in used]:
            del self.forms[key]


def _time_pass(forms: list[Packed], x: torch.Tensor) -> float:
    start = time.perf_counter()
    for form in forms:
        form(x)
    return (time.perf_counter() - start) / len(forms)


def _measure(packs: _Packs, names: list[str], classes: Sequence[int], policy: GemmPolicy,
             deadline: float, choice: ShapeChoice) -> None:
    """Fill ``choice.seconds`` for each row class and usable backend; set
    ``choice.complete`` unless the deadline cut it short."""
    n, k = packs.weights[0].shape
    sample = min(len(packs.weights), max(1, math.ceil(WORKING_SET / (n * k * 4))))
    gen = torch.Generator().manual_seed(0)
    for rows in classes:
        m = policy.prefill_rows if rows == PREFILL else rows
        usable = [b for b in names if rows != PREFILL or _any_rows(b)]
        count = 1 if rows == PREFILL else sample
        x = torch.randn(m, k, generator=gen)
        forms = {b: [packs.get(i, b) for i in range(count)] for b in usable}
        for b in usable:  # warm-up: oneDNN builds a primitive per row count
            _time_pass(forms[b][:1], x)
        runs: dict[str, list[float]] = {b: [] for b in usable}
        for r in range(ROUNDS):
            for b in usable[r % len(usable):] + usable[:r % len(usable)]:
                runs[b].append(_time_pass(forms[b], x))
        for b in usable:
            choice.seconds[(rows, b)] = min(runs[b])
        if time.perf_counter() > deadline and rows != classes[-1]:
            log.warning("gemm measurement ran past its %.1f s budget; shape %s unfinished",
                        policy.budget_s, (n, k))
            return
    choice.complete = True


def _usable(packs: _Packs, names: Sequence[str], choice: ShapeChoice) -> list[str]:
    """The backends that pack this shape; others are dropped with the reason."""
    usable = []
    for b in names:
        try:
            packs.get(0, b)
        except (RuntimeError, ValueError) as exc:
            choice.dropped[b] = f"{type(exc).__name__}: {exc}"
            log.warning("gemm backend %s cannot pack %s matrices (%s); not used",
                        b, tuple(packs.weights[0].shape), exc)
            continue
        usable.append(b)
    return usable


def _choose(packs: _Packs, policy: GemmPolicy, names: tuple[str, ...],
            deadline: float) -> ShapeChoice:
    n, k = packs.weights[0].shape
    classes = _row_classes(policy)
    key = ((n, k), classes, policy.prefill_rows, torch.get_num_threads(), names)
    measured = policy.mode in FAMILIES
    if measured and key in _CACHE:
        # A copy: a whole-step trial rewrites its model's choices, which must
        # not reach the next model that hits the cache (another precision's heads).
        return copy.deepcopy(_CACHE[key])
    choice = ShapeChoice(backends={})
    if measured and sum(w.numel() * 4 for w in packs.weights) < policy.min_measured_bytes:
        # Matrices this small stay in cache and cost microseconds whatever
        # multiplies them (tiny test models): not worth measuring or packing.
        choice.backends = dict.fromkeys(classes, packs.plain)
        return choice
    if measured:
        usable = _usable(packs, names, choice)
        if time.perf_counter() < deadline and len(usable) > 1:
            _measure(packs, usable, classes, policy, deadline, choice)
        choice.backends = pick(choice.seconds, classes, _any_rows, _fallback(usable))
        if choice.complete:
            _CACHE[key] = copy.deepcopy(choice)
        return choice
    usable = _usable(packs, (policy.mode,), choice) or [packs.plain]
    forced = usable[0]
    choice.backends = {r: forced if r != PREFILL or _any_rows(forced) else "mm" for r in classes}
    return choice


def _build(packs: _Packs, choice: ShapeChoice, policy: GemmPolicy, keep: bool = False) -> list[Matrix]:
    """One Matrix per weight with the chosen forms; a form that fails to pack
    (memory, a later matrix) falls back to ``mm`` for that matrix. ``keep``:
    leave every packed form in ``packs`` (a whole-step trial uses them)."""
    classes = sorted(r for r in choice.backends if r != PREFILL)
    out = []
    for i, weight in enumerate(packs.weights):
        by_rows = {m: packs.get_or_mm(i, choice.backends[next(c for c in classes if c >= m)])
                   for m in range(1, policy.pack_rows + 1)}
        large = packs.get_or_mm(i, choice.backends[PREFILL])
        matrix = Matrix((weight.shape[1], weight.shape[0]), by_rows, large)
        out.append(matrix)
        if not keep:  # drop the packs measurement made that this matrix does not use
            packs.drop_unused(i, {f.backend for f in matrix.forms})
    return out


@dataclass
class Prepared:
    """``prepare``'s result: the matrices (in the weights' order), the choice
    per shape, the backends that could run here and, with ``keep``, each
    shape's weight indices and packed forms (a whole-step trial's material)."""

    matrices: list[Matrix]
    choices: dict[tuple[int, int], ShapeChoice]
    names: tuple[str, ...] = ()
    groups: dict[tuple[int, int], tuple[list[int], _Packs]] = field(default_factory=dict)


def prepare_matrices(weights: Sequence[torch.Tensor], policy: GemmPolicy, device: torch.device,
                     dtype: torch.dtype) -> tuple[list[Matrix], dict[tuple[int, int], ShapeChoice]]:
    """``weights`` [N, K] (on ``device``, ``dtype``) -> Matrix objects in the same
    order, and the choice made per shape (for the log table and the bench).

    Raises ValueError for an unknown mode; ``int8`` off CPU is refused here too.
    """
    prepared = prepare(weights, policy, device, dtype)
    return prepared.matrices, prepared.choices


def prepare(weights: Sequence[torch.Tensor], policy: GemmPolicy, device: torch.device,
            dtype: torch.dtype, keep: bool = False,
            fixed: dict[tuple[int, int], dict[int, str]] | None = None,
            forms: FormSource | None = None) -> Prepared:
    """As ``prepare_matrices``. ``keep``: hold every packed form for a trial;
    ``fixed``: the backend per (shape, row class) decided before (a cached
    plan): the shapes it names are not measured; ``forms``: kept forms."""
    if policy.mode not in (*FAMILIES, *PACKERS):
        raise ValueError(f"unknown cpu gemm mode {policy.mode!r} ({', '.join(CPU_GEMMS)})")
    family = family_of(policy.mode)
    if family == "int8" and device.type != "cpu":
        raise ValueError("int8 linears run on the CPU only")
    names = candidates(device, dtype, family)
    if family == "bf16" and not names:  # GPU bf16 is the dtype itself; a CPU without native bf16
        if device.type == "cpu":
            log.warning("bf16 matrices: %s; they stay fp32", cpu_bf16.available() or "no bf16 form")
        policy, family = dataclasses.replace(policy, mode="auto"), "auto"
        names = candidates(device, dtype)
    if family == "int8" and not names:
        raise ValueError(f"int8 linears are unavailable: {cpu_int8.available()}")
    plain = FAMILIES[family]
    if policy.mode not in FAMILIES and policy.mode not in names:
        if policy.mode != "mm":
            log.warning("cpu gemm %s is not available on %s %s; using %s", policy.mode, device,
                        dtype, plain)
        policy = dataclasses.replace(policy, mode=plain)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, w in enumerate(weights):
        groups.setdefault((int(w.shape[0]), int(w.shape[1])), []).append(i)
    if names == (plain,) or (policy.mode == plain and plain not in FAMILIES):
        # One form for every row count; through ``_Packs``: int8's plain form may be kept.
        one = {i: _Packs([weights[k] for k in idx], policy.pack_rows, plain, forms).get(j, plain)
               for idx in groups.values() for j, i in enumerate(idx)}
        return Prepared([Matrix((w.shape[1], w.shape[0]), {}, one[i]) for i, w in enumerate(weights)],
                        {}, names)
    deadline = time.perf_counter() + policy.budget_s
    out: list[Matrix | None] = [None] * len(weights)
    prepared = Prepared([], {}, names)
    for shape, idx in groups.items():
        packs = _Packs([weights[i] for i in idx], policy.pack_rows, plain, forms)
        if fixed is not None and shape in fixed:
            choice = ShapeChoice(backends=dict(fixed[shape]), complete=True)
        else:
            choice = _choose(packs, policy, names, deadline)
        prepared.choices[shape] = choice
        for i, matrix in zip(idx, _build(packs, choice, policy, keep)):
            out[i] = matrix
        if keep:
            prepared.groups[shape] = (idx, packs)
    prepared.matrices = [m for m in out if m is not None]
    assert len(prepared.matrices) == len(weights), "a matrix left without a form"
    return prepared


def table(choices: dict[tuple[int, int], ShapeChoice], policy: GemmPolicy) -> str:
    """The measured times as a small table: one line per (shape, row class),
    ms per matrix per backend, ``*`` on the chosen one."""
    names = sorted({b for c in choices.values() for (_, b) in c.seconds}, key=list(PACKERS).index)
    lines = [f"{'matrix (in x out)':<18}{'rows':>14}" + "".join(f"{b:>12}" for b in names)]
    for (n, k), c in choices.items():
        for rows, chosen in c.backends.items():
            label = f"{policy.prefill_rows} (prefill)" if rows == PREFILL else str(rows)
            cells = []
            for b in names:
                s = c.seconds.get((rows, b))
                cell = "-" if s is None else f"{s * 1e3:.3f}"
                cells.append(f"{cell + ('*' if b == chosen else ' '):>12}")
            lines.append(f"{f'{k}x{n}':<18}{label:>14}" + "".join(cells))
    return "\n".join(lines)


def summary(matrices: Sequence[Matrix], rows: int) -> dict[str, int]:
    """How many matrices run on each backend at ``rows`` rows."""
    counts: dict[str, int] = {}
    for m in matrices:
        b = m.backend_for(rows)
        counts[b] = counts.get(b, 0) + 1
    return counts
