"""How far the CPU's reduced precisions drift from fp32: first differing
greedy step, per-step logit KL, hidden-state error, audio SNR.

Set-ups (``--precision``, repeatable): ``int4`` and ``int8`` (ONNX Runtime,
the CPU engine for them), ``ort-fp32`` (ONNX Runtime's fp32 graph: rounding
only), ``vocoder-int8`` (that fp32 decoder with ONNX Runtime's int8 vocoder:
the vocoder's share alone); default: all of them where onnxruntime is
installed. For full-size random weights (one seed) and tiny-random weights (three
seeds), three prompts each (``--tiny-only`` skips the full size), each prompt
runs through models built from the same assets: fp32 on our torch decoder
(upstream's codes) and each set-up. Then, per set-up:

- greedy: each model decodes ``--steps`` codes by argmax of its own raw logits
  (no temperature, penalty or top-p, EOS ignored, so the stream never ends
  early); reported: the first step whose 4 codes differ (``None``: none did);
- teacher-forced: the model is fed the fp32 model's greedy codes, so both
  see the same history at every step; reported per step, averaged over the 4
  codebooks: KL(fp32 || other) of the softmax at temperature 1 and at 0.3
  (upstream's sampling temperature: sharper, so larger), the share of
  (step, codebook) pairs whose top code differs, and the relative error of the
  last hidden state. Median and max over steps;
- audio: those teacher-forced hidden states rendered by the set-up's own
  vocoder against fp32's hidden states through fp32's vocoder: SNR in dB
  (``audio_snr_db``), and fp32's hidden states through the set-up's vocoder
  (``vocoder_snr_db``: its share). ``ort-fp32`` gives the scale: how soon
  fp32 rounding alone diverges.

Prints a table and, last, one JSON line (``cpu``, ``precisions``, and per
set-up ``full`` and ``tiny``). Random weights are not trained ones: a
trained model's activations have outlier channels that int8 inputs handle
worse, so these figures are a floor, not a promise.
``python -m bench precision`` is the same bench.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch

PROMPTS = ("The quick brown fox jumps over the lazy dog, and then it runs far away "
           "into the forest where nobody can find it again.",
           "Please hold the line, your call is important to us.",
           "On the third day the rain stopped, and the whole valley smelled of wet pine.")
SNR_CAP_DB = 200.0


def _prompt(runner, text: str):
    from realtime.engine.api import SegmentRequest

    prompt = runner.prepare(SegmentRequest(text)).work.prompt
    return runner.model.embed_prompt(prompt.ids, prompt.speaker, runner.front.spk_emb_id)


@torch.no_grad()
def trace(model, x: torch.Tensor, steps: int, forced: torch.Tensor | None = None):
    """Greedy (or ``forced``) decode of prompt embeddings ``x`` [L, D]:
    codes [steps, Q], logits [steps, Q, V], hidden [steps, D]."""
    length = x.shape[0]
    cache = model.new_cache(1, length + steps + 1, 1)
    slot = torch.tensor([0])
    hidden = model.prefill(x.unsqueeze(0), slot, cache)[:, -1]
    codes, logits, hiddens = [], [], []
    for t in range(steps):
        step_logits = model.logits(hidden)  # [1, Q, V]
        code = step_logits.argmax(-1) if forced is None else forced[t].unsqueeze(0)
        codes.append(code[0])
        logits.append(step_logits[0])
        hiddens.append(hidden[0])
        pos = torch.tensor([length + t])
        hidden = model.decode(model.embed_codes(code), slot, pos, cache, length + t + 1,
                              first_slot=0)
    return torch.stack(codes), torch.stack(logits), torch.stack(hiddens)


def _first_difference(a: torch.Tensor, b: torch.Tensor) -> int | None:
    """The first step whose codes differ in any codebook, None if none does."""
    differs = (a != b).any(-1).nonzero()
    return int(differs[0]) if len(differs) else None


def _kl(ref: torch.Tensor, other: torch.Tensor, temperature: float) -> torch.Tensor:
    """KL(ref || other) per step, mean over codebooks: [steps]."""
    p = (ref.double() / temperature).log_softmax(-1)  # double: no negative rounding
    q = (other.double() / temperature).log_softmax(-1)
    return (p.exp() * (p - q)).sum(-1).mean(-1)


def snr_db(ref, other) -> float:
    """10 log10(|ref|^2 / |ref - other|^2) of two sample arrays (the shorter
    length), capped at ``SNR_CAP_DB`` (identical samples: the cap, not infinity)."""
    import numpy as np

    n = min(len(ref), len(other))
    a, b = np.asarray(ref[:n], dtype=np.float64), np.asarray(other[:n], dtype=np.float64)
    noise = float(((a - b) ** 2).sum())
    if noise == 0:
        return SNR_CAP_DB
    return min(SNR_CAP_DB, 10 * float(np.log10(float((a ** 2).sum()) / noise)))


# set-up -> (cpu engine, precision, vocoder precision)
SETUPS = {"int4": ("ort", "int4", "fp32"), "int8": ("ort", "int8", "fp32"),
          "ort-fp32": ("ort", "fp32", "fp32"), "vocoder-int8": ("ort", "fp32", "int8")}


def available_precisions() -> tuple[str, ...]:
    """The set-ups this machine runs: all of them with onnxruntime, else none."""
    from realtime.engine.cpu import engine

    return () if engine.ort_missing() else tuple(SETUPS)


def compare(assets, steps: int, precisions: tuple[str, ...] = ("int8",),
            texts: tuple[str, ...] = PROMPTS) -> dict[str, list[dict]]:
    """Divergence of each precision from fp32 on ``assets``, one result per
    prompt text and precision; see the module docstring."""
    from realtime.engine.api import RuntimeOptions
    from realtime.engine.build import build_runner

    opts = dict(weights="random", device="cpu", max_slots=1, kv_buckets=(512,), cpu_engine="torch")
    fp32 = build_runner(RuntimeOptions(**opts, precision="fp32"), assets=assets)
    others = {p: build_runner(RuntimeOptions(**{**opts, "cpu_engine": SETUPS[p][0]}, precision=SETUPS[p][1],
                                             vocoder_precision=SETUPS[p][2]), assets=assets)
              for p in precisions}
    out: dict[str, list[dict]] = {p: [] for p in precisions}
    for text in texts:
        x = _prompt(fp32, text)
        ref = trace(fp32.model, x, steps)
        audio32 = fp32.vocoder.render(ref[2])
        for p, runner in others.items():
            row = _compare_one(ref, runner.model, x, steps)
            # Audio of the same (fp32's) codes: the precision's hidden states
            # through its own vocoder, and fp32's through it (its vocoder alone).
            row["audio_snr_db"] = snr_db(audio32, runner.vocoder.render(row.pop("_hidden")))
            row["vocoder_snr_db"] = snr_db(audio32, runner.vocoder.render(ref[2]))
            out[p].append(row)
    return out


def _compare_one(ref, other, x: torch.Tensor, steps: int) -> dict:
    codes32, logits32, hidden32 = ref
    codes_p, _, _ = trace(other, x, steps)
    _, logits_p, hidden_p = trace(other, x, steps, forced=codes32)
    kl1, kl03 = _kl(logits32, logits_p, 1.0), _kl(logits32, logits_p, 0.3)
    top_differs = (logits32.argmax(-1) != logits_p.argmax(-1)).float()
    rel = (hidden_p - hidden32).norm(dim=-1) / hidden32.norm(dim=-1)

    def med_max(t: torch.Tensor) -> tuple[float, float]:
        return float(t.median()), float(t.max())

    return {
        "steps": steps,
        "first_differing_step": _first_difference(codes32, codes_p),
        "kl_t1_median": med_max(kl1)[0], "kl_t1_max": med_max(kl1)[1],
        "kl_t03_median": med_max(kl03)[0], "kl_t03_max": med_max(kl03)[1],
        "top_code_differs": float(top_differs.mean()),
        "hidden_rel_err_median": med_max(rel)[0], "hidden_rel_err_max": med_max(rel)[1],
        "_hidden": hidden_p,
    }


def measure(steps: int, tiny_steps: int, full: bool = True,
            precisions: tuple[str, ...] = ("int8",)) -> dict:
    import realtime.engine.compat  # noqa: F401
    from realtime.engine.cpu.info import describe
    from realtime.engine.model.shapes import FULL, TINY
    from realtime.engine.model.weights import random_assets

    result: dict = {"cpu": describe(), "threads": torch.get_num_threads(),
                    "precisions": list(precisions)}
    tiny: dict[str, list[dict]] = {p: [] for p in precisions}
    for seed in (0, 1, 2):
        for p, runs in compare(random_assets(TINY, seed), tiny_steps, precisions).items():
            tiny[p] += runs
    big = compare(random_assets(FULL, 0), steps, precisions) if full else {}
    for p in precisions:
        result[p] = {"tiny": _pool(tiny[p])}
        if full:
            result[p]["full"] = _pool(big[p])
    return result


def _pool(runs: list[dict]) -> dict:
    """Several runs (seeds x prompts): first differing steps listed, other
    figures as medians of the runs' figures (maxima: the largest; SNRs: the
    smallest too)."""
    out = {"runs": len(runs), "first_differing_step": [r["first_differing_step"] for r in runs]}
    for key in runs[0]:
        if key not in out and key != "steps":
            pool = max if key.endswith("_max") else statistics.median
            out[key] = pool(r[key] for r in runs)
            if key.endswith("_snr_db"):
                out[key.replace("_snr_db", "_snr_db_min")] = min(r[key] for r in runs)
    out["steps"] = runs[0]["steps"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench int8", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200, help="greedy steps, full size")
    parser.add_argument("--tiny-steps", type=int, default=400, help="greedy steps, tiny")
    parser.add_argument("--tiny-only", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", action="append", choices=tuple(SETUPS),
                        help="repeatable; default: each this CPU runs")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    precisions = tuple(args.precision or available_precisions())
    result = measure(args.steps, args.tiny_steps, full=not args.tiny_only, precisions=precisions)
    print(f"cpu: {result['cpu']}")
    for p, name in ((p, n) for p in precisions for n in ("full", "tiny")):
        if name in result[p]:
            r = result[p][name]
            print(f"{p} {name}: first differing greedy step {r['first_differing_step']} of {r['steps']}; "
                  f"KL t=1 median {r['kl_t1_median']:.2e} max {r['kl_t1_max']:.2e}; "
                  f"KL t=0.3 median {r['kl_t03_median']:.2e} max {r['kl_t03_max']:.2e}; "
                  f"top code differs {r['top_code_differs']:.2%}; hidden rel err median "
                  f"{r['hidden_rel_err_median']:.2e} max {r['hidden_rel_err_max']:.2e}; audio SNR "
                  f"median {r['audio_snr_db']:.1f} dB min {r['audio_snr_db_min']:.1f} "
                  f"(vocoder alone {r['vocoder_snr_db']:.1f})")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
