"""Outlier channels moved from activations into weights, for the int8 graphs.

The int8 decode graph quantizes each row's activations with one scale, and
the prompt graph each call's with one: a channel far larger than the rest
(trained models have them, after a norm's gain or in the MLP's product)
leaves the others a few levels. SmoothQuant's remedy (Xiao et al., 2022):
divide each input channel ``c`` of a matrix by ``s_c`` where it is made and
multiply the matrix's column ``c`` by it; the product is unchanged, the
activation's range flattens and the weights, quantized per output channel,
take the difference. ``s_c = sqrt(peak_x[c] / peak_w[c])`` (``ALPHA`` 0.5),
the activation peaks from the K/V calibration's forward (``kv_scales``: the
same seeded sequences), the weight peaks over the column's rows.

Folded where a division is exact: the input norms' gains for the fused QKV
and gate/up matrices (RMSNorm is linear in its gain), and the up matrix's
rows for the down matrix (SiLU(gate) * up is linear in up). The attention
output (o) is not smoothed: its channels are V's, which the int8 K/V cache
stores with scales calibrated on the unsmoothed V. On random weights with
eight channels of every norm's gain raised 20x, the int8 graph's hidden
states went from 13.8% off fp32 to 8.4% (docs/runtime.md).

``smoothed(model, assets)``: ``assets``' GPT state dict, folded, read lazily
(one matrix at a time as the graph is written, never a second copy of all
weights). ``SMOOTH_ID`` names the method in the graphs' cache keys.

Thread: build time (the model thread).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

import torch

from realtime.engine.ort import kv_scales

SMOOTH_ID = "smooth-a0.5-1"  # bump when the factors change: cached int8 graphs then miss
ALPHA = 0.5
LIMIT = 1e3  # a factor stays within [1 / LIMIT, LIMIT]: a channel the calibration never saw lit
_KEY = re.compile(r"layers\.(\d+)\.(.+)")
# A layer's three smoothed inputs: the matrices that read each (their columns
# multiplied), and the norms that make the first two (their gains divided).
_CONSUMERS = (("self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"),
              ("mlp.gate_proj.weight", "mlp.up_proj.weight"), ("mlp.down_proj.weight",))
_COLUMNS = {name: i for i, names in enumerate(_CONSUMERS) for name in names}
_NORMS = {"input_layernorm.weight": 0, "post_attention_layernorm.weight": 1}


def factors(state: Mapping[str, torch.Tensor],
            peaks: list[tuple[torch.Tensor, ...]]) -> list[list[torch.Tensor]]:
    """Per layer the factors of its three smoothed inputs (QKV's [D], gate/up's
    [D], down's [F]) from the activations' ``peaks`` (``kv_scales``)."""
    out = []
    for i, layer_peaks in enumerate(peaks):
        layer = []
        for names, x_peak in zip(_CONSUMERS, layer_peaks):
            w_peak = torch.stack([state[f"layers.{i}.{n}"].float().abs().amax(0) for n in names]).amax(0)
            s = (x_peak.clamp_min(1e-8) ** ALPHA) / (w_peak.clamp_min(1e-8) ** (1 - ALPHA))
            layer.append(s.clamp(1 / LIMIT, LIMIT))
        out.append(layer)
    return out


class Smoothed(Mapping):
    """``state`` with ``factors`` folded in: norms' gains and the up matrix's
    rows divided, the consuming matrices' columns multiplied."""

    def __init__(self, state: Mapping[str, torch.Tensor], layer_factors: list[list[torch.Tensor]]):
        self.state, self.factors = state, layer_factors

    def __getitem__(self, key: str) -> torch.Tensor:
        w = self.state[key]
        m = _KEY.fullmatch(key)
        if m is None:
            return w
        s, name = self.factors[int(m.group(1))], m.group(2)
        w = w.float()
        if name in _NORMS:
            return w / s[_NORMS[name]]
        if name in _COLUMNS:
            w = w * s[_COLUMNS[name]]
        if name == "mlp.up_proj.weight":
            w = w / s[2][:, None]
        return w

    def __iter__(self) -> Iterator[str]:
        return iter(self.state)

    def __len__(self) -> int:
        return len(self.state)


def smoothed(model, assets) -> Smoothed:
    """``assets``' GPT state, smoothed by the calibration's peaks (``model``
    gives the embeddings, as for ``kv_scales.calibrate``)."""
    return Smoothed(assets.gpt_state, factors(assets.gpt_state, kv_scales.activation_peaks(model, assets)))
