"""How far ``--precision int8`` drifts from fp32: first differing greedy step, per-step logit KL.

For full-size random weights (one seed) and tiny-random weights (three
seeds), three prompts each (``--tiny-only`` skips the full size), each prompt
runs through ``StaticGPT`` models built from the same assets: fp32
(``cpu_gemm`` auto) and int8. Then:

- greedy: each model decodes ``--steps`` codes by argmax of its own raw logits
  (no temperature, penalty or top-p, EOS ignored, so the stream never ends
  early); reported: the first step whose 4 codes differ (``None``: none did);
- teacher-forced: the int8 model is fed the fp32 model's greedy codes, so both
  see the same history at every step; reported per step, averaged over the 4
  codebooks: KL(fp32 || int8) of the softmax at temperature 1 and at 0.3
  (upstream's sampling temperature: sharper, so larger), the share of
  (step, codebook) pairs whose top code differs, and the relative error of the
  last hidden state. Median and max over steps;
- for scale, the same greedy comparison between two fp32 backends (``mm``
  against the one ``auto`` picks): how soon fp32 rounding alone diverges.

Prints a table and, last, one JSON line. Random weights are not trained ones:
a trained model's activations have outlier channels that per-tensor int8
inputs handle worse, so these figures are a floor, not a promise.
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


def _prompt(runner, text: str):
    from realtime.runtime.api import SegmentRequest

    prompt = runner.prepare(SegmentRequest(text)).work.prompt
    return runner.model.embed_prompt(prompt.ids, prompt.speaker, runner.front.spk_emb_id)


@torch.no_grad()
def trace(model, x: torch.Tensor, steps: int, forced: torch.Tensor | None = None):
    """Greedy (or ``forced``) decode of prompt embeddings ``x`` [L, D]:
    codes [steps, Q], logits [steps, Q, V], hidden [steps, D]."""
    from realtime.runtime.model import KVCache

    length = x.shape[0]
    cache = KVCache(model.shape, 1, length + steps + 1, model.dtype, model.device)
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


def compare(assets, steps: int, texts: tuple[str, ...] = PROMPTS) -> list[dict]:
    """Divergence of int8 from fp32 on ``assets``, one result per prompt text;
    see the module docstring."""
    from realtime.runtime.api import RuntimeOptions
    from realtime.runtime.build import build_runner

    opts = dict(weights="random", device="cpu", max_slots=1, kv_buckets=(512,))
    fp32 = build_runner(RuntimeOptions(**opts), assets=assets)
    int8 = build_runner(RuntimeOptions(**opts, precision="int8"), assets=assets)
    plain = build_runner(RuntimeOptions(**opts, cpu_gemm="mm"), assets=assets)
    return [_compare_one(fp32.model, int8.model, plain.model, _prompt(fp32, t), steps) for t in texts]


def _compare_one(fp32, int8, plain, x: torch.Tensor, steps: int) -> dict:
    codes32, logits32, hidden32 = trace(fp32, x, steps)
    codes8, _, _ = trace(int8, x, steps)
    codes_mm, _, _ = trace(plain, x, steps)
    _, logits8, hidden8 = trace(int8, x, steps, forced=codes32)
    kl1, kl03 = _kl(logits32, logits8, 1.0), _kl(logits32, logits8, 0.3)
    top_differs = (logits32.argmax(-1) != logits8.argmax(-1)).float()
    rel = (hidden8 - hidden32).norm(dim=-1) / hidden32.norm(dim=-1)

    def med_max(t: torch.Tensor) -> tuple[float, float]:
        return float(t.median()), float(t.max())

    return {
        "steps": steps,
        "first_differing_step": _first_difference(codes32, codes8),
        "fp32_backends_first_differing_step": _first_difference(codes32, codes_mm),
        "kl_t1_median": med_max(kl1)[0], "kl_t1_max": med_max(kl1)[1],
        "kl_t03_median": med_max(kl03)[0], "kl_t03_max": med_max(kl03)[1],
        "top_code_differs": float(top_differs.mean()),
        "hidden_rel_err_median": med_max(rel)[0], "hidden_rel_err_max": med_max(rel)[1],
    }


def measure(steps: int, tiny_steps: int, full: bool = True) -> dict:
    import realtime.runtime.compat  # noqa: F401
    from realtime.runtime.cpu.info import describe
    from realtime.runtime.shapes import FULL, TINY
    from realtime.runtime.weights import random_assets

    result = {"cpu": describe(), "threads": torch.get_num_threads()}
    tiny = [run for seed in (0, 1, 2) for run in compare(random_assets(TINY, seed), tiny_steps)]
    result["tiny"] = _pool(tiny)
    if full:
        result["full"] = _pool(compare(random_assets(FULL, 0), steps))
    return result


def _pool(runs: list[dict]) -> dict:
    """Several runs (seeds x prompts): first differing steps listed, other
    figures as medians of the runs' figures (maxima: the largest)."""
    firsts = ("first_differing_step", "fp32_backends_first_differing_step")
    out = {"runs": len(runs), **{k: [r[k] for r in runs] for k in firsts}}
    for key in runs[0]:
        if key not in out and key != "steps":
            pool = max if key.endswith("_max") else statistics.median
            out[key] = pool(r[key] for r in runs)
    out["steps"] = runs[0]["steps"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench int8", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200, help="greedy steps, full size")
    parser.add_argument("--tiny-steps", type=int, default=400, help="greedy steps, tiny")
    parser.add_argument("--tiny-only", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    result = measure(args.steps, args.tiny_steps, full=not args.tiny_only)
    print(f"cpu: {result['cpu']}")
    for name in ("full", "tiny"):
        if name in result:
            r = result[name]
            print(f"{name}: first differing greedy step {r['first_differing_step']} of {r['steps']} "
                  f"(fp32 mm vs auto: {r['fp32_backends_first_differing_step']}); "
                  f"KL t=1 median {r['kl_t1_median']:.2e} max {r['kl_t1_max']:.2e}; "
                  f"KL t=0.3 median {r['kl_t03_median']:.2e} max {r['kl_t03_max']:.2e}; "
                  f"top code differs {r['top_code_differs']:.2%}; hidden rel err median "
                  f"{r['hidden_rel_err_median']:.2e} max {r['hidden_rel_err_max']:.2e}")
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
