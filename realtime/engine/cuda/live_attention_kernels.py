"""The Triton kernels of ``live_attention`` (see its docstring for the
contract): ``split`` reduces one chunk of a (row, head)'s live positions to
an fp32 running max, sum and weighted value sum; ``combine`` merges the
chunks. Imported on first use only, so that ``TRITON_INTERPRET`` (Triton's
CPU interpreter, the tests') is read when the kernels are decorated; the
interpreter needs ``tl`` among the module's globals.

Thread: the model thread.
"""

import triton
import triton.language as tl


@triton.jit  # type: ignore[untyped-decorator]
def split(q_ptr, k_ptr, v_ptr, slots_ptr, lengths_ptr, part_ptr,
          sqb, sqh, sqd, sks, skh, skl, skd, svs, svh, svl, svd, spb, sph, sps, spd,
          scale, CHUNK: tl.constexpr, BLOCK: tl.constexpr, DH: tl.constexpr):
    row, head, chunk = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    slot = tl.load(slots_ptr + row)
    length = tl.load(lengths_ptr + row)
    d = tl.arange(0, DH)
    q = tl.load(q_ptr + row * sqb + head * sqh + d * sqd).to(tl.float32) * scale
    k_base = k_ptr + slot * sks + head * skh
    v_base = v_ptr + slot * svs + head * svh
    start = chunk * CHUNK
    end = tl.minimum(start + CHUNK, length)
    best = tl.max(tl.full([BLOCK], float("-inf"), tl.float32), 0)
    total = tl.sum(tl.zeros([BLOCK], tl.float32), 0)
    acc = tl.zeros([DH], tl.float32)
    for off in range(start, end, BLOCK):
        pos = off + tl.arange(0, BLOCK)
        live = pos < end
        keys = tl.load(k_base + pos[:, None] * skl + d[None, :] * skd, mask=live[:, None], other=0.0)
        scores = tl.where(live, tl.sum(keys.to(tl.float32) * q[None, :], 1), float("-inf"))
        new_best = tl.maximum(best, tl.max(scores, 0))
        p = tl.exp(scores - new_best)
        shrink = tl.exp(best - new_best)
        values = tl.load(v_base + pos[:, None] * svl + d[None, :] * svd, mask=live[:, None], other=0.0)
        acc = acc * shrink + tl.sum(p[:, None] * values.to(tl.float32), 0)
        total = total * shrink + tl.sum(p, 0)
        best = new_best
    base = part_ptr + row * spb + head * sph + chunk * sps
    tl.store(base + d * spd, acc)
    tl.store(base + DH * spd, best)
    tl.store(base + (DH + 1) * spd, total)

@triton.jit  # type: ignore[untyped-decorator]
def combine(part_ptr, out_ptr, spb, sph, sps, spd, sob, soh, sod,
            SPLITS: tl.constexpr, SPLITS_P2: tl.constexpr, DH: tl.constexpr):
    row, head = tl.program_id(0), tl.program_id(1)
    s = tl.arange(0, SPLITS_P2)
    d = tl.arange(0, DH)
    used = s < SPLITS
    base = part_ptr + row * spb + head * sph + s * sps
    best = tl.load(base + DH * spd, mask=used, other=float("-inf"))
    total = tl.load(base + (DH + 1) * spd, mask=used, other=0.0)
    # Chunk 0 always holds position 0, so the overall max is finite.
    weight = tl.exp(best - tl.max(best, 0))
    acc = tl.load(base[:, None] + d[None, :] * spd, mask=used[:, None], other=0.0)
    out = tl.sum(acc * weight[:, None], 0) / tl.sum(total * weight, 0)
    tl.store(out_ptr + row * sob + head * soh + d * sod, out.to(out_ptr.dtype.element_ty))
