"""Streaming vocoder benchmark: ours vs upstream ChatTTS's streaming scheme.

Runs on the CPU with full-size random Decoder + Vocos weights and random GPT
hidden states (unit normal, the scale of the GPT's normalized last layer).

1. Total vocoder time for one streamed utterance (937 steps = 20 s): ours
   (one step per push, default settings) vs upstream's stream path, which
   re-decodes the whole prefix through ``Chat._decode_to_wavs`` every
   ``stream_batch`` = 24 steps and once more when the stream ends. ``quick``
   times upstream's decode at six lengths and sums a fitted line over its
   40 decodes instead of running all ~19,700 steps.
2. Time to first audio for token-chunked streaming, modelled as GPT step time
   x steps until the first chunk + vocoder time until that chunk. Ours: the
   first non-empty ``push`` (``min_chunk_steps + lookahead_steps`` steps).
   Upstream ``stream=True``: ``GPT.generate`` yields every 24 steps and
   ``Chat._infer`` decodes every yield but drops the first
   ``pass_first_n_batches`` = 2, so its first audio follows step 72 and three
   decodes (24, 48, 72 steps). With its default ``split_text=True`` a
   multi-sentence text first runs a whole non-streamed reference pass of the
   first sentence; ``first_audio_ratio`` leaves that out (the conservative
   comparison) and ``upstream_first_audio_with_reference_s`` adds it.
3. The receptive field of the full-size models, measured by perturbing one
   step's hidden state.

``measure(quick, gpt_step_s=None) -> dict``; ``python -m bench vocoder
[--quick] [--field]`` prints a table and, last, one JSON line.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

import numpy as np
import torch

import realtime.engine.compat  # noqa: F401 - before ChatTTS and vocos: torchaudio's stand-in

# isort: split
from ChatTTS.config import Config
from ChatTTS.model.dvae import DVAE
from vocos import Vocos
from vocos.feature_extractors import MelSpectrogramFeatures
from vocos.heads import ISTFTHead
from vocos.models import VocosBackbone

from realtime.engine.vocoder.stream import SAMPLES_PER_STEP, StreamingVocoder

log = logging.getLogger(__name__)


def random_models(tiny: bool = False, seed: int = 0) -> tuple[DVAE, Vocos]:
    """A ChatTTS Decoder and a Vocos of the real architecture with seeded
    random weights, in eval mode on the CPU.

    ``tiny`` keeps every layer count and kernel (so the receptive field is the
    real one) but shrinks the channel widths: the hidden size becomes 32.
    The Decoder's ConvNeXt layer scales start at 1e-6, which would make its
    blocks nearly transparent; they are drawn in [0.05, 0.5] instead, as a
    trained model's are of that order.
    """
    gen = torch.manual_seed(seed)
    cfg = Config()
    if tiny:
        dec_cfg = dict(idim=16, odim=16, hidden=32, n_layer=cfg.decoder.n_layer, bn_dim=16)
        dim, inter = 32, 64
    else:
        dec_cfg = dict(idim=cfg.decoder.idim, odim=cfg.decoder.odim, hidden=cfg.decoder.hidden,
                       n_layer=cfg.decoder.n_layer, bn_dim=cfg.decoder.bn_dim)
        dim, inter = cfg.vocos.backbone.init_args.dim, cfg.vocos.backbone.init_args.intermediate_dim
    decoder = DVAE(decoder_config=dec_cfg, dim=dec_cfg["idim"])
    with torch.no_grad():
        for block in decoder.decoder.decoder_block:
            block.weight.uniform_(0.05, 0.5, generator=gen)
    fe = cfg.vocos.feature_extractor.init_args
    head = cfg.vocos.head.init_args
    vocos = Vocos(
        feature_extractor=MelSpectrogramFeatures(
            sample_rate=fe.sample_rate, n_fft=fe.n_fft, hop_length=fe.hop_length,
            n_mels=fe.n_mels, padding=fe.padding),
        backbone=VocosBackbone(input_channels=fe.n_mels, dim=dim, intermediate_dim=inter,
                               num_layers=cfg.vocos.backbone.init_args.num_layers),
        head=ISTFTHead(dim=dim, n_fft=head.n_fft, hop_length=head.hop_length,
                       padding=head.padding),
    )
    return decoder.eval(), vocos.eval()


def hidden_dim(decoder: DVAE) -> int:
    """GPT hidden size the Decoder expects (two mel-rate frames per step)."""
    return 2 * decoder.decoder.conv_in[0].in_channels


STEPS_PER_SECOND = 24000 / SAMPLES_PER_STEP  # 46.875
UPSTREAM_STREAM_BATCH = 24  # InferCodeParams.stream_batch
UPSTREAM_PASS_FIRST = 2  # InferCodeParams.pass_first_n_batches
# The 3-sentence text of the first-audio comparison and the length of its
# first sentence in GPT steps (about 2.2 s of speech), used only for the
# upstream reference pass that split_text=True adds.
TEXT = ("Thanks for calling, your order is on its way. "
        "It left our warehouse this morning. It should arrive on Friday.")
FIRST_SENTENCE_STEPS = 104


def random_hidden(steps: int, dim: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(steps, dim, generator=torch.Generator().manual_seed(seed))


def upstream_chat(decoder: DVAE, vocos: Vocos):
    """A ChatTTS ``Chat`` whose decode path uses the given models."""
    import ChatTTS

    chat = ChatTTS.Chat()
    chat.decoder, chat.vocos, chat.device = decoder, vocos, torch.device("cpu")
    return chat


def upstream_decode_s(chat, hidden: torch.Tensor) -> float:
    """Seconds for one upstream decode of ``hidden`` (as its stream path does)."""
    t0 = time.perf_counter()
    chat._decode_to_wavs([hidden.clone()], True)
    return time.perf_counter() - t0


def upstream_stream_points(steps: int) -> list[int]:
    """Prefix lengths upstream decodes while streaming ``steps`` steps: every
    24th step, then the whole result once more at the end."""
    return list(range(UPSTREAM_STREAM_BATCH, steps + 1, UPSTREAM_STREAM_BATCH)) + [steps]


def ours_stream_s(vocoder: StreamingVocoder, hidden: torch.Tensor) -> tuple[float, int, float]:
    """Stream ``hidden`` one step per push. Returns (total vocoder seconds,
    steps until the first audio, seconds of the call that produced it)."""
    s = vocoder.start()
    total, first_steps, first_s = 0.0, 0, 0.0
    for i in range(hidden.shape[0]):
        t0 = time.perf_counter()
        out = s.push(hidden[i:i + 1])
        dt = time.perf_counter() - t0
        total += dt
        if len(out) and not first_steps:
            first_steps, first_s = i + 1, dt
    t0 = time.perf_counter()
    s.finish()
    return total + time.perf_counter() - t0, first_steps, first_s


def _fitted_upstream_times(chat, hidden: torch.Tensor, points: list[int]) -> dict[int, float]:
    """Upstream decode seconds per prefix length from a least-squares line
    through a few measured lengths (decode cost is linear in length), so a
    quick run need not decode ~20,000 steps."""
    probe = [24, 48, 72, 240, 480, points[-1]]
    measured = [upstream_decode_s(chat, hidden[:n]) for n in probe]
    slope, intercept = np.polyfit(probe, measured, 1)
    times = {n: max(0.0, intercept + slope * n) for n in points}
    times.update(zip(probe, measured))
    return times


def measure_gpt_step_s(steps: int) -> float:
    """Median seconds of one batch-1 decode step of a full-size random
    ChatTTS GPT body (transformers LlamaModel with a KV cache, as upstream
    drives it), after a 32-token prefill."""
    from transformers import DynamicCache, LlamaConfig, LlamaModel

    g = Config().gpt
    config = LlamaConfig(hidden_size=g.hidden_size, intermediate_size=g.intermediate_size,
                         num_attention_heads=g.num_attention_heads,
                         num_hidden_layers=g.num_hidden_layers,
                         max_position_embeddings=g.max_position_embeddings)
    torch.manual_seed(0)
    model = LlamaModel(config).eval()
    times = []
    with torch.inference_mode():
        cache = DynamicCache()
        model(inputs_embeds=torch.randn(1, 32, g.hidden_size), past_key_values=cache,
              use_cache=True)
        for _ in range(steps):
            t0 = time.perf_counter()
            model(inputs_embeds=torch.randn(1, 1, g.hidden_size), past_key_values=cache,
                  use_cache=True)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure_field(decoder: DVAE, vocos: Vocos, steps: int = 160) -> dict:
    """Perturb the middle step's hidden state; how far (in steps) does the
    audio change at all, above -60 dB and above -100 dB of the peak change."""
    vocoder = StreamingVocoder(decoder, vocos)
    h = random_hidden(steps, hidden_dim(decoder))
    mid = steps // 2
    bumped = h.clone()
    bumped[mid] += 1.0
    diff = np.abs(vocoder.one_shot(bumped) - vocoder.one_shot(h))
    diff = np.concatenate([diff, np.zeros(SAMPLES_PER_STEP // 2, dtype=diff.dtype)])
    per_step = diff.reshape(steps, SAMPLES_PER_STEP).max(axis=1)
    result = {}
    for name, floor in (("exact", 0.0), ("60db", 1e-3), ("100db", 1e-5)):
        hit = np.nonzero(per_step > floor * per_step.max())[0]
        result[f"field_{name}_before"] = int(mid - hit.min())
        result[f"field_{name}_after"] = int(hit.max() - mid)
    return result


def measure(quick: bool, gpt_step_s: float | None = None) -> dict:
    """Run the comparison; see the module docstring. ``gpt_step_s``: seconds
    per batch-1 GPT step (measured here when not given)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        return _measure(quick, gpt_step_s)
    finally:
        torch.set_num_threads(threads)


