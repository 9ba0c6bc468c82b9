"""The settled GEMM plan of this machine, an entry of the prepared cache.

A plan is valid for one machine and one model build (the decoder's, settled
by whole steps, ``cpu.plan_trial``; the vocoder's linears', by per-shape
times, ``cpu.vocoder_gemm``: another kind of entry). Its key (a
``prepared_cache.CacheKey`` of kind ``gemm-plan``, which adds the torch
version and the CPU line of ``cpu.info``: model, ISA flags, ISA limits in the
environment, CPU count) holds the thread count, the matrix shapes and how many
of each, the batch sizes, the prefill rows, the candidate backends and the
mode. Any change is another entry (measured again, never patched). The
prepared cache writes atomically and treats a torn, edited or mismatched entry
as a miss (removed with a warning); nothing here raises on a bad cache or an
unwritable directory: the worst case is measuring again.

A plan guessed because a measurement budget ran out (a loaded machine) is
stored too, marked with the 1-minute load average it was guessed at: a later
start uses it as it is unless its own load average is at most half of that
(``REMEASURE_LOAD``), when it measures again (and stores a measured plan, or
a new guess with the new load). So a loaded machine pays the measurement
once, not at every start, and a quieter start replaces the guess.

Thread: build time (the model thread).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import torch

from realtime.engine.model.prepared_cache import CacheKey, PreparedCache

log = logging.getLogger(__name__)

KIND = "gemm-plan"
VOCODER_KIND = "vocoder-gemm-plan"  # the vocoder's linears (``cpu.vocoder_gemm``): per-shape times
Plan = dict[tuple[int, int], dict[int, str]]  # backend per (shape [N, K], row class)
REMEASURE_LOAD = 0.5  # a guessed plan is measured again at this fraction of its load or less


def key(weights: Sequence[torch.Tensor], policy, device: torch.device, dtype: torch.dtype,
        candidates: Sequence[str], kind: str = KIND) -> CacheKey:
    """What a plan for ``weights`` under ``policy`` (a ``cpu.plan.GemmPolicy``)
    among backends ``candidates`` depends on; ``kind``: the entry's kind (the
    decoder's ``KIND``, the vocoder's ``VOCODER_KIND``)."""
    shapes: dict[str, int] = {}
    for w in weights:
        name = f"{w.shape[0]}x{w.shape[1]}"
        shapes[name] = shapes.get(name, 0) + 1
    return CacheKey.of(kind, threads=torch.get_num_threads(), device=str(device),
                       dtype=str(dtype).removeprefix("torch."), mode=policy.mode,
                       shapes=dict(sorted(shapes.items())),
                       batch_sizes=sorted(set(policy.batch_sizes)),
                       prefill_rows=policy.prefill_rows, candidates=list(candidates))


def describe_key(k: CacheKey) -> str:
    return f"{k.parts.get('threads')} threads, {str(k.parts.get('cpu', '?'))[:60]}"


def load(root: str | None, k: CacheKey | None) -> Plan | None:
    """The backend per (shape, row class) stored under ``k`` in ``root``, or
    None (off, absent, or bad)."""
    if not root or k is None:
        return None
    doc = PreparedCache(root).load_json(k)
    if doc is None:
        return None
    try:
        plan = {(int(n), int(kk)): {int(r): str(b) for r, b in rows.items()}
                for n, kk, rows in ((*s.split("x"), rows) for s, rows in doc["plan"].items())}
        guessed = doc.get("guessed_at_load")
        guessed = None if guessed is None else float(guessed)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        log.warning("cpu gemm plan cache: unreadable plan under %s (%s); measuring again", k.name, exc)
        return None
    if guessed is not None:
        now = os.getloadavg()[0]
        if now <= guessed * REMEASURE_LOAD:
            log.info("cpu gemm plan cache: the plan under %s was guessed at load %.1f; load %.1f "
                     "now: measuring it again", k.name, guessed, now)
            return None
        log.info("cpu gemm plan cache: using the plan guessed at load %.1f (load %.1f now; "
                 "measured again at a start with load <= %.1f)", guessed, now,
                 guessed * REMEASURE_LOAD)
    return plan


def store(root: str | None, k: CacheKey | None, plan: Plan, verdicts: list[str],
          guessed: bool = False) -> None:
    """Keep ``plan`` (and the verdicts that chose it, for a reader) under ``k``;
    ``guessed``: a budget ran out before it was measured in full (marked with
    the load average now: see the module docstring)."""
    if not root or k is None:
        return
    body: dict = {"plan": {f"{n}x{kk}": {str(r): b for r, b in rows.items()}
                           for (n, kk), rows in plan.items()}, "verdicts": verdicts}
    if guessed:
        body["guessed_at_load"] = round(os.getloadavg()[0], 2)
    if PreparedCache(root).store_json(k, body):
        log.info("cpu gemm plan %sstored in the prepared cache %s (%s)",
                 "(guessed) " if guessed else "", root, k.name)
