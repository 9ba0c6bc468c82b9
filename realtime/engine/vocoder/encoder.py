"""The DVAE encoder: 24 kHz audio in, ChatTTS's ``spk_smp`` codes out.

Upstream's ``Chat.sample_audio_speaker(wav)`` runs the full DVAE
(``asset/DVAE.safetensors``: mel front end, downsampling convs, the encoder
stack and the grouped residual FSQ) in ``"encode"`` mode and encodes the
[num_vq, T] codes with ``Speaker.encode_prompt`` (a uint16 shape header plus
the raw-LZMA2 codes, base16384). ``SampleEncoder`` does exactly that with
upstream's own modules, so a sample encoded here is the string upstream makes.

Which thread. The encoder is used for nothing else: the speech path runs the
*Decoder* checkpoint, never this module, so the model thread holds no
reference to it and ``SampleEncoder`` may run on any other thread, one
encode at a time behind its lock (the server gives it one dedicated thread
and a bounded queue: ``realtime/server/voices/samples.py``). A 30 s sample costs a
fraction of a second on a CPU; as a model-thread command it would stall
every stream's next step for that long.

Thread: any; calls are serialized by the lock.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pybase16384 as b14
import torch

import realtime.engine.compat  # noqa: F401  (before ChatTTS)

log = logging.getLogger(__name__)

VQ_LEVELS = (5, 5, 5, 5)  # 625 codes per codebook: the GPT's audio ids 0..624
VQ_GROUPS, VQ_RESIDUALS = 2, 2  # num_vq = 4 = groups x residuals
CODES_PER_SECOND = 24000 / 256 / 2  # mel hop 256, downsampled by 2: the GPT's code rate


@dataclass(frozen=True)
class DvaeShape:
    """The sizes of upstream's full DVAE (``Config.dvae``) or a tiny one."""

    dim: int = 512
    encoder_hidden: int = 256
    encoder_layers: int = 12
    encoder_bn: int = 128
    vq_dim: int = 1024
    decoder_hidden: int = 256
    decoder_layers: int = 12
    decoder_bn: int = 128


DVAE_FULL = DvaeShape()
DVAE_TINY = DvaeShape(dim=32, encoder_hidden=32, encoder_layers=1, encoder_bn=16, vq_dim=32,
                      decoder_hidden=32, decoder_layers=1, decoder_bn=16)
_ONES_COEF = b14.encode_to_string(np.ones(100, dtype=np.float32).tobytes())


def build_dvae(shape: DvaeShape, coef: str | None = _ONES_COEF) -> torch.nn.Module:
    """Upstream's ``DVAE`` with encoder and VQ, as ``Chat._load`` builds it
    (``coef`` None draws it from the global RNG as upstream does)."""
    from ChatTTS.model.dvae import DVAE
    enc = dict(idim=shape.dim, odim=shape.vq_dim, hidden=shape.encoder_hidden,
               n_layer=shape.encoder_layers, bn_dim=shape.encoder_bn)
    dec = dict(idim=shape.dim, odim=shape.dim, hidden=shape.decoder_hidden,
               n_layer=shape.decoder_layers, bn_dim=shape.decoder_bn)
    vq = dict(dim=shape.vq_dim, levels=VQ_LEVELS, G=VQ_GROUPS, R=VQ_RESIDUALS)
    return DVAE(decoder_config=dec, encoder_config=enc, vq_config=vq, dim=shape.dim,
                coef=coef).eval()


def dvae_shape_from(state: dict[str, torch.Tensor]) -> DvaeShape:
    """The ``DvaeShape`` a DVAE state dict was saved from (KeyError if it is not one)."""
    def layers(prefix: str) -> int:
        pattern = re.compile(rf"{prefix}\.decoder_block\.(\d+)\.")
        return len({m.group(1) for k in state if (m := pattern.match(k))})
    return DvaeShape(
        dim=state["downsample_conv.0.weight"].shape[0],
        encoder_hidden=state["encoder.conv_in.2.weight"].shape[0],
        encoder_layers=layers("encoder"), encoder_bn=state["encoder.conv_in.0.weight"].shape[0],
        vq_dim=state["encoder.conv_out.weight"].shape[0],
        decoder_hidden=state["decoder.conv_in.2.weight"].shape[0],
        decoder_layers=layers("decoder"), decoder_bn=state["decoder.conv_in.0.weight"].shape[0])


def encode_codes(codes: torch.Tensor) -> str:
    """[num_vq, T] codes -> upstream's ``spk_smp`` string (``Speaker.encode_prompt``)."""
    from ChatTTS.model.speaker import Speaker
    return Speaker.encode_prompt(codes)


def decode_codes(spk_smp: str) -> torch.Tensor:
    """Upstream's ``spk_smp`` string -> [num_vq, T] int64 codes; ValueError on garbage."""
    from ChatTTS.model.speaker import Speaker
    try:
        codes = Speaker.decode_prompt(spk_smp)
    except Exception as exc:  # noqa: BLE001 - lzma/base16384/reshape raise several types
        raise ValueError(f"not an encoded sample ({type(exc).__name__})") from None
    if codes.dim() != 2:
        raise ValueError("an encoded sample must hold a 2-D code array")
    return codes.to(torch.int64)


class DeferredDvae:
    """Upstream's DVAE, built and loaded by ``load()`` on first use.

    Building it imports ``vector_quantize_pytorch`` (einx, ``torch._dynamo``):
    a second of a start-up on a quiet 2-core Xeon, for voices from a sample
    only. ``load`` is the checkpoint's strict loader (it raises what that
    raises, every call until one succeeds); reading any other attribute
    (``.coef``, ``.state_dict()``, ``.sample_audio``) loads the module, once,
    behind a lock. Thread: any.
    """

    def __init__(self, load: Callable[[], torch.nn.Module]):
        self._load = load
        self._module: torch.nn.Module | None = None
        self._lock = threading.Lock()

    def module(self) -> torch.nn.Module:
        with self._lock:
            if self._module is None:
                self._module = self._load().to("cpu").eval()
            return self._module

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.module(), name)


class SampleEncoder:
    """The DVAE encoder, off the model thread (see the module docstring);
    ``dvae`` upstream's DVAE or a ``DeferredDvae`` (loaded at the first encode)."""

    def __init__(self, dvae: Any):
        self._source = dvae
        self._lock = threading.Lock()

    @property
    def dvae(self) -> Any:
        """Upstream's DVAE on the CPU (its methods are untyped)."""
        source = self._source
        return source.module() if isinstance(source, DeferredDvae) else source.to("cpu").eval()

    @torch.inference_mode()
    def codes(self, wav: np.ndarray) -> torch.Tensor:
        """Mono float32 24 kHz samples -> [num_vq, T] int64 codes, as
        upstream's ``DVAE.sample_audio`` gives them; one call at a time."""
        with self._lock:
            out = self.dvae.sample_audio(np.require(wav, np.float32, ["C", "W"]))
        return out.to(torch.int64)

    def encode(self, wav: np.ndarray) -> str:
        """Upstream's ``Chat.sample_audio_speaker(wav)``: the ``spk_smp`` string."""
        return encode_codes(self.codes(wav))