def _measure(quick: bool, gpt_step_s: float | None) -> dict:
    decoder, vocos = random_models(tiny=False, seed=0)
    dim = hidden_dim(decoder)
    steps = 937
    hidden = random_hidden(steps, dim)
    vocoder = StreamingVocoder(decoder, vocos)
    chat = upstream_chat(decoder, vocos)
    StreamingVocoder(decoder, vocos).one_shot(hidden[:24])  # warm kernels for both sides
    measured_gpt = gpt_step_s is None
    if measured_gpt:
        gpt_step_s = measure_gpt_step_s(8 if quick else 32)
        log.info("GPT step %.1f ms", 1000 * gpt_step_s)

    ours_total, first_steps, first_call_s = ours_stream_s(vocoder, hidden)
    points = upstream_stream_points(steps)
    if quick:
        upstream_times = _fitted_upstream_times(chat, hidden, points)
    else:
        upstream_times = {n: upstream_decode_s(chat, hidden[:n]) for n in sorted(set(points))}
    upstream_total = sum(upstream_times[n] for n in points)

    first_points = [UPSTREAM_STREAM_BATCH * k for k in range(1, UPSTREAM_PASS_FIRST + 2)]
    up_first_voc = sum(upstream_times.get(n) or upstream_decode_s(chat, hidden[:n])
                       for n in first_points)
    ours_first = first_steps * gpt_step_s + first_call_s
    up_first = first_points[-1] * gpt_step_s + up_first_voc
    reference_s = (FIRST_SENTENCE_STEPS * gpt_step_s
                   + upstream_decode_s(chat, random_hidden(FIRST_SENTENCE_STEPS, dim)))
    field = measure_field(decoder, vocos)

    result = {
        "text": TEXT,
        "utterance_steps": steps,
        "upstream_vocoder_modelled": quick,
        "utterance_s": steps / STEPS_PER_SECOND,
        "gpt_step_s": gpt_step_s,
        "gpt_step_measured": measured_gpt,
        "vocoder_ours_s": ours_total,
        "vocoder_upstream_s": upstream_total,
        "vocoder_ratio": ours_total / upstream_total,
        "steps_rendered_ours": vocoder.steps_rendered,
        "steps_rendered_upstream": sum(points),
        "first_audio_steps_ours": first_steps,
        "first_audio_steps_upstream": first_points[-1],
        "first_audio_ours_s": ours_first,
        "first_audio_upstream_s": up_first,
        "first_audio_ratio": ours_first / up_first,
        "upstream_first_audio_with_reference_s": up_first + reference_s,
        **field,
    }
    result["rows"] = [
        [f"vocoder time, streamed {result['utterance_s']:.1f} s utterance (s)",
         ours_total, upstream_total, result["vocoder_ratio"]],
        ["steps run through Decoder+Vocos", vocoder.steps_rendered, sum(points),
         vocoder.steps_rendered / sum(points)],
        ["time to first audio (s)", ours_first, up_first, result["first_audio_ratio"]],
        ["  GPT steps before first audio", first_steps, first_points[-1],
         first_steps / first_points[-1]],
        ["  upstream incl. split_text reference pass (s)", ours_first,
         result["upstream_first_audio_with_reference_s"],
         ours_first / result["upstream_first_audio_with_reference_s"]],
    ]
    return result


