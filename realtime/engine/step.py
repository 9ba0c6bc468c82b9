"""The decode step as one device-side function, and the per-slot state it reads.

``DeviceStep.decode(slots, kv_len)`` is everything a decode step does on the
device, from the slot ids of its rows to their EOS flags: it reads each
slot's position, code count and sampling parameters from ``SlotState``,
embeds the previous codes, runs the model, samples (penalty, top-p, top-k,
EOS mask, draw), stores codes and hidden states at (slot, code number),
advances the slots' state and returns EOS [B]. Its only input is the slot
ids, so with CUDA graphs the whole step (sampling included) is one replay
whose one static input changes only when the batch's composition does.

``SlotState`` lives on the device, one entry per KV slot plus the scratch
slot. A prefill writes the new slots' entries from one host tensor
(``load``); a decode advances them in place; nothing crosses to the device in
a steady step. Host tensors cross with ``upload``: pinned memory and a
``non_blocking`` copy on CUDA. A pinned buffer may be reused only after the
device has consumed the copy: ``upload`` keeps none (torch's caching host
allocator frees each once its copy is done), so it holds with the EOS
flags read one step later too (``eos_read.py``).

Thread: the model thread; no method reads a device value on the host.
"""

from __future__ import annotations

from typing import Any

import torch

from realtime.engine.model.gpt_ends import GptModel
from realtime.engine.model.shapes import EOS_CODE
from realtime.engine.sampling import PENALTY_WINDOW, RowParams, sample

# Columns of a prefill's parameter upload (``SlotState.load``).
INT_FIELDS = ("top_k", "min_new", "seed")
FLOAT_FIELDS = ("temperature", "top_p_cut", "penalty")


def upload(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host tensor on ``device``: pinned and copied without blocking on CUDA
    (the caller keeps no reference to the pinned copy: the caching host
    allocator frees it once the copy is done)."""
    if device.type == "cuda":
        host = host.pin_memory()
    return host.to(device, non_blocking=True)


class SlotState:
    """Per-slot decode state on the device, all ``[S + 1]``: ``position`` (the
    cache position the next decode writes: prompt length + codes - 1),
    ``steps`` (codes drawn so far) and ``params`` (sampling parameters).
    The scratch slot's entries stay zero, with valid sampling parameters, so
    padding rows index safely."""

    def __init__(self, slots: int, device: torch.device):
        i64: dict[str, Any] = dict(dtype=torch.int64, device=device)
        f32: dict[str, Any] = dict(dtype=torch.float32, device=device)
        self.scratch = slots - 1
        self.position = torch.zeros(slots, **i64)
        self.steps = torch.zeros(slots, **i64)
        self.params = RowParams(temperature=torch.ones(slots, **f32),
                                top_p_cut=torch.zeros(slots, **f32),
                                top_k=torch.ones(slots, **i64),
                                penalty=torch.ones(slots, **f32),
                                min_new=torch.zeros(slots, **i64),
                                seed=torch.zeros(slots, **i64))

    def load(self, slots: torch.Tensor, ints: torch.Tensor, floats: torch.Tensor) -> None:
        """New jobs in ``slots`` [P]: ``ints`` [P, 3] (``INT_FIELDS``) and
        ``floats`` [P, 3] (``FLOAT_FIELDS``), device tensors. Position and
        steps are set by the prefill's first code (``advance``)."""
        p = self.params
        for i, name in enumerate(INT_FIELDS):
            getattr(p, name).index_copy_(0, slots, ints[:, i])
        for i, name in enumerate(FLOAT_FIELDS):
            getattr(p, name).index_copy_(0, slots, floats[:, i])

    def set_rows(self, slots: torch.Tensor, position: torch.Tensor, steps: torch.Tensor) -> None:
        """Overwrite ``slots``' position and steps (after a failed step, from
        the host's record of what the jobs really have)."""
        self.position.index_copy_(0, slots, position)
        self.steps.index_copy_(0, slots, steps)

    def advance(self, slots: torch.Tensor, position: torch.Tensor, steps: torch.Tensor) -> None:
        """One code drawn at ``position`` [B] as code number ``steps`` [B]."""
        self.set_rows(slots, position + 1, steps + 1)
        # Padding rows advanced the scratch slot: back to zero, so its next
        # use indexes position 0 and code 0 again.
        self.position[self.scratch:].zero_()
        self.steps[self.scratch:].zero_()


class DeviceStep:
    """The device side of a step over ``model``, ``cache`` and the runner's
    per-slot ``codes`` [S + 1, max_len, Q] and ``hidden`` [S + 1, max_len, D]."""

    def __init__(self, model: GptModel, cache, codes: torch.Tensor, hidden: torch.Tensor):
        self.model, self.cache, self.codes, self.hidden = model, cache, codes, hidden
        self.state = SlotState(cache.slots + 1, model.device)
        self.audio_ids = model.shape.num_audio_tokens

    def _history(self, slots: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """The last PENALTY_WINDOW codes of each row: [B, Q, W], V where none."""
        offsets = torch.arange(-PENALTY_WINDOW, 0, device=slots.device)
        idx = steps.unsqueeze(1) + offsets  # [B, W]
        hist = self.codes[slots.unsqueeze(1), idx.clamp(min=0)]  # [B, W, Q]
        hist = hist.masked_fill((idx < 0).unsqueeze(2), self.audio_ids)
        return hist.permute(0, 2, 1).contiguous()

    def sample_and_store(self, hidden: torch.Tensor, slots: torch.Tensor,
                         position: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
        """Draw code number ``steps`` [B] of ``slots`` [B] from fp32 ``hidden``
        [B, D]; store codes and hidden, advance the slots; return EOS [B] bool."""
        logits = self.model.logits(hidden)
        codes = sample(logits, self._history(slots, steps), steps, self.state.params.take(slots))
        self.codes.index_put_((slots, steps), codes)
        self.hidden.index_put_((slots, steps), hidden)
        self.state.advance(slots, position, steps)
        return (codes == EOS_CODE).any(dim=1)

    def decode(self, slots: torch.Tensor, kv_len: int, first_slot: int | None = None,
               in_place: bool = False) -> torch.Tensor:
        """One decode step of the rows in ``slots`` [B] (padding rows: the
        scratch slot); attention over [0, kv_len). ``first_slot``: the rows
        are the ascending run of slots from it (eager only); ``in_place``:
        every slot attends over the cache as it lies (``StaticGPT.decode``).
        Returns EOS [B]."""
        s = self.state
        position = s.position.index_select(0, slots)
        steps = s.steps.index_select(0, slots)
        # The scratch slot has 0 steps: its "previous code" is any stored one.
        prev = self.codes[slots, steps - 1]  # [B, Q]
        x = self.model.embed_codes(prev)
        hidden = self.model.decode(x, slots, position, self.cache, kv_len, first_slot, in_place)
        return self.sample_and_store(hidden, slots, position, steps)

    def first_codes(self, final: torch.Tensor, slots: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Code 0 of new jobs in ``slots`` [P] from the prompt's last hidden
        state ``final`` [P, D]; their next decode feeds position ``lengths``."""
        zero = torch.zeros_like(lengths)
        return self.sample_and_store(final, slots, lengths - 1, zero)
