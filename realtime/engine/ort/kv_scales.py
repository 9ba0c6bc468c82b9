"""Per-channel scales of the int8 K/V cache (and activation peaks), calibrated once per checkpoint.

The int forms keep K and V in int8: GroupQueryAttention quantizes each new
position's K and V on write with a static scale per (head, channel) and
attends over the int8 cache, a quarter of fp32's bytes. At three or four
rows and 400-600 positions those reads were most of a decode step
(docs/runtime.md, "The int8 K/V cache").

The scales come from the checkpoint, before its graphs are written: a fp32
forward (torch, ``forward_kv``) of ``SEQUENCES`` sequences shaped as the
runtime's (upstream's prompt wrapping ``[Stts][spk_emb][speed_5]{text}[Ptts]``
of our own sentences with a seeded speaker, then ``CODES`` random codes fed
back as a decode would), each channel's largest magnitude over them times
``MARGIN``, over 127. For K the magnitude is the norm of the channel's
rotary pair: no position's rotation makes either half larger, so a scale
calibrated at a few positions holds at every position. The forward is
seeded: the same weights give the same scales, and a graph built later (the
prompt graph) takes them from the decode graph's directory (``SCALES_FILE``)
rather than calibrating again. The forward is written here rather than run
through the torch decoder (``model.gpt.StaticGPT``, which a test holds it
to): it reads the weights a layer at a time, where the decoder would first
copy all of them (760 MiB in fp32) at a start that otherwise never builds it.

The same forward records, per layer, each channel's largest magnitude in
the inputs of the QKV, gate/up and down matrices (``activation_peaks``):
``smoothing`` folds outlier channels into the int8 graphs' weights by them.

Thread: build time (the model thread).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping

import numpy as np
import torch
import torch.nn.functional as F

from realtime.engine.model.shapes import ModelShape
from realtime.engine.ort.graph import SCALES_FILE, rope_caches

log = logging.getLogger(__name__)

KV_ID = "int8-per-channel-1"  # names the calibration in the graphs' cache keys: bump when it changes
MARGIN = 1.5  # headroom over the calibration's largest value: a sequence it did not see
CODES = 160  # codes after each prompt (a sentence's worth of audio)
SEED = 0
INT8_MAX = 127
_KEPT = "ort kv scales"  # in ModelAssets.extra: (scales, activation peaks)
SEQUENCES = (  # our own sentences, of the lengths a voice assistant speaks
    "Sure, here is what I found about the weather for tomorrow morning.",
    "The meeting moved to three thirty, so we still have time for lunch.",
    "Thanks for waiting! Your order is on its way and should arrive soon.",
)


def calibrate(model, assets) -> np.ndarray:
    """Scales fp32 [layers, 2 (K, V), heads, head_dim] for ``assets``' GPT;
    ``model`` gives the embeddings (``GptEnds``: ``embed_prompt``, ``embed_codes``).
    Once per ``assets``: every form's graph takes the same scales (a first
    start with ``--precision auto`` builds int8 to time it, then int4)."""
    return _kept(model, assets)[0]


def activation_peaks(model, assets) -> list[tuple[torch.Tensor, ...]]:
    """Per layer the largest magnitude of each channel of the QKV input, the
    gate/up input and the down input over the same forward (``smoothing``)."""
    return _kept(model, assets)[1]


def _kept(model, assets) -> tuple[np.ndarray, list[tuple[torch.Tensor, ...]]]:
    kept = assets.extra.get(_KEPT)
    if kept is None:
        assets.extra[_KEPT] = kept = _calibrate(model, assets)
    return kept


def _calibrate(model, assets) -> tuple[np.ndarray, list[tuple[torch.Tensor, ...]]]:
    from realtime.engine.text.frontend import Speakers

    started = time.perf_counter()
    shape: ModelShape = assets.shape
    gen = torch.Generator().manual_seed(SEED)
    speaker = Speakers(shape.hidden, assets.spk_stat).from_seed(SEED)
    spk_emb_id = assets.tokenizer.convert_tokens_to_ids("[spk_emb]")
    rows = []
    for text in SEQUENCES:
        ids = assets.tokenizer(f"[Stts][spk_emb][speed_5]{text}[Ptts]", add_special_tokens=False,
                               return_tensors="pt")["input_ids"][0]
        codes = torch.randint(0, shape.num_audio_tokens, (CODES, shape.num_vq), generator=gen)
        rows.append(torch.cat([model.embed_prompt(ids, speaker, spk_emb_id), model.embed_codes(codes)]))
    peaks = torch.zeros(shape.layers, 2, shape.kv_heads, shape.head_dim)
    acts: list[tuple[torch.Tensor, ...]] = []
    with torch.no_grad():
        for x in rows:  # one at a time: no padding to mask
            seen: list[tuple[torch.Tensor, ...]] = []
            kv = forward_kv(shape, assets.gpt_state, x.unsqueeze(0).float(), seen)
            for i, (k, v) in enumerate(kv):
                half = shape.head_dim // 2
                pair = torch.sqrt(k[..., :half] ** 2 + k[..., half:] ** 2).amax(dim=(0, 2))  # [H, Dh/2]
                peaks[i, 0] = torch.maximum(peaks[i, 0], torch.cat([pair, pair], dim=-1))
                peaks[i, 1] = torch.maximum(peaks[i, 1], v.abs().amax(dim=(0, 2)))
            acts = seen if not acts else [tuple(map(torch.maximum, a, b)) for a, b in zip(acts, seen)]
    scales = (peaks * MARGIN / INT8_MAX).clamp_min(1e-8).numpy().astype(np.float32)
    log.info("int8 K/V scales calibrated on %d sequences in %.1f s", len(rows), time.perf_counter() - started)
    return scales, acts


def forward_kv(shape: ModelShape, state: Mapping[str, torch.Tensor], x: torch.Tensor,
               peaks: list[tuple[torch.Tensor, ...]] | None = None
               ) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """The Llama backbone over ``x`` [B, L, D] (fp32, causal, from position
    0) as transformers computes it: each layer's K (rotated) and V [B, H, L, Dh].
    ``peaks``: appended per layer, each channel's largest magnitude in the
    inputs of QKV [D], gate/up [D] and down [F]."""
    b, length, d = x.shape
    h, hd, eps = shape.heads, shape.head_dim, shape.rms_eps
    cos_half, sin_half = (torch.from_numpy(t[:length]) for t in rope_caches(shape))
    cos, sin = torch.cat([cos_half, cos_half], -1), torch.cat([sin_half, sin_half], -1)

    def w(name: str) -> torch.Tensor:
        return state[name].to(torch.float32)

    def norm(t: torch.Tensor, weight: str) -> torch.Tensor:
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * w(weight)

    def rotate(t: torch.Tensor) -> torch.Tensor:
        return t * cos + torch.cat([-t[..., hd // 2:], t[..., :hd // 2]], -1) * sin

    out, hidden = [], x
    for i in range(shape.layers):
        p = f"layers.{i}."
        y_attn = norm(hidden, p + "input_layernorm.weight")
        q, k, v = (F.linear(y_attn, w(p + f"self_attn.{n}_proj.weight")).view(b, length, h, hd)
                   .transpose(1, 2) for n in "qkv")
        q, k = rotate(q), rotate(k)
        out.append((k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, length, d)
        hidden = hidden + F.linear(attn, w(p + "self_attn.o_proj.weight"))
        y = norm(hidden, p + "post_attention_layernorm.weight")
        act = F.silu(F.linear(y, w(p + "mlp.gate_proj.weight"))) * F.linear(y, w(p + "mlp.up_proj.weight"))
        hidden = hidden + F.linear(act, w(p + "mlp.down_proj.weight"))
        if peaks is not None:
            peaks.append(tuple(t.abs().amax(dim=(0, 1)) for t in (y_attn, y, act)))
    return out


def load(directory: str) -> np.ndarray | None:
    """The scales a graph in ``directory`` was built with (None: fp32 K/V)."""
    path = os.path.join(directory, SCALES_FILE)
    return np.load(path) if os.path.exists(path) else None