def _print_table(result: dict) -> None:
    print(f"{'metric':50s} {'ours':>10s} {'upstream':>10s} {'ratio':>7s}")
    for name, ours, up, ratio in result["rows"]:
        print(f"{name:50s} {ours:10.3f} {up:10.3f} {ratio:7.3f}")
    r = result
    how = "measured" if r["gpt_step_measured"] else "given"
    print(f"GPT step {1000 * r['gpt_step_s']:.1f} ms ({how}); receptive field: exact "
          f"-{r['field_exact_before']}/+{r['field_exact_after']} steps, "
          f">-60 dB -{r['field_60db_before']}/+{r['field_60db_after']}, "
          f">-100 dB -{r['field_100db_before']}/+{r['field_100db_after']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench vocoder", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="model upstream's 20 s stream from a few decodes")
    parser.add_argument("--field", action="store_true",
                        help="only measure the receptive field of full-size random models")
    parser.add_argument("--gpt-step-s", type=float, default=None,
                        help="seconds per GPT step (default: measured)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.field:
        torch.set_num_threads(2)
        print(json.dumps(measure_field(*random_models(tiny=False, seed=0))))
        return
    result = measure(args.quick, args.gpt_step_s)
    _print_table(result)
    print(json.dumps({k: v for k, v in result.items() if k not in ("rows", "text")}))


if __name__ == "__main__":
    main()
