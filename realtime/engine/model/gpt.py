"""Our GPT forward over ChatTTS's weights, with a static per-slot KV cache.

The same Llama decoder upstream runs through transformers, written for
serving: weight matrices transposed once for ``torch.mm``
(``model.matrix``), fused QKV and gate/up projections, RMSNorm and RoPE as
transformers computes them, and a ``KVCache`` of ``max_slots`` slots
allocated once: one tensor per layer holding its K and V, written in place
at each slot's own position. Attention reads only up to the step's KV length (a
bucket), masked per row by that row's position, so stale entries beyond a
slot's length are never seen and a freed slot needs no clearing.

Decode rows whose slots form one ascending run read the cache through a view;
otherwise the rows' slots are gathered, or (``in_place``, for CUDA graphs
of batches large enough that it moves fewer bytes, see
``KVCache.reads_in_place``) every slot attends in place: the rows' queries
are scattered into a per-slot query tensor, attention runs over the whole
cache as it lies (a strided view, no copy) masked by each slot's position,
and the rows' outputs are picked back out. Each K/V byte is then read once
instead of gathered (read, written) and read again. Inside a graph shapes
and code paths must not change, so a graph uses one of the last two for all
its replays. An extra scratch slot absorbs the writes of padding rows.

Shapes: D hidden, H heads, Dh head dim, Q codebooks, V audio ids, S slots.
Thread: the model thread; no method reads a device value back to the host.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from realtime.engine.model.gpt_ends import GptEnds, embeddings, head_weights
from realtime.engine.model.matrix import Matrix, matmul
from realtime.engine.model.prepared_weights import WeightsEntry, decoder_matrices
from realtime.engine.model.shapes import ModelShape

log = logging.getLogger(__name__)


def reads_in_place(slots: int, batch: int) -> bool:
    """Attending over all ``slots`` + 1 (scratch) slots in place reads S + 1
    slots' K/V once; gathering ``batch`` rows reads, writes and reads again
    B slots' worth. True when in place moves no more bytes."""
    return slots + 1 <= 3 * batch


