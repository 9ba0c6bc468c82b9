"""Hot-path bench: what a decode step and the vocoder cost the device, on the CPU.

Counts (tiny-random weights, the runner built for ``cpu:0`` as "the device",
bench/device_counts.py's method, bench/strict_graphs.py's capture stand-in):

- ``transfers_per_decode_step`` / ``launches_per_decode_step``: blocking
  host<->device transfers and kernel launches of one steady decode step at
  batch 8 (8 one-shot jobs running, none joining, leaving or streaming), on
  the graph path (a replay counts as one launch; what runs outside it counts
  op by op). ``eager_launches_per_decode_step`` is the same step without graphs;
- ``kv_bytes_per_decode_step_64x2048``: K/V bytes a decode step moves at
  full size in bf16, batch 64 of 64 slots, a 2048 bucket, from
  bench/device_counts.py's model of the step (``None`` where it is absent);
- ``vocoder_calls_per_step_32``: the most Decoder+Vocos calls in one step
  while 32 streams decode, joining in groups of 4 (so they are at different
  ages and their windows differ in length); ``vocoder_transfers_per_call``:
  blocking transfers of one such step's packed call.

Ratio (``batched_vocoder_ratio_8`` / ``_32``): process CPU time of the
batched vocoder over one call per stream, for 8 and 32 concurrent streamed
utterances (random hidden states, ``--seconds`` long, each stream pushing
every ``PUSH_EVERY`` of its steps as the runner does) that start together;
``batched_vocoder_ratio_staggered_*`` has their starts spread evenly over one
largest chunk (64 steps), the steady state of streams arriving at random,
where few windows fall due in the same step (32 streams with 64-step chunks:
about one window every other step) and so few share a call. Both ways
render exactly the same windows, interleaved step by step (alternating
which goes first), so machine noise hits both alike;
``max_window_diff_*`` is the largest difference between a window's samples
rendered both ways ("same outputs": float rounding). ``--models tiny`` (the
default) has the real layer counts and kernels but narrow channels, so a call
costs what its ~190 ops' dispatch costs, as on a GPU where launches, not
arithmetic, bound a window; ``--models full`` is the real width, where the
CPU's time goes to the matrix products that batching cannot shrink.

Prints a table and, as the last line, one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

BATCH = 8
STEPS_PER_SECOND = 24000 / 512


def _tiny_runner(capture=None, **options):
    from realtime.engine.api import RuntimeOptions
    from realtime.engine.build import build_runner
    from realtime.engine.model.shapes import TINY
    from realtime.engine.model.weights import random_assets

    return build_runner(RuntimeOptions(weights="tiny-random", **options),
                        assets=random_assets(TINY, 0), capture=capture)


def _request(i: int, n: int, streaming: bool = False):
    from realtime.engine.api import SamplingParams, SeedVoice, SegmentRequest

    texts = ("Hello world, this is a test.", "The test of the world and this, hello again.")
    return SegmentRequest(texts[i % 2], voice=SeedVoice(1), streaming=streaming,
                          params=SamplingParams(seed=i, min_new_tokens=n, max_new_tokens=n))


def decode_step_counts(graphs: bool) -> dict:
    """Counts of one steady decode step at batch ``BATCH`` (the third)."""
    from bench import strict_graphs
    from bench.device_counts import DEVICE, DeviceCounter
    from bench.driver import Driver

    runner = _tiny_runner(max_slots=BATCH, batch_sizes=(1, 2, 4, BATCH), kv_buckets=(64, 128),
                          device=str(DEVICE), capture=strict_graphs.StrictCapture() if graphs else None)
    if graphs:
        runner.warmup()
    d = Driver(runner)
    for i in range(BATCH):
        d.add(i, _request(i, 20))
    d.step()  # prefill
    d.step()  # the first decode builds the batch's sampling parameters
    d.step()
    with DeviceCounter() as counter:
        out = d.step()
    assert not out.finished and not out.audio and len(out.tokens) == BATCH
    c = counter.counts
    return {"blocking": c.blocking, "h2d": c.h2d, "d2h": c.d2h, "h2d_async": c.h2d_async,
            "launches": c.launches, "sites": dict(c.sites)}


def kv_bytes() -> dict | None:
    """K/V bytes per decode step at full size, bf16, batch 64 of 64 slots,
    a 2048 bucket, from bench/device_counts.py's model of the step (absent
    before the decode-path work of #12 landed: then None)."""
    from bench import device_counts

    model = getattr(device_counts, "kv_bytes_per_step", None)
    if model is None:
        return None
    from realtime.engine.model.shapes import FULL

    return {"chosen": model(FULL, 64, 64, 2048), "gather": model(FULL, 64, 64, 2048, in_place=False)}


