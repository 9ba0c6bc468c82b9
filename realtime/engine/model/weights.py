"""Model weights: a ChatTTS checkpoint directory, or seeded random weights.

``resolve_assets(options)`` turns ``RuntimeOptions.weights`` into ``ModelAssets``:

- a path, or ``auto`` with ``model_dir`` or the Hugging Face hub cache holding
  upstream's layout (``asset/{Embed,Decoder,Vocos,DVAE}.safetensors``,
  ``asset/gpt/{config.json,*.safetensors}``, ``asset/tokenizer/``);
- ``random``: the full architecture with seeded random weights;
- ``tiny-random``: the same classes at tiny sizes (``shapes.TINY``), built in
  memory in well under a second.

``auto`` without a checkpoint falls back to full-size random weights with a
loud warning, or raises ``WeightsError`` when ``require_weights`` is set. A
missing or unreadable checkpoint raises ``WeightsError`` naming the path and
what is wrong; the server prints it as a one-line start-up error.

``write_checkpoint`` writes assets in upstream's layout, so tests load
checkpoints they built themselves. The DVAE (the audio *encoder*: voices from
a sample, ``encoder.py``) is loaded when ``DVAE.safetensors`` is there; a
checkpoint without it serves every voice but sample ones.

Thread: called once at start-up.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pybase16384 as b14
import torch

import realtime.engine.compat  # noqa: F401  (before ChatTTS/vocos)
from realtime.engine.api import SAMPLE_RATE, WeightsKind
from realtime.engine.model.checkpoint_io import (
    LazyTensors,
    WeightsError,
    load_into,
    read_safetensors,
    read_shapes,
)
from realtime.engine.model.no_init import random_init_skipped
from realtime.engine.model.shapes import FULL, N_MELS, TINY, ModelShape
from realtime.engine.text.tokenizer import generate_tokenizer, load_tokenizer, save_tokenizer
from realtime.engine.vocoder.encoder import (
    DVAE_FULL,
    DVAE_TINY,
    DeferredDvae,
    build_dvae,
    dvae_shape_from,
)

log = logging.getLogger(__name__)

LICENCE_NOTE = ("ChatTTS model weights are licensed CC BY-NC 4.0 (non-commercial use "
                "only): https://huggingface.co/2Noise/ChatTTS")
REQUIRED_FILES = ("Embed.safetensors", "Decoder.safetensors", "Vocos.safetensors",
                  "gpt/config.json", "tokenizer")
HUB_SNAPSHOTS = "hub/models--2Noise--ChatTTS/snapshots"


@dataclass
class ModelAssets:
    """Everything the runtime builds from: weights on CPU in fp32.

    ``gpt_state`` is a transformers ``LlamaModel`` state dict (upstream's
    ``asset/gpt``); ``embed`` upstream's ``Embed`` (text/code embeddings and
    weight-normed heads); ``decoder`` upstream's ``DVAE`` built as Decoder;
    ``vocos`` a ``vocos.Vocos``; ``spk_stat`` the encoded speaker statistics;
    ``dvae`` upstream's full ``DVAE`` (encoder and VQ), None when the checkpoint
    lacks ``DVAE.safetensors``; from a checkpoint a ``DeferredDvae`` (loaded
    at its first use).
    """

    kind: WeightsKind
    shape: ModelShape
    gpt_state: Mapping[str, torch.Tensor]  # a dict, or a checkpoint's LazyTensors
    embed: torch.nn.Module
    decoder: torch.nn.Module
    vocos: torch.nn.Module
    tokenizer: Any  # transformers' BertTokenizerFast, or a LeanTokenizer (lean_tokenizer.py)
    spk_stat: str
    source: str = "memory"
    extra: dict = field(default_factory=dict)
    dvae: torch.nn.Module | DeferredDvae | None = None


# --- building the upstream modules ---------------------------------------------------

def _build_embed(shape: ModelShape):
    from ChatTTS.model.embed import Embed
    return Embed(shape.hidden, shape.num_audio_tokens, shape.num_text_tokens, shape.num_vq)


def _build_decoder(shape: ModelShape, coef: str | None = None):
    from ChatTTS.model.dvae import DVAE
    cfg = dict(idim=shape.decoder_idim, odim=shape.decoder_idim, hidden=shape.decoder_hidden,
               n_layer=shape.decoder_layers, bn_dim=shape.decoder_bn)
    return DVAE(decoder_config=cfg, dim=shape.decoder_idim, coef=coef).eval()


def _build_vocos(shape: ModelShape):
    from vocos import Vocos
    from vocos.feature_extractors import MelSpectrogramFeatures
    from vocos.heads import ISTFTHead
    from vocos.models import VocosBackbone
    fe = MelSpectrogramFeatures(sample_rate=SAMPLE_RATE, n_fft=1024, hop_length=256,
                                n_mels=N_MELS, padding="center")
    backbone = VocosBackbone(input_channels=N_MELS, dim=shape.vocos_dim,
                             intermediate_dim=shape.vocos_intermediate,
                             num_layers=shape.vocos_layers)
    head = ISTFTHead(dim=shape.vocos_dim, n_fft=1024, hop_length=256, padding="center")
    return Vocos(feature_extractor=fe, backbone=backbone, head=head).eval()


def _random_spk_stat(dim: int, gen: torch.Generator) -> str:
    """Speaker statistics (std then mean, fp16) encoded as upstream stores them."""
    std = torch.rand(dim, generator=gen) * 0.5 + 0.5
    mean = torch.randn(dim, generator=gen) * 0.1
    return b14.encode_to_string(torch.cat([std, mean]).to(torch.float16).numpy().tobytes())


def _upstream_spk_stat() -> str:
    from ChatTTS.config import Config
    return Config().spk_stat


def random_assets(shape: ModelShape = FULL, seed: int = 0,
                  kind: WeightsKind | None = None) -> ModelAssets:
    """Seeded random weights of ``shape`` with upstream's classes and init.

    The same (shape, seed) always gives the same weights; the global torch RNG
    is left as it was.
    """
    from transformers import LlamaConfig, LlamaModel
    kind = kind or (WeightsKind.TINY_RANDOM if shape == TINY else WeightsKind.RANDOM)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        llama = LlamaModel(LlamaConfig(**shape.llama_config()))
        del llama.embed_tokens
        gpt_state = {k: v.detach().clone() for k, v in llama.state_dict().items()}
        del llama
        embed = _build_embed(shape).eval()
        decoder = _build_decoder(shape)
        vocos = _build_vocos(shape)
        # Layer scales start at 1e-6 in ConvNeXt blocks; raise them so random
        # Decoder/Vocos weights make audible, non-trivial audio.
        for module in (decoder, vocos):
            for name, p in module.named_parameters():
                scale = name.endswith("decoder_block.0.weight") or re.search(
                    r"\.gamma$|block\.\d+\.weight$", name)
                if scale and p.dim() == 1:
                    p.data.fill_(0.1)
        # Drawn last, so the modules above keep the weights they had before it existed.
        dvae = build_dvae(DVAE_TINY if shape == TINY else DVAE_FULL, coef=None)
    gen = torch.Generator().manual_seed(seed + 1)
    spk_stat = _upstream_spk_stat() if shape.hidden == FULL.hidden else _random_spk_stat(shape.hidden, gen)
    tokenizer = generate_tokenizer(shape.num_text_tokens)
    return ModelAssets(kind=kind, shape=shape, gpt_state=gpt_state, embed=embed,
                       decoder=decoder, vocos=vocos, tokenizer=tokenizer, spk_stat=spk_stat,
                       source=f"random(seed={seed})", dvae=dvae)


# --- writing and reading upstream's layout --------------------------------------------

def write_checkpoint(assets: ModelAssets, root: str) -> str:
    """Write ``assets`` under ``root/asset`` in upstream's layout; returns ``root``."""
    from safetensors.torch import save_file
    asset = os.path.join(root, "asset")
    os.makedirs(os.path.join(asset, "gpt"), exist_ok=True)

    def save(module_or_state, name):
        state = module_or_state if isinstance(module_or_state, dict) else module_or_state.state_dict()
        save_file({k: v.contiguous() for k, v in state.items()}, os.path.join(asset, name))

    save(assets.embed, "Embed.safetensors")
    save(assets.decoder, "Decoder.safetensors")
    if assets.dvae is not None:
        save(assets.dvae, "DVAE.safetensors")
    save(assets.vocos, "Vocos.safetensors")
    save(assets.gpt_state, "gpt/model.safetensors")
    with open(os.path.join(asset, "gpt", "config.json"), "w") as f:
        json.dump(dict(assets.shape.llama_config(), architectures=["LlamaModel"],
                       model_type="llama", num_audio_tokens=assets.shape.num_audio_tokens,
                       num_text_tokens=assets.shape.num_text_tokens, num_vq=assets.shape.num_vq),
                  f, indent=1)
    save_tokenizer(assets.tokenizer, os.path.join(asset, "tokenizer"))
    if assets.spk_stat != _upstream_spk_stat():
        with open(os.path.join(asset, "spk_stat.txt"), "w", encoding="utf-8") as f:
            f.write(assets.spk_stat)
    return root