class KVCache:
    """Keys and values of every slot: per layer ``[S + 1, H, max_len, Dh]``.

    A layer's K and V are the two halves of one ``[2, S + 1, H, max_len, Dh]``
    tensor, so a decode step writes both with one indexed copy into
    ``rows[layer]`` (the same memory as ``[2 * (S + 1) * H * max_len, Dh]``).
    Slot ``S`` (``scratch``) receives the writes of padding rows.
    """

    def __init__(self, shape: ModelShape, slots: int, max_len: int, dtype, device):
        size = (2, slots + 1, shape.kv_heads, max_len, shape.head_dim)
        kv = [_zeros(size, dtype, device) for _ in range(shape.layers)]
        self.k = [t[0] for t in kv]
        self.v = [t[1] for t in kv]
        self.rows = [t.view(-1, shape.head_dim) for t in kv]
        self.slots, self.max_len, self.scratch = slots, max_len, slots
        self.heads = shape.kv_heads
        self.nbytes = sum(t.numel() * t.element_size() for t in kv)

    def touch(self, length: int) -> None:
        """Write the scratch slot's first ``length`` positions (the rows a
        timing step reads), so timing reads memory that is there: a calloc'd
        page never written reads as the kernel's one shared zero page, from cache."""
        for t in (*self.k, *self.v):
            t[self.scratch, :, :length].zero_()

    def reads_in_place(self, batch: int) -> bool:
        """Whether a decode graph of ``batch`` rows attends over every slot in
        place (reads all S + 1 slots once) rather than gathering its rows
        (reads, writes and reads again B slots): the one that moves fewer
        bytes."""
        return reads_in_place(self.slots, batch)

    def decode_rows(self, slots: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """Row indices into ``rows[layer]`` of (K or V, slot, head, pos): [B, 2, H]."""
        kind = torch.arange(2, device=slots.device).view(1, 2, 1) * (self.slots + 1)
        head = torch.arange(self.heads, device=slots.device).view(1, 1, -1)
        return ((kind + slots.view(-1, 1, 1)) * self.heads + head) * self.max_len + pos.view(-1, 1, 1)


def _zeros(size: tuple[int, ...], dtype: torch.dtype, device) -> torch.Tensor:
    """``torch.zeros``; on the CPU from calloc'd memory (numpy's zeros), whose
    pages the kernel zeroes when first touched: ``torch.zeros`` writes every
    byte at once, seconds for a full-size cache of 4 GiB at start-up."""
    np_dtype = {torch.float32: np.float32, torch.float16: np.float16}.get(dtype)
    if torch.device(device).type != "cpu" or np_dtype is None:
        return torch.zeros(size, dtype=dtype, device=device)
    return torch.from_numpy(np.zeros(size, dtype=np_dtype))


@dataclass
class _Layer:
    ln1: torch.Tensor  # [D]
    w_qkv: Matrix  # [D, 3 * H * Dh], multiplied with ``matrix.matmul``
    w_o: Matrix  # [H * Dh, D]
    ln2: torch.Tensor  # [D]
    w_gate_up: Matrix  # [D, 2 * I]
    w_down: Matrix  # [I, D]


class StaticGPT(GptEnds):
    """ChatTTS's GPT + embeddings + folded heads on one device and dtype;
    the heads (logits) always fp32."""

    engine = "torch"

    def __init__(self, shape: ModelShape, gpt_state: Mapping[str, torch.Tensor], embed: torch.nn.Module,
                 device: torch.device, dtype: torch.dtype, prepared: WeightsEntry | None = None):
        if shape.kv_heads != shape.heads:
            raise ValueError("grouped-query attention is not used by ChatTTS and not supported")
        self.shape, self.device, self.dtype = shape, device, dtype

        def w(name):
            return gpt_state[name].to(device=device, dtype=dtype)

        self.emb_text, self.emb_code = embeddings(embed, device, dtype)
        with torch.no_grad():  # per layer qkv, o, gate_up, down [N, K]; the heads [Q*V, D]
            matrices = [Matrix(m) for m in decoder_matrices(
                shape, gpt_state, lambda: head_weights(embed), device, dtype, prepared)]
        self.matrices, self.heads = matrices, matrices[-1]
        self.layers = [_Layer(ln1=w(f"layers.{i}.input_layernorm.weight"), w_qkv=matrices[4 * i],
                              w_o=matrices[4 * i + 1], ln2=w(f"layers.{i}.post_attention_layernorm.weight"),
                              w_gate_up=matrices[4 * i + 2], w_down=matrices[4 * i + 3])
                       for i in range(shape.layers)]
        self.norm = w("norm.weight")
        self.cos, self.sin = self._rope_tables(shape, device, dtype)
        self.weight_nbytes = sum(m.nbytes for m in matrices)
        log.info("weight matrices: %.1f MiB (%s, torch.mm)", self.weight_nbytes / 2**20, dtype)

    def new_cache(self, slots: int, max_len: int, max_batch: int) -> KVCache:
        """The K/V cache this model decodes over (``max_batch``: unused here)."""
        return KVCache(self.shape, slots, max_len, self.dtype, self.device)

    @staticmethod
    def _rope_tables(shape: ModelShape, device, dtype):
        # As transformers' LlamaRotaryEmbedding: fp32 frequencies, cat(f, f).
        hd = shape.head_dim
        inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
        pos = torch.arange(shape.max_positions, dtype=torch.float32)
        freqs = torch.outer(pos, inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)  # [P, Dh]
        return emb.cos().to(device, dtype), emb.sin().to(device, dtype)

    # --- blocks -----------------------------------------------------------------------

    def _rms(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        # transformers' order of operations (x * x is pow(2)'s own kernel),
        # with the temporaries updated in place: after each weight matrix has
        # streamed through the caches, every extra kernel costs tens of microseconds.
        xf = x.float()
        scale = (xf * xf).mean(-1, keepdim=True).add_(self.shape.rms_eps).rsqrt_()
        y = xf * scale
        return (y if y.dtype == x.dtype else y.to(x.dtype)).mul_(weight)

    @staticmethod
    def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def _mlp(self, layer: _Layer, x2d: torch.Tensor) -> torch.Tensor:
        gate_up = matmul(x2d, layer.w_gate_up)  # a fresh tensor: updated in place
        i = gate_up.shape[-1] // 2
        gate = F.silu(gate_up[..., :i], inplace=True)
        return matmul(gate.mul_(gate_up[..., i:]), layer.w_down)

    def _final(self, x: torch.Tensor) -> torch.Tensor:
        return self._rms(x, self.norm).float()

    # --- prefill and decode -----------------------------------------------------------

    def prefill(self, x: torch.Tensor, slots: torch.Tensor, cache: KVCache,
                lengths: list[int] | None = None) -> torch.Tensor:
        """Prompts from position 0: ``x`` [P, L, D] right-padded, ``slots`` [P].

        Writes K/V for positions [0, L) of each slot; returns fp32 hidden [P, L, D].
        Padding rows produce garbage that the caller ignores. ``lengths`` (each
        prompt's own) is for engines that run prompts alone: causal attention
        keeps a row's padding out of its prompt here.
        """
        p, length, d = x.shape
        h, hd = self.shape.heads, self.shape.head_dim
        cos, sin = self.cos[:length], self.sin[:length]  # [L, Dh]
        for i, layer in enumerate(self.layers):
            y = self._rms(x, layer.ln1).view(p * length, d)
            qkv = matmul(y, layer.w_qkv).view(p, length, 3, h, hd).permute(2, 0, 3, 1, 4)
            q, k, v = self._rotate(qkv[0], cos, sin), self._rotate(qkv[1], cos, sin), qkv[2]
            cache.k[i][:, :, :length].index_copy_(0, slots, k)
            cache.v[i][:, :, :length].index_copy_(0, slots, v.contiguous())
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [P, H, L, Dh]
            a = a.transpose(1, 2).reshape(p * length, d)
            x = x + matmul(a, layer.w_o).view(p, length, d)
            y = self._rms(x, layer.ln2).view(p * length, d)
            x = x + self._mlp(layer, y).view(p, length, d)
        return self._final(x)

    def decode(self, x: torch.Tensor, slots: torch.Tensor, pos: torch.Tensor, cache: KVCache,
               kv_len: int, first_slot: int | None = None, in_place: bool = False) -> torch.Tensor:
        """One position per row: ``x`` [B, D] at ``pos`` [B] of ``slots`` [B].

        Attends over cache positions [0, kv_len) masked to <= pos. With
        ``first_slot`` set, the rows are slots first_slot .. first_slot+B-1 and
        the cache is read through a view instead of a gather; with
        ``in_place``, every slot attends over the cache as it lies (real rows
        must name distinct slots; padding rows share the scratch slot).
        Returns fp32 hidden [B, D] (a new tensor).
        """
        b, d = x.shape
        h, hd = self.shape.heads, self.shape.head_dim
        half = hd // 2
        # Per step, shared by all layers: RoPE factors, K/V rows, the mask.
        cos = self.cos[pos].view(b, 1, 1, hd)
        sin = self.sin[pos].view(b, 1, 1, hd)
        sin[..., :half].neg_()  # rotate_half's sign folded in (a fresh gather)
        sin_lo, sin_hi = sin[..., :half], sin[..., half:]
        kv_rows = cache.decode_rows(slots, pos)  # [B, 2, H]
        mask = self._mask(slots, pos, cache, kv_len, in_place)
        rotated = torch.empty(b, 2, h, hd, dtype=x.dtype, device=x.device)
        rot_lo, rot_hi = rotated[..., :half], rotated[..., half:]
        x = x.clone()  # the residual stream, updated in place
        for i, layer in enumerate(self.layers):
            qkv = matmul(self._rms(x, layer.ln1), layer.w_qkv).view(b, 3, h, hd)
            # RoPE on q and k together, in place: qk * cos + rotate_half(qk) * sin.
            qk = qkv[:, :2]
            torch.mul(qk[..., half:], sin_lo, out=rot_lo)
            torch.mul(qk[..., :half], sin_hi, out=rot_hi)
            qk.mul_(cos).add_(rotated)
            cache.rows[i].index_put_((kv_rows,), qkv[:, 1:])  # K and V at (slot, pos)
            kc, vc = cache.k[i], cache.v[i]
            if in_place:
                a = self._attend_in_place(qkv[:, 0], slots, kc, vc, mask, kv_len)
                x.add_(matmul(a, layer.w_o))
                x.add_(self._mlp(layer, self._rms(x, layer.ln2)))
                continue
            if first_slot is not None:
                keys = kc[first_slot:first_slot + b, :, :kv_len]
                values = vc[first_slot:first_slot + b, :, :kv_len]
            else:
                keys = kc[:, :, :kv_len].index_select(0, slots)
                values = vc[:, :, :kv_len].index_select(0, slots)
            a = F.scaled_dot_product_attention(qkv[:, 0].unsqueeze(2), keys, values, attn_mask=mask)
            x.add_(matmul(a.reshape(b, d), layer.w_o))
            x.add_(self._mlp(layer, self._rms(x, layer.ln2)))
        return self._final(x)

    @staticmethod
    def _mask(slots: torch.Tensor, pos: torch.Tensor, cache: KVCache, kv_len: int,
              in_place: bool) -> torch.Tensor:
        """The additive attention mask (SDPA would convert a boolean one per
        layer): [B, 1, 1, kv_len] per row, or [S + 1, 1, 1, kv_len] per slot
        in place, where slots outside the batch see position 0 only (no
        all-masked row, no NaN; their outputs are never read)."""
        if in_place:
            pos = torch.zeros(cache.slots + 1, dtype=pos.dtype, device=pos.device).index_copy_(0, slots, pos)
        rows = pos.shape[0]
        keep = torch.arange(kv_len, device=pos.device).unsqueeze(0) <= pos.unsqueeze(1)
        mask = torch.zeros(rows, 1, 1, kv_len, dtype=cache.k[0].dtype, device=pos.device)
        return mask.masked_fill_(~keep.view(rows, 1, 1, kv_len), -float("inf"))

    @staticmethod
    def _attend_in_place(q: torch.Tensor, slots: torch.Tensor, kc: torch.Tensor, vc: torch.Tensor,
                         mask: torch.Tensor, kv_len: int) -> torch.Tensor:
        """Attention of queries ``q`` [B, H, Dh] of ``slots`` over the cache as
        it lies: [B, H * Dh]."""
        b, h, hd = q.shape
        per_slot = q.new_zeros(kc.shape[0], h, 1, hd).index_copy_(0, slots, q.unsqueeze(2))
        a = F.scaled_dot_product_attention(per_slot, kc[:, :, :kv_len], vc[:, :, :kv_len], attn_mask=mask)
        return a.index_select(0, slots).reshape(b, h * hd)
