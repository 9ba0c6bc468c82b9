"""The GPT's two ends, the same for every decoder: embeddings in, logits out.

``GptEnds`` is what the torch decoder (``model.StaticGPT``) and the ONNX
Runtime one (``ort.model.OrtGPT``) share: the text and code embeddings
(``emb_text`` [T, D], ``emb_code`` [Q, V, D]) and the folded code heads
(``heads``, a ``model.matrix.Matrix`` [D, Q * V]), in fp32 on the model's device,
computed exactly as upstream computes them whatever the backbone runs on.

Thread: the model thread.
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import torch
import torch.nn.functional as F

from realtime.engine.model.matrix import Matrix, matmul
from realtime.engine.model.shapes import ModelShape


def embeddings(embed: torch.nn.Module, device: torch.device,
               dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """(``emb_text`` [T, D], ``emb_code`` [Q, V, D]) of upstream's ``Embed``."""
    with torch.no_grad():
        emb_text = cast(torch.nn.Embedding, embed.emb_text)
        emb_code = cast(torch.nn.ModuleList, embed.emb_code)
        return (emb_text.weight.detach().to(device=device, dtype=dtype),
                torch.stack([cast(torch.nn.Embedding, e).weight.detach() for e in emb_code]).to(
                    device=device, dtype=dtype))


def head_weights(embed: torch.nn.Module) -> torch.Tensor:
    """The code heads as one [Q * V, D] matrix; reading ``.weight`` of a
    weight-normed linear evaluates g * v / |v|, so the norm is folded once."""
    with torch.no_grad():
        heads = cast(torch.nn.ModuleList, embed.head_code)
        return torch.cat([cast(torch.nn.Linear, h).weight.detach() for h in heads], 0)


class GptEnds:
    """Embeddings and heads; subclasses set ``shape``, ``device``, ``dtype``,
    ``emb_text``, ``emb_code`` and ``heads``."""

    engine: str  # what runs the backbone: "torch" (ours) or "ort" (ONNX Runtime)
    shape: ModelShape
    device: torch.device
    dtype: torch.dtype
    emb_text: torch.Tensor
    emb_code: torch.Tensor
    heads: Matrix

    def embed_prompt(self, ids: torch.Tensor, speaker: torch.Tensor, spk_emb_id: int,
                     n_text: int | None = None) -> torch.Tensor:
        """[L] text ids + fp16 speaker [D] -> [L, D]; the speaker replaces
        [spk_emb]. With ``n_text``, only the first ``n_text`` ids are text and
        the rest are a voice sample's codes [T, Q] row by row: -> [n_text + T, D]."""
        ids = ids.to(self.device)
        text = ids if n_text is None else ids[:n_text]
        x = self.emb_text.index_select(0, text)
        # Upstream normalizes the fp16 vector in fp16, then writes it into fp32.
        spk = F.normalize(speaker.to(self.device), p=2.0, dim=0, eps=1e-12).to(self.dtype)
        x = torch.where((text == spk_emb_id).unsqueeze(1), spk.unsqueeze(0), x)
        if n_text is None or n_text == ids.shape[0]:
            return x
        codes = ids[n_text:].view(-1, self.shape.num_vq)  # as upstream's Embed: audio codes
        return torch.cat([x, self.embed_codes(codes)])

    def embed_codes(self, codes: torch.Tensor) -> torch.Tensor:
        """[B, Q] codes -> [B, D]: the sum of the Q code embeddings."""
        q = self.shape.num_vq
        rows = self.emb_code[torch.arange(q, device=codes.device), codes]  # [B, Q, D]
        return rows.sum(1)

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """fp32 hidden [B, D] -> fp32 logits [B, Q, V]."""
        return matmul(hidden, self.heads).view(-1, self.shape.num_vq, self.shape.num_audio_tokens)


class GptModel(Protocol):
    """What the runner, its device step and the refine pass use of a decoder
    (``model.StaticGPT``, ``ort.model.OrtGPT``); ``cache`` is the decoder's
    own (``new_cache``)."""

    engine: str  # what runs the backbone: "torch" (ours) or "ort" (ONNX Runtime)
    shape: ModelShape
    device: torch.device
    dtype: torch.dtype
    emb_text: torch.Tensor
    weight_nbytes: int

    def new_cache(self, slots: int, max_len: int, max_batch: int) -> Any: ...

    def prefill(self, x: torch.Tensor, slots: torch.Tensor, cache: Any,
                lengths: list[int] | None = None) -> torch.Tensor: ...

    def decode(self, x: torch.Tensor, slots: torch.Tensor, pos: torch.Tensor, cache: Any, kv_len: int,
               first_slot: int | None = None, in_place: bool = False) -> torch.Tensor: ...

    def embed_prompt(self, ids: torch.Tensor, speaker: torch.Tensor, spk_emb_id: int,
                     n_text: int | None = None) -> torch.Tensor: ...

    def embed_codes(self, codes: torch.Tensor) -> torch.Tensor: ...

    def logits(self, hidden: torch.Tensor) -> torch.Tensor: ...

