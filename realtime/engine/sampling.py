"""Sampling audio codes, batched, exactly in upstream ChatTTS's order.

Per step and per codebook (upstream ``GPT.generate`` with ``gen_logits``):
logits / temperature -> repetition penalty over the last 16 codes of that
codebook (a logit < 0 is multiplied by penalty**count, else divided) ->
top-p (keeping at least 3) -> top-k (at least 3) -> EOS masked while fewer
than ``min_new_tokens`` codes exist -> a draw from the softmax.

Every parameter is per row, so jobs with different settings share a batch.
The draw is the Gumbel-max form of the same distribution, with noise that is
a hash of (job seed, step, codebook, code id): a job's codes depend only on
its own seed and logits, never on its batch mates or on how often other jobs
drew. No step here reads a value back to the host, and none takes a size
from the host that depends on the rows (top-k reads the k-th value from the
sort top-p already made), so the whole pipeline is captured in the decode
graph.

Thread: the model thread.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from realtime.engine.model.shapes import EOS_CODE

MIN_KEEP = 3  # upstream builds its top-p and top-k warpers with min_tokens_to_keep=3
PENALTY_WINDOW = 16
_MASK32 = 0xFFFFFFFF


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """An avalanche hash of 32-bit values held in int64 (no overflow: each
    product is a 32-bit value times a constant below 2**31)."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _MASK32
    x = x ^ (x >> 15)
    x = (x * 0x5BD1E995) & _MASK32
    return x ^ (x >> 16)


def counter_uniform(seed: torch.Tensor, step: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    """Uniform noise in (0, 1), [B, *shape], a pure function of (seed, step, index).

    ``seed``, ``step``: int64 [B] (seed already reduced to 32 bits).
    """
    n = shape[0] * shape[1]
    index = torch.arange(n, device=seed.device, dtype=torch.int64).view(1, *shape)
    key = _mix32(_mix32(seed ^ 0x3C6EF372) ^ ((step * 0x27D4EB2F) & _MASK32))  # [B]
    bits = _mix32(key.view(-1, 1, 1) ^ index)  # [B, Q, V]
    return unit_interval(bits)


def unit_interval(bits: torch.Tensor) -> torch.Tensor:
    """32-bit values (int64) -> float32 strictly inside (0, 1).

    The top 23 bits k give (k + 0.5) / 2**23: odd multiples of 2**-24, all
    exact in float32, the largest 1 - 2**-24. (With 24 bits the largest,
    1 - 2**-25, rounds to 1.0; the Gumbel noise is then +inf, a masked -inf
    logit becomes NaN and argmax picks it: a code top-k or the EOS mask had
    removed, about once per 7,000 job steps.)
    """
    return ((bits >> 9).to(torch.float32) + 0.5) * (1.0 / (1 << 23))


@dataclass
class RowParams:
    """Per-row sampling parameters as device tensors, all [B] (float32/int64)."""

    temperature: torch.Tensor
    top_p_cut: torch.Tensor  # 1 - top_p, computed in double on the host like upstream
    top_k: torch.Tensor  # already max(top_k, MIN_KEEP)
    penalty: torch.Tensor
    min_new: torch.Tensor
    seed: torch.Tensor

    @classmethod
    def build(cls, params: list, seeds: list[int], n_codes: int, device) -> RowParams:
        f32 = dict(dtype=torch.float32, device=device)
        i64 = dict(dtype=torch.int64, device=device)
        ks = [min(max(p.top_k, MIN_KEEP), n_codes) for p in params]
        return cls(
            temperature=torch.tensor([p.temperature for p in params], **f32),
            top_p_cut=torch.tensor([1.0 - p.top_p for p in params], **f32),
            top_k=torch.tensor(ks, **i64),
            penalty=torch.tensor([p.repetition_penalty for p in params], **f32),
            min_new=torch.tensor([p.min_new_tokens for p in params], **i64),
            seed=torch.tensor([s & _MASK32 for s in seeds], **i64),
        )

    def take(self, rows: torch.Tensor) -> RowParams:
        """The parameters of ``rows`` [B] (int64 on the device): per-slot
        tables in, per-row parameters out, without a host read."""
        return RowParams(*(t.index_select(0, rows) for t in (
            self.temperature, self.top_p_cut, self.top_k, self.penalty, self.min_new, self.seed)))


def process_logits(logits: torch.Tensor, history: torch.Tensor, step: torch.Tensor,
                   p: RowParams, eos: int = EOS_CODE) -> torch.Tensor:
    """Upstream's logit pipeline. ``logits`` [B, Q, V] fp32, ``history`` [B, Q, W]
    (the last codes; value V marks an empty place), ``step`` [B] codes so far;
    ``eos`` the id masked before ``min_new`` (the refine pass's is ``[Ebreak]``)."""
    b, q, v = logits.shape
    logits = logits / p.temperature.view(b, 1, 1)
    counts = torch.zeros(b, q, v + 1, device=logits.device, dtype=torch.float32)
    counts.scatter_add_(2, history, torch.ones_like(history, dtype=torch.float32))
    alpha = torch.pow(p.penalty.view(b, 1, 1), counts[..., :v])
    logits = torch.where(logits < 0, logits * alpha, logits / alpha)
    # top-p: drop the low tail whose cumulative probability is <= 1 - top_p.
    sorted_logits, order = torch.sort(logits, dim=-1)
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    drop_sorted = cumulative <= p.top_p_cut.view(b, 1, 1)
    drop_sorted[..., -MIN_KEEP:].fill_(False)  # a fill, not a tensor from host data
    drop = drop_sorted.scatter(-1, order, drop_sorted)
    logits = logits.masked_fill(drop, -float("inf"))
    # top-k: everything below the k-th largest value goes. The kept set of
    # top-p is a suffix of the ascending sort (its cumulative sum only
    # grows), so the k-th largest survivor is the sorted value at V - k, or
    # -inf when fewer than k survived: exactly torch.topk's k-th value, read
    # without a k from the host.
    kept_sorted = sorted_logits.masked_fill(drop_sorted, -float("inf"))
    kth = kept_sorted.gather(-1, (v - p.top_k).view(b, 1, 1).expand(b, q, 1))
    logits = logits.masked_fill(logits < kth, -float("inf"))
    early = (step < p.min_new).view(b, 1)
    logits[..., eos] = logits[..., eos].masked_fill(early, -float("inf"))
    return logits


def draw(logits: torch.Tensor, seed: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """One code per row and codebook: argmax(logits + Gumbel noise) -> [B, Q]."""
    u = counter_uniform(seed, step, (logits.shape[1], logits.shape[2]))
    gumbel = -torch.log(-torch.log(u))
    return torch.argmax(logits + gumbel, dim=-1)


def sample(logits: torch.Tensor, history: torch.Tensor, step: torch.Tensor,
           p: RowParams) -> torch.Tensor:
    return draw(process_logits(logits, history, step, p), p.seed, step)
