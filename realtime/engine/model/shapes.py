"""Model sizes: upstream ChatTTS's full architecture and a tiny one for tests.

A ``ModelShape`` names every size the runtime builds or checks: the GPT
(a Llama decoder fed with embeddings), the Decoder (DVAE decoder turning GPT
hidden states into mel) and Vocos (mel to 24 kHz audio). ``FULL`` is upstream
0.2.5's config; ``TINY`` keeps the same classes and the fixed interface sizes
(626 audio ids with EOS 625, 4 codebooks, 100 mel bins, hop 256) but shrinks
every width and depth so a model builds in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

EOS_CODE = 625  # the last audio id ends a stream (upstream: num_audio_tokens - 1)
N_MELS = 100  # fixed by the Decoder's out_conv and Vocos's input


@dataclass(frozen=True)
class ModelShape:
    hidden: int = 768
    layers: int = 20
    heads: int = 12
    kv_heads: int = 12
    intermediate: int = 3072
    num_text_tokens: int = 21178
    num_audio_tokens: int = 626
    num_vq: int = 4
    max_positions: int = 4096
    rms_eps: float = 1e-6
    rope_theta: float = 10000.0
    decoder_hidden: int = 512
    decoder_layers: int = 12
    decoder_bn: int = 128
    vocos_dim: int = 512
    vocos_intermediate: int = 1536
    vocos_layers: int = 8

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def decoder_idim(self) -> int:
        # The Decoder reads each hidden state as two half-width mel-rate frames.
        return self.hidden // 2

    def llama_config(self) -> dict:
        """Keyword arguments for transformers' LlamaConfig (upstream's keys)."""
        return dict(hidden_size=self.hidden, intermediate_size=self.intermediate,
                    num_attention_heads=self.heads, num_key_value_heads=self.kv_heads,
                    num_hidden_layers=self.layers, max_position_embeddings=self.max_positions,
                    rms_norm_eps=self.rms_eps, rope_theta=self.rope_theta, use_cache=False)


FULL = ModelShape()
TINY = ModelShape(hidden=64, layers=2, heads=4, kv_heads=4, intermediate=128,
                  num_text_tokens=768, max_positions=4096, decoder_hidden=32,
                  decoder_layers=2, decoder_bn=16, vocos_dim=32, vocos_intermediate=64,
                  vocos_layers=1)
