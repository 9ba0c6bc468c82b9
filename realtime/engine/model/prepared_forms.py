"""The decoder's int8 and bf16 forms kept per machine, so a warm start does not quantize again.

``--precision int8`` and ``bf16`` make each decoder matrix's forms from its
fp32 source (``prepared_weights``): quantizing (int8: scales, rounding,
fbgemm's ``quantize_per_channel``) or converting (bf16) every matrix at every
start, then packing it; 5-6 s of an int8 warm start on a 2-core Xeon. A form
that can be kept (``cpu.form_state``) is stored in the prepared cache as its
plain tensors and made again from them: the
weight-only int8 and bf16 matrices are used as mapped (no copy); fbgemm's and
oneDNN's opaque packed weights are packed again from the mapped int8 values
and scales (the quantization is what is saved, the prepack is paid).

One entry per (matrix shape, state form): the ``count`` matrices of that
shape in the model's order, tensors ``m{j}.{name}``. Its key: the ``weights``
entry's name (checkpoint content id, model shape, dtype, source form, torch,
CPU), the precision family (the kind: ``int8-forms``, ``bf16-forms``), the
state form (``state_form()``: layout, value range; the CPU's int8 format
among them) and the shape. A plan measured again keeps the entries of the
forms it still uses; forms whose states are equal (fbgemm's and oneDNN's
per-channel int8) share one. Only the forms the settled plan uses are stored,
once the plan is settled (``store``).

A missing, torn or damaged entry is a miss (``PreparedCache.load_tensors``:
xxh3 checked, removed); one whose tensors do not fit the model is a miss too
(``from_state`` raises ``ValueError``): its forms are made from the fp32
source and the entry is stored again. Forms made from an entry multiply
exactly as those made from the source (the same tensors), so codes do not
depend on the cache.

Thread: build time (the model thread).
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Sequence

import torch

from realtime.engine.cpu.form_state import cacheable
from realtime.engine.cpu.forms import PACKERS, family_of
from realtime.engine.cpu.gemm import Matrix, Packed
from realtime.engine.model.prepared_cache import CacheKey
from realtime.engine.model.prepared_weights import WeightsEntry

log = logging.getLogger(__name__)

KINDS = {"int8": "int8-forms", "bf16": "bf16-forms"}  # the families whose forms are kept

Shape = tuple[int, int]  # [N, K]


class FormEntries:
    """The kept forms of one model build (``weights``: its ``weights`` entry)
    in one precision family; a ``cpu.plan`` form source."""

    def __init__(self, weights: WeightsEntry, family: str):
        self.cache, self.kind = weights.cache, KINDS[family]
        self.source = weights.key.name
        self._states: dict[str, dict | None] = {}  # entry name -> its tensors (None: a miss)
        self._unfit: set[str] = set()  # entries whose tensors did not make a form
        self._from_cache: weakref.WeakSet = weakref.WeakSet()
        self.loaded = 0  # forms made from entries

    @classmethod
    def of(cls, weights: WeightsEntry | None, mode: str) -> FormEntries | None:
        """The entries of a model whose GEMM mode is ``mode``, or None (no
        ``weights`` entry, or a mode whose forms are not kept: fp32's)."""
        family = family_of(mode)
        return cls(weights, family) if weights is not None and family in KINDS else None

    def key(self, shape: Shape, count: int, state_form: str) -> CacheKey:
        return CacheKey.of(self.kind, source=self.source, state=state_form,
                           shape=list(shape), count=count)

    def cached(self, shape: tuple[int, ...], count: int, j: int, backend: str,
               rows: int) -> Packed | None:
        """Form ``backend`` of the ``j``-th of the ``count`` matrices of
        ``shape`` [N, K] from its entry, or None (not a kept form, or a miss)."""
        packer = PACKERS[backend]
        if not cacheable(packer):
            return None
        n, k = shape
        key = self.key((n, k), count, packer.state_form())  # type: ignore[attr-defined]
        name = key.name
        if name in self._unfit:
            return None
        if name not in self._states:  # read once: a miss is not read again per matrix
            self._states[name] = self.cache.load_tensors(key)
        stored = self._states[name]
        if stored is None:
            return None
        prefix = f"m{j}."
        state = {n[len(prefix):]: t for n, t in stored.items() if n.startswith(prefix)}
        try:
            form = packer.from_state(state, (n, k), rows)  # type: ignore[attr-defined]
        except (ValueError, RuntimeError) as exc:
            log.warning("prepared %s %s do not fit this model (%s); rebuilding them", self.kind, name, exc)
            self._unfit.add(name)
            return None
        self._from_cache.add(form)
        self.loaded += 1
        return form

    def store(self, matrices: Sequence[Matrix]) -> int:
        """Store the kept forms ``matrices`` (the decoder's, in the model's
        order) use that did not all come from an entry; returns how many
        entries were written."""
        started, written, nbytes = time.perf_counter(), 0, 0
        groups: dict[Shape, list[Matrix]] = {}
        for m in matrices:
            groups.setdefault((m.shape[1], m.shape[0]), []).append(m)
        for shape, group in groups.items():
            by_state: dict[str, list[Packed | None]] = {}
            for j, m in enumerate(group):
                for form in m.forms:
                    if cacheable(type(form)):
                        by_state.setdefault(type(form).state_form(), [None] * len(group))[j] = form  # type: ignore[attr-defined]
            for state_form, forms in by_state.items():
                if any(f is None for f in forms) or all(f in self._from_cache for f in forms):
                    continue  # not one form for every matrix (a failed packing), or all kept already
                tensors = {f"m{j}.{n}": t for j, f in enumerate(forms)
                           for n, t in f.state().items()}  # type: ignore[union-attr]
                if self.cache.store_tensors(self.key(shape, len(group), state_form), tensors):
                    written += 1
                    nbytes += _nbytes(tensors)
        if self.loaded:
            log.info("%s: %d forms made from the prepared cache (%.1f MiB mapped)", self.kind,
                     self.loaded, self.loaded_nbytes() / 2**20)
        if written:
            log.info("%s: %d entries (%.1f MiB) stored in the prepared cache in %.2f s", self.kind,
                     written, nbytes / 2**20, time.perf_counter() - started)
        return written

    def loaded_nbytes(self) -> int:
        """The bytes of the entries read (the forms mapped or packed from them)."""
        return sum(_nbytes(t) for t in self._states.values() if t is not None)


def _nbytes(tensors: dict[str, torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors.values())
