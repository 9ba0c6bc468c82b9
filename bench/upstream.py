"""Upstream ChatTTS's own decode path on our assets: the reference we test
and benchmark against.

``UpstreamGPT`` wraps upstream's ``GPT`` (transformers' ``LlamaModel`` with
its dynamic cache, upstream's ``generate`` loop and logits processors) built
from the same ``ModelAssets`` the runner uses, and feeds it the same prompt
ids and speaker vector, the way ``Chat._infer_code`` does.

Thread: any single thread (tests, benchmarks, the GPU check).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

import realtime.engine.compat  # noqa: F401
from realtime.engine.model.shapes import EOS_CODE
from realtime.engine.model.weights import ModelAssets
from realtime.engine.text.frontend import Prompt


@dataclass
class UpstreamResult:
    codes: torch.Tensor  # [N, Q] codes before EOS
    hidden: torch.Tensor  # [N, D] the hidden states that produced them


class UpstreamGPT:
    def __init__(self, assets: ModelAssets, device: str | torch.device = "cpu"):
        from ChatTTS.model import GPT
        from ChatTTS.model.speaker import Speaker
        from transformers import LlamaConfig, LlamaModel
        shape = assets.shape
        self.device = torch.device(device)
        cfg = dict(shape.llama_config(), num_audio_tokens=shape.num_audio_tokens,
                   num_text_tokens=shape.num_text_tokens, num_vq=shape.num_vq)
        self.embed = assets.embed.to(self.device)
        quiet = logging.getLogger(__name__ + ".gpt")
        quiet.setLevel(logging.ERROR)  # upstream warns on every max_new_token stop
        self.gpt = GPT(gpt_config=cfg, embed=self.embed, device=self.device,
                       device_gpt=self.device, logger=quiet).eval()
        llama = LlamaModel(LlamaConfig(**shape.llama_config()))
        del llama.embed_tokens
        llama.load_state_dict(assets.gpt_state)
        self.gpt.gpt = llama.to(self.device).eval()
        self.speaker = Speaker(shape.hidden, assets.spk_stat, self.device)
        self.spk_emb_id = assets.tokenizer.convert_tokens_to_ids("[spk_emb]")
        self.num_vq = shape.num_vq

    @torch.no_grad()
    def embed_prompts(self, prompts: list[Prompt]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Left-padded ids [B, L, Q], mask [B, L] and embeddings, as upstream builds them."""
        length = max(p.length for p in prompts)
        ids = torch.zeros(len(prompts), length, dtype=torch.long)
        mask = torch.zeros(len(prompts), length, dtype=torch.long)
        for i, p in enumerate(prompts):
            ids[i, length - p.length:] = p.ids
            mask[i, length - p.length:] = 1
        ids3 = ids.unsqueeze(-1).expand(-1, -1, self.num_vq).clone().to(self.device)
        mask = mask.to(self.device)
        emb = self.embed(ids3, mask.bool())
        for i, p in enumerate(prompts):
            row = emb[i:i + 1]
            self.speaker.apply(row, p.speaker, ids3[i:i + 1], self.spk_emb_id, self.device)
        return ids3, mask, emb

    @torch.no_grad()
    def generate(self, prompts: list[Prompt], temperature: float = 0.3, top_p: float = 0.7,
                 top_k: int = 20, repetition_penalty: float = 1.05, min_new_tokens: int = 0,
                 max_new_tokens: int = 2048, seed: int | None = None,
                 stream: bool = False, stream_batch: int = 24):
        """Upstream ``GPT.generate``; returns its generator (stream) or a list of results."""
        from ChatTTS.model import gen_logits
        ids3, mask, emb = self.embed_prompts(prompts)
        warpers, processors = gen_logits(num_code=EOS_CODE, top_P=top_p, top_K=top_k,
                                         repetition_penalty=repetition_penalty)
        gen = self.gpt.generate(
            emb, ids3, temperature=torch.tensor([temperature] * self.num_vq, device=self.device),
            eos_token=EOS_CODE, attention_mask=mask, max_new_token=max_new_tokens,
            min_new_token=min_new_tokens, logits_processors=(*processors, *warpers),
            infer_text=False, return_hidden=True, stream=stream, show_tqdm=False,
            ensure_non_empty=False, stream_batch=stream_batch, manual_seed=seed)
        if stream:
            return gen
        out = next(gen)
        return [UpstreamResult(c.cpu(), h.cpu()) for c, h in zip(out.ids, out.hiddens)]


def upstream_chat(assets: ModelAssets, device: str | torch.device = "cpu"):
    """Upstream's ``Chat`` around ``assets`` (tiny or full), for its own
    ``_infer_code`` (prompt decoration, ``Tokenizer.encode`` with a
    ``spk_smp`` prompt, ``Embed``, ``Speaker.apply``, ``GPT.generate``),
    ``sample_audio_speaker`` (the DVAE) and ``_decode_to_wavs``."""
    import ChatTTS
    from ChatTTS.model.tokenizer import Tokenizer

    up = UpstreamGPT(assets, device)
    quiet = logging.getLogger(__name__ + ".chat")
    quiet.setLevel(logging.ERROR)
    chat = ChatTTS.Chat(quiet)
    tokenizer = Tokenizer.__new__(Tokenizer)
    tokenizer._tokenizer, tokenizer.len = assets.tokenizer, len(assets.tokenizer)
    tokenizer.spk_emb_ids = up.spk_emb_id
    tokenizer.break_0_ids = assets.tokenizer.convert_tokens_to_ids("[break_0]")
    tokenizer.eos_token = assets.tokenizer.convert_tokens_to_ids("[Ebreak]")
    chat.gpt, chat.embed, chat.speaker, chat.tokenizer = up.gpt, up.embed, up.speaker, tokenizer
    chat.dvae, chat.decoder, chat.vocos = assets.dvae, assets.decoder, assets.vocos
    chat.device = chat.device_gpt = up.device
    return chat


@torch.no_grad()
def upstream_infer_codes(chat, text: str, params) -> UpstreamResult:
    """Upstream's ``Chat._infer_code`` for one normalized text and
    ``Chat.InferCodeParams`` (what ``Chat.infer`` runs per split, after
    normalization); the codes before EOS and their hidden states."""
    out = next(chat._infer_code([text], False, chat.device, True, params))
    return UpstreamResult(out.ids[0].cpu(), out.hiddens[0].cpu())