def find_asset_dir(path: str) -> str | None:
    """``path`` itself or ``path/asset`` when it holds a gpt/ folder."""
    for candidate in (os.path.join(path, "asset"), path):
        if os.path.isdir(os.path.join(candidate, "gpt")):
            return candidate
    return None


def hub_cache_dir() -> str | None:
    """The newest cached snapshot of 2Noise/ChatTTS, if any."""
    home = os.getenv("HF_HOME", os.path.expanduser("~/.cache/huggingface"))
    snapshots = os.path.join(home, HUB_SNAPSHOTS)
    if not os.path.isdir(snapshots):
        return None
    entries = [os.path.join(snapshots, d) for d in os.listdir(snapshots)]
    entries = [e for e in entries if find_asset_dir(e)]
    return max(entries, key=os.path.getmtime) if entries else None


def _count(state: dict, pattern: str) -> int:
    return len({m.group(1) for k in state if (m := re.match(pattern, k))})


def _shape_from(asset: str, gpt_cfg: dict, embed: dict, dec: dict, voc: dict) -> ModelShape:
    try:
        return ModelShape(
            hidden=gpt_cfg["hidden_size"], layers=gpt_cfg["num_hidden_layers"],
            heads=gpt_cfg["num_attention_heads"],
            kv_heads=gpt_cfg.get("num_key_value_heads") or gpt_cfg["num_attention_heads"],
            intermediate=gpt_cfg["intermediate_size"],
            num_text_tokens=embed["emb_text.weight"].shape[0],
            num_audio_tokens=embed["emb_code.0.weight"].shape[0],
            num_vq=_count(embed, r"emb_code\.(\d+)\."),
            max_positions=gpt_cfg.get("max_position_embeddings", 4096),
            rms_eps=gpt_cfg.get("rms_norm_eps", 1e-6), rope_theta=gpt_cfg.get("rope_theta", 10000.0),
            decoder_hidden=dec["decoder.conv_in.2.weight"].shape[0],
            decoder_layers=_count(dec, r"decoder\.decoder_block\.(\d+)\."),
            decoder_bn=dec["decoder.conv_in.0.weight"].shape[0],
            vocos_dim=voc["backbone.embed.weight"].shape[0],
            vocos_intermediate=voc["backbone.convnext.0.pwconv1.weight"].shape[0],
            vocos_layers=_count(voc, r"backbone\.convnext\.(\d+)\."))
    except (KeyError, IndexError) as exc:
        raise WeightsError(f"checkpoint in {asset} lacks tensor {exc}") from None