def vocoder_calls_32() -> dict:
    """Most vocoder calls in a step, and one packed call's transfers, with
    32 streams joining 4 at a time."""
    from bench.device_counts import DEVICE, DeviceCounter
    from bench.driver import Driver

    runner = _tiny_runner(max_slots=32, batch_sizes=(1, 8, 32), kv_buckets=(128,),
                          device=str(DEVICE))
    d = Driver(runner)
    calls, transfers = [], None
    for step in range(400):
        if step % 3 == 0 and step < 24:
            for i in range(step // 3 * 4, step // 3 * 4 + 4):
                d.add(i, _request(i, 40, streaming=True))
        if not (d.live or d.pending):
            break
        before = runner.vocoder.calls
        with DeviceCounter() as counter:
            out = d.step()
        calls.append(runner.vocoder.calls - before)
        if calls[-1] and sum(1 for a in out.audio.values() if len(a)) > 1 and transfers is None:
            # The vocoder's share: this step's d2h beyond the decode's EOS read.
            transfers = counter.counts.d2h - 1
    return {"max": max(calls), "mean": sum(calls) / len(calls), "steps": len(calls),
            "packed_call_d2h": transfers}


def _arrivals(hidden: list[torch.Tensor], starts: list[int], every: int):
    """Per decode step, the (stream, new steps, is_last) pushed: each stream
    from its start decodes a step per step and pushes every ``every`` steps
    and at its end, as the runner does."""
    pushed = [0] * len(hidden)
    total = max(s + h.shape[0] for s, h in zip(starts, hidden))
    for now in range(1, total + 1):
        arrived = []
        for i, (s, h) in enumerate(zip(starts, hidden)):
            made = min(max(0, now - s), h.shape[0])
            if made - pushed[i] >= every or (made == h.shape[0] and made > pushed[i]):
                arrived.append((i, h[pushed[i]:made], made == h.shape[0]))
                pushed[i] = made
        yield arrived


def vocoder_ratio(vocoder, streams: int, seconds: float, staggered: bool, seed: int = 0) -> dict:
    """CPU seconds of one-call-per-stream vs packed rendering of the same
    windows, interleaved step by step; see the module docstring. Streams
    start together, or ``staggered`` evenly over one largest chunk."""
    from bench.vocoder import hidden_dim
    from realtime.engine.vocoder.batch import render_packed
    from realtime.engine.vocoder.stage import PUSH_EVERY

    steps = int(seconds * STEPS_PER_SECOND)
    gen = torch.Generator().manual_seed(seed)
    hidden = [torch.randn(steps, hidden_dim(vocoder.decoder), generator=gen) for _ in range(streams)]
    state = [vocoder.start() for _ in range(streams)]
    alone_s = packed_s = 0.0
    diff, windows_total, steps_with_work, calls_alone = 0.0, 0, 0, 0
    span = vocoder.max_chunk_steps if staggered else 0
    starts = [i * span // streams for i in range(streams)]
    for k, arrived in enumerate(_arrivals(hidden, starts, PUSH_EVERY)):
        due = []
        for i, h, last in arrived:
            state[i].append(h)
            due += [(i, w) for w in state[i].windows(final=last)]
        if not due:
            continue
        steps_with_work += 1
        windows_total += len(due)
        hs = [w.hidden for _, w in due]
        for which in ((0, 1) if k % 2 else (1, 0)):
            t0 = time.process_time()
            if which == 0:
                alone = [vocoder.render(x) for x in hs]
                alone_s += time.process_time() - t0
                calls_alone += len(hs)
            else:
                packed = render_packed(vocoder, hs)
                packed_s += time.process_time() - t0
        diff = max(diff, max(float(np.abs(a - p).max()) for a, p in zip(alone, packed)))
        for (i, w), audio in zip(due, alone):
            state[i].complete(w, audio)
    return {"streams": streams, "alone_cpu_s": alone_s, "packed_cpu_s": packed_s,
            "ratio": packed_s / alone_s, "max_window_diff": diff, "windows": windows_total,
            "calls_alone": calls_alone, "calls_packed": steps_with_work}


def measure(models: str, seconds: float, threads: int) -> dict:
    import realtime.engine.compat  # noqa: F401 - before ChatTTS and vocos
    from bench.vocoder import random_models
    from realtime.engine.vocoder.stream import StreamingVocoder

    torch.set_num_threads(threads)
    graphs, eager = decode_step_counts(True), decode_step_counts(False)
    calls = vocoder_calls_32()
    kv = kv_bytes()
    vocoder = StreamingVocoder(*random_models(tiny=models == "tiny", seed=0))
    ratios = {(n, staggered): vocoder_ratio(vocoder, n, seconds, staggered)
              for staggered in (False, True) for n in (8, 32)}
    return {"graphs": graphs, "eager": eager, "calls": calls, "ratios": ratios, "kv": kv,
            "models": models, "seconds": seconds, "threads": threads}


def headline(r: dict) -> dict:
    out = {
        "transfers_per_decode_step": r["graphs"]["blocking"],
        "launches_per_decode_step": r["graphs"]["launches"],
        "eager_transfers_per_decode_step": r["eager"]["blocking"],
        "eager_launches_per_decode_step": r["eager"]["launches"],
        "kv_bytes_per_decode_step_64x2048": r["kv"]["chosen"]["total"] if r.get("kv") else None,
        "vocoder_calls_per_step_32": r["calls"]["max"],
        "vocoder_transfers_per_call": r["calls"]["packed_call_d2h"],
    }
    for (n, staggered), x in r["ratios"].items():
        tag = f"staggered_{n}" if staggered else f"{n}"
        out[f"batched_vocoder_ratio_{tag}"] = round(x["ratio"], 3)
        out[f"max_window_diff_{tag}"] = float(f"{x['max_window_diff']:.2e}")
    out.update(vocoder_models=r["models"], utterance_s=r["seconds"], threads=r["threads"])
    return out


def _table(r: dict) -> str:
    g, e = r["graphs"], r["eager"]
    lines = [f"steady decode step, batch {BATCH} (tiny weights, cpu:0 as the device)",
             f"  {'':26}{'graphs':>10}{'eager':>10}"]
    for key in ("blocking", "h2d", "d2h", "h2d_async", "launches"):
        lines.append(f"  {key:26}{g[key]:>10}{e[key]:>10}")
    if r.get("kv"):
        kv = r["kv"]
        chosen, gather = kv["chosen"]["total"] / 1e9, kv["gather"]["total"] / 1e9
        lines.append(f"KV bytes per decode step, full size bf16, batch 64 of 64 slots x 2048: "
                     f"{chosen:.2f} GB (gathering: {gather:.2f} GB)")
    lines += [f"  transfer sites (graphs): {g['sites']}",
              f"vocoder calls per step, 32 streams: max {r['calls']['max']}, "
              f"mean {r['calls']['mean']:.2f} over {r['calls']['steps']} steps; "
              f"a packed call reads back {r['calls']['packed_call_d2h']} time(s)",
              f"vocoder CPU time, {r['models']} models, {r['seconds']:.0f} s utterances, "
              f"{r['threads']} thread(s):",
              f"  {'streams':>12}{'windows':>9}{'calls 1/stream':>16}{'packed calls':>14}"
              f"{'1/stream s':>12}{'packed s':>10}{'ratio':>8}{'max diff':>10}"]
    for (n, staggered), x in r["ratios"].items():
        name = f"{n} {'staggered' if staggered else 'together'}"
        lines.append(f"  {name:>12}{x['windows']:>9}{x['calls_alone']:>16}{x['calls_packed']:>14}"
                     f"{x['alone_cpu_s']:>12.2f}{x['packed_cpu_s']:>10.2f}{x['ratio']:>8.3f}"
                     f"{x['max_window_diff']:>10.1e}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench hotpath", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", choices=("tiny", "full"), default="tiny",
                        help="vocoder width for the CPU-time ratio (default tiny)")
    parser.add_argument("--seconds", type=float, default=20.0, help="utterance length")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    result = measure(args.models, args.seconds, args.threads)
    print(_table(result))
    print(json.dumps(headline(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