def load_checkpoint(path: str) -> ModelAssets:
    """Load upstream's layout from ``path`` (or ``path/asset``); raises WeightsError."""
    asset = find_asset_dir(path) if os.path.isdir(path) else None
    if asset is None:
        raise WeightsError(f"no ChatTTS checkpoint at {path}: expected {path}/asset/gpt/ "
                           f"and {', '.join(REQUIRED_FILES)}")
    missing = [n for n in REQUIRED_FILES if not os.path.exists(os.path.join(asset, n))]
    gpt_files = sorted(f for f in os.listdir(os.path.join(asset, "gpt")) if f.endswith(".safetensors"))
    if not gpt_files:
        missing.append("gpt/*.safetensors")
    if missing:
        raise WeightsError(f"checkpoint at {asset} is missing: {', '.join(missing)}")
    cfg_path = os.path.join(asset, "gpt", "config.json")
    try:
        with open(cfg_path, encoding="utf-8") as f:
            gpt_cfg = json.load(f)
    except (OSError, ValueError) as exc:
        raise WeightsError(f"checkpoint file unreadable: {cfg_path} ({exc})") from None
    # Read when used (fp32): a start with prepared matrices reads the norms only.
    gpt_state = LazyTensors([os.path.join(asset, "gpt", n) for n in gpt_files], strip="model.",
                            skip=("embed_tokens.weight",))
    embed_state = read_safetensors(os.path.join(asset, "Embed.safetensors"))
    dec_state = read_safetensors(os.path.join(asset, "Decoder.safetensors"))
    voc_state = read_safetensors(os.path.join(asset, "Vocos.safetensors"))
    shape = _shape_from(asset, gpt_cfg, embed_state, dec_state, voc_state)
    _check_gpt_state(gpt_state, shape, os.path.join(asset, "gpt"))
    with random_init_skipped():  # every parameter is loaded just below
        embed, decoder, vocos = _build_embed(shape).eval(), _build_decoder(shape), _build_vocos(shape)
    # The states read above (for the shape) are loaded: each file is read once.
    load_into(embed, os.path.join(asset, "Embed.safetensors"), embed_state)
    load_into(decoder, os.path.join(asset, "Decoder.safetensors"), dec_state)
    load_into(vocos, os.path.join(asset, "Vocos.safetensors"), voc_state)
    del embed_state, dec_state, voc_state
    try:
        tokenizer = load_tokenizer(os.path.join(asset, "tokenizer"))
    except (OSError, ValueError) as exc:
        raise WeightsError(f"tokenizer unreadable: {os.path.join(asset, 'tokenizer')} ({exc})") from None
    dvae = _load_dvae(os.path.join(asset, "DVAE.safetensors"))
    spk_path = os.path.join(asset, "spk_stat.txt")
    if os.path.isfile(spk_path):
        with open(spk_path, encoding="utf-8") as f:
            spk_stat = f.read().strip()
    else:
        spk_stat = _upstream_spk_stat()
    log.warning("loaded ChatTTS checkpoint from %s. %s", asset, LICENCE_NOTE)
    return ModelAssets(kind=WeightsKind.CHECKPOINT, shape=shape, gpt_state=gpt_state, embed=embed,
                       decoder=decoder, vocos=vocos, tokenizer=tokenizer, spk_stat=spk_stat,
                       source=asset, dvae=dvae)


def _load_dvae(path: str) -> DeferredDvae | None:
    """Upstream's DVAE (encoder, VQ) from ``path``, built and strictly loaded
    at its first use (``encoder.DeferredDvae``: building it imports the
    quantizer's stack, seconds of a start-up the speech path does not need);
    its header is read now, so a file that is no DVAE fails the start. None,
    with a warning, when absent."""
    if not os.path.isfile(path):
        log.warning("no %s: voices from a sample are unavailable", path)
        return None
    try:
        shape = dvae_shape_from(read_shapes(path))
    except KeyError as exc:
        raise WeightsError(f"checkpoint file {path} lacks tensor {exc}") from None

    def load() -> torch.nn.Module:
        with random_init_skipped():
            dvae = build_dvae(shape)
        load_into(dvae, path)
        log.info("DVAE encoder loaded from %s (voices from a sample)", path)
        return dvae
    return DeferredDvae(load)


def _check_gpt_state(state: Mapping, shape: ModelShape, where: str) -> None:
    needed = ["norm.weight"] + [f"layers.{i}.{p}.weight" for i in range(shape.layers)
                                for p in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                          "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                                          "mlp.down_proj", "input_layernorm",
                                          "post_attention_layernorm")]
    absent = [k for k in needed if k not in state]
    if absent:
        raise WeightsError(f"checkpoint in {where} lacks {len(absent)} tensors, e.g. {absent[0]}")
    if state["norm.weight"].shape[0] != shape.hidden:
        raise WeightsError(f"checkpoint in {where}: norm.weight has {state['norm.weight'].shape[0]} "
                           f"features, config.json says hidden_size={shape.hidden}")


def _try_download() -> str | None:
    """Upstream's hub download, only when the hub answers at once (no retries)."""
    if os.getenv("HF_HUB_OFFLINE") in ("1", "true", "True"):
        return None
    import socket
    try:
        socket.create_connection(("huggingface.co", 443), timeout=2).close()
    except OSError:
        log.info("hub not reachable; not downloading ChatTTS weights")
        return None
    try:
        from huggingface_hub import snapshot_download
        return snapshot_download(repo_id="2Noise/ChatTTS",
                                 allow_patterns=["*.yaml", "*.json", "*.safetensors"])
    except Exception as exc:  # noqa: BLE001 - network and hub errors of every kind: fall back
        log.warning("ChatTTS download failed: %s", exc)
        return None


def resolve_assets(weights: str = "auto", model_dir: str | None = None,
                   require_weights: bool = False, seed: int = 0) -> ModelAssets:
    """Pick and load weights as ``RuntimeOptions`` describes; raises WeightsError."""
    if weights == "tiny-random":
        return random_assets(TINY, seed, kind=WeightsKind.TINY_RANDOM)
    if weights == "random":
        return random_assets(FULL, seed, kind=WeightsKind.RANDOM)
    if weights != "auto":
        return load_checkpoint(weights)
    if model_dir:
        return load_checkpoint(model_dir)
    found = hub_cache_dir() or _try_download()
    if found:
        return load_checkpoint(found)
    if require_weights:
        raise WeightsError("no ChatTTS checkpoint found (no --model-dir, nothing in the hub "
                           "cache, no download possible) and --require-weights is set")
    log.warning("!!! NO CHATTTS WEIGHTS FOUND: running FULL-SIZE RANDOM WEIGHTS; the audio "
                "is noise. Pass --model-dir or --require-weights. !!!")
    return random_assets(FULL, seed, kind=WeightsKind.RANDOM)



def decode_spk_stat(spk_stat: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(std, mean) fp16 vectors from upstream's encoded statistics."""
    stat = torch.from_numpy(np.frombuffer(b14.decode_from_string(spk_stat), dtype=np.float16).copy())
    std, mean = stat.chunk(2)
    return std, mean
