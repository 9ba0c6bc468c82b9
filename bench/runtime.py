"""Runtime benchmark: our static-KV decode vs upstream ChatTTS, same weights, CPU.

Full-size random weights (the real architecture), side by side in one process:
- decode steps per second at batch 1 and 8 through ``ModelRunner.execute``
  (sampling and the per-step host read included) in fp32 on the engine that
  serves it (ONNX Runtime where installed: the ``ours_*``/``decode_speedup_*``
  keys), on our torch decoder (``torch_*``: upstream's codes exactly) and in
  int8 (ONNX Runtime's), against
  upstream ``GPT.generate`` (its per-step cost: the time difference between
  two generation lengths, so its prefill cancels out). Rounds alternate
  between all of them; medians are reported;
- one streamed interactive utterance end to end through the real server and a
  real client socket, fp32 and int8 (``bench.stream_rtf``): realtime factor,
  and the server's per-step cost beside the runtime's: rounds alternate the
  utterance through the server with a replay of the steps it recorded
  (``--record-steps``: the same plans, riders included) through this
  process's runner alone;
- time to first audio and total vocoder time for a streamed 20 s utterance,
  from ``bench.vocoder.measure`` (ours vs upstream's stream scheme);
- the refine pass's cost to first audio, on vs off (``bench.refine``);
- the CPU (model name, ISA flags, kernel limits from the environment), the
  weight memory per set-up and peak resident memory.

Prints a table and, as the last line, one JSON object with (among others)
``cpu``, ``decode_speedup_bs1``, ``decode_speedup_bs8``,
``int8_step_ms_bs1``, ``int8_speedup_bs1``, ``int8_vs_fp32_bs1``/``_bs8``
(over fp32, same rounds), ``rtf_stream_fp32``, ``rtf_stream_int8``,
``first_audio_ratio``, ``vocoder_ratio``, ``refine_added_ms``,
``refine_ms_per_token`` and ``peak_rss_mb``. ``--quick`` takes a few
minutes; ``--no-server`` skips the end-to-end part. To
see an AVX2-only machine on an AVX-512 one, run it under
``ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2
FBGEMM_ENABLE_INSTRUCTIONS=AVX2`` (the server subprocess inherits them).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time

import torch

PROMPT_TEXT = ("The quick brown fox jumps over the lazy dog, and then it runs far away "
               "into the forest where nobody can find it again.")


def _ours_step_s(runner, batch: int, steps: int) -> float:
    from bench.driver import Driver
    from realtime.engine.api import SamplingParams, SegmentRequest
    driver = Driver(runner)
    ids = list(range(1000, 1000 + batch))
    params = SamplingParams(seed=1, min_new_tokens=steps + 5, max_new_tokens=steps + 5)
    for j in ids:
        driver.add(j, SegmentRequest(PROMPT_TEXT, params=params))
    driver.step()  # prefill
    driver.step()  # warm
    start = time.perf_counter()
    for _ in range(steps):
        out = driver.step()
        assert not out.finished, out.finished
    elapsed = (time.perf_counter() - start) / steps
    driver.step(release=tuple(ids))
    return elapsed


def _upstream_runs_s(upstream, prompt, batch: int, short: int, long: int) -> tuple[float, float]:
    """Seconds of one ``short``- and one ``long``-code upstream generation."""
    prompts = [prompt] * batch

    def run(n):
        start = time.perf_counter()
        upstream.generate(prompts, min_new_tokens=n, max_new_tokens=n, seed=1)
        return time.perf_counter() - start

    run(2)  # warm
    return run(short), run(long)


def _runners(assets, threads: int) -> dict:
    """name -> runner: ``auto`` (fp32 on ONNX Runtime, where installed, else
    torch), ``torch`` (our torch decoder, fp32) and ``int8`` (ONNX Runtime's)."""
    from bench.stream_rtf import RUNNER_OPTIONS
    from realtime.engine.api import RuntimeOptions
    from realtime.engine.build import build_runner
    from realtime.engine.cpu.engine import ort_missing

    # The server of the end-to-end part runs with the same slots and KV length,
    # so that the runners can replay its steps.
    base = dict(weights="random", device="cpu", cpu_threads=threads, **RUNNER_OPTIONS)
    torch_fp32 = dict(precision="fp32", cpu_engine="torch")
    modes: dict[str, dict] = {"auto": torch_fp32}
    if ort_missing() is None:  # ONNX Runtime's fp32 measured faster than torch's (docs/runtime.md)
        modes = {"auto": dict(precision="fp32", cpu_engine="ort"), "torch": torch_fp32,
                 "int8": dict(precision="int8")}
    runners = {}
    for name, extra in modes.items():
        runners[name] = build_runner(RuntimeOptions(**base, **extra), assets=assets)
        runners[name].front.warmup()
    return runners


def _threads_for(runner, threads: int) -> None:
    """torch's threads as the runner's build left them: one beside ONNX Runtime."""
    from realtime.engine.ort.model import OrtGPT

    torch.set_num_threads(1 if isinstance(runner.model, OrtGPT) else threads)


def _decode_rounds(runners: dict, upstream, prompt, quick: bool, threads: int = 2) -> dict:
    steps = 8 if quick else 40
    short, long = (4, 12) if quick else (10, 50)
    rounds = 3 if quick else 5
    ours: dict[tuple[str, int], list[float]] = {}
    up: dict[tuple[int, int], list[float]] = {}  # (batch, codes) -> seconds per run
    for r in range(rounds):
        # Alternate everything within a round: other processes share this CPU.
        order = list(runners) if r % 2 == 0 else list(reversed(runners))
        for batch in (1, 8):
            for name in order:
                _threads_for(runners[name], threads)
                ours.setdefault((name, batch), []).append(_ours_step_s(runners[name], batch, steps))
            torch.set_num_threads(threads)
            t_short, t_long = _upstream_runs_s(upstream, prompt, batch, short, long)
            up.setdefault((batch, short), []).append(t_short)
            up.setdefault((batch, long), []).append(t_long)
    result = {}
    for batch in (1, 8):
        # Upstream's step: the difference of the two run lengths' medians (a
        # difference per round would reward a stalled short run, even below zero).
        up_ms = (statistics.median(up[(batch, long)]) - statistics.median(up[(batch, short)])) \
            / (long - short) * 1e3
        result[f"upstream_step_ms_bs{batch}"] = round(up_ms, 2)
        for name in runners:
            ms = statistics.median(ours[(name, batch)]) * 1e3
            key = {"auto": "ours", "int8": "int8"}.get(name, name)
            result[f"{key}_step_ms_bs{batch}"] = round(ms, 2)
            speedup = "decode_speedup" if name == "auto" else f"{key}_speedup"
            result[f"{speedup}_bs{batch}"] = round(up_ms / ms, 3)
        if "int8" in runners:  # against fp32, same rounds
            result[f"int8_vs_fp32_bs{batch}"] = round(
                result[f"ours_step_ms_bs{batch}"] / result[f"int8_step_ms_bs{batch}"], 3)
    return result


def _stream(result: dict, runners: dict, threads: int, rounds: int) -> None:
    """Per precision: one server; rounds alternate an utterance through it with
    a replay of its recorded steps through this process's runner; medians."""
    from bench.stream_rtf import StreamServer
    from realtime.engine.step_log import replay

    for precision, name in (("fp32", "auto"), ("int8", "int8")):
        if name not in runners:
            result[f"rtf_stream_{precision}"] = None
            continue
        runs, refs = [], []
        engine = ("--cpu-engine", runners[name].model.engine)
        with StreamServer(precision, threads, extra_args=engine) as server:
            for _ in range(rounds):
                runs.append(server.speak())
                _threads_for(runners[name], threads)
                refs.append(replay(runners[name], runs[-1].pop("records")))

        def med(key: str, rows: list[dict]) -> float | None:
            values = [r[key] for r in rows if r[key] is not None]
            return round(statistics.median(values), 3) if values else None

        result[f"rtf_stream_{precision}"] = med("rtf", runs)
        result[f"stream_audio_s_{precision}"] = med("audio_s", runs)
        result[f"stream_first_audio_ms_{precision}"] = med("first_audio_ms", runs)
        result[f"server_step_ms_{precision}"] = med("server_step_ms", runs)
        result[f"server_execute_ms_{precision}"] = med("execute_ms", runs)
        result[f"runtime_stream_step_ms_{precision}"] = med("step_ms", refs)
        result[f"replay_failed_steps_{precision}"] = sum(f["failed"] for f in refs)
        ratios = [r["server_step_ms"] / f["step_ms"] for r, f in zip(runs, refs)]
        result[f"serving_overhead_{precision}"] = round(statistics.median(ratios) - 1, 3)


def measure(quick: bool, threads: int = 2, server: bool = True) -> dict:
    import realtime.engine.compat  # noqa: F401
    from bench.upstream import UpstreamGPT
    from realtime.engine.api import SegmentRequest
    from realtime.engine.cpu import omp_env
    from realtime.engine.cpu.info import describe
    from realtime.engine.model.shapes import FULL
    from realtime.engine.model.weights import random_assets

    torch.set_num_threads(threads)
    assets = random_assets(FULL, seed=0)
    runners = _runners(assets, threads)
    auto = runners["auto"]
    upstream = UpstreamGPT(assets)
    prompt = auto.prepare(SegmentRequest(PROMPT_TEXT)).work.prompt
    result = {"cpu": describe(), "threads": threads, "omp": omp_env.describe(),
              "prompt_tokens": prompt.length}
    result.update(_decode_rounds(runners, upstream, prompt, quick, threads))
    for name, runner in runners.items():
        result[f"weights_mb_{name}"] = round(runner.model.weight_nbytes / 2**20, 1)
    from bench.refine import measure as refine_measure
    result.update(refine_measure(auto, rounds=3 if quick else 5))
    del upstream
    if server:
        _stream(result, runners, threads, rounds=2 if quick else 3)
    del runners, auto
    try:
        from bench.vocoder import measure as vocoder_measure
    except ImportError:
        vocoder_measure = None
    if vocoder_measure is not None:
        voc = vocoder_measure(quick, gpt_step_s=result["ours_step_ms_bs1"] / 1e3)
        result["first_audio_ratio"] = voc.get("first_audio_ratio")
        result["vocoder_ratio"] = voc.get("vocoder_ratio")
        result["vocoder_rows"] = voc.get("rows", [])
    else:
        result["first_audio_ratio"] = result["vocoder_ratio"] = None
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return result


def _num(x) -> str:
    return f"{x:.3f}" if isinstance(x, float) else str(x)


def _table(r: dict) -> str:
    lines = [f"cpu: {r['cpu']}",
             f"{'measure':<38}{'ours':>12}{'upstream':>12}{'ratio':>10}"]
    for b in (1, 8):
        up = r[f"upstream_step_ms_bs{b}"]
        for key, label in (("ours", "fp32"), ("torch", "fp32 torch"), ("int8", "int8")):
            ms = r.get(f"{key}_step_ms_bs{b}")
            if ms is not None:
                lines.append(f"{f'decode step ms, batch {b}, {label}':<38}{ms:>12}{up:>12}"
                             f"{up / ms:>9.3f}x")
    for p in ("fp32", "int8"):
        if r.get(f"rtf_stream_{p}") is not None:
            lines.append(f"{f'server stream RTF, {p}':<38}{r[f'rtf_stream_{p}']:>12}")
            lines.append(f"{f'  step ms: server / runtime, {p}':<38}{r[f'server_step_ms_{p}']:>12}"
                         f"{r.get(f'runtime_stream_step_ms_{p}')!s:>12}"
                         f"{r.get(f'serving_overhead_{p}', 0) + 1:>9.3f}x")
    if r.get("refine_added_ms") is not None:
        lines.append(f"{'first audio ms, refine off / on':<38}{r['refine_first_audio_ms_off']:>12}"
                     f"{r['refine_first_audio_ms_on']:>12}")
        lines.append(f"{'  refine: added ms (' + str(r['refine_tokens']) + ' tokens)':<38}"
                     f"{r['refine_added_ms']:>12}{r['refine_ms_per_token']:>12}  ms/token")
    for name, ours, up, ratio in r.get("vocoder_rows", []):
        lines.append(f"{name[:37]:<38}{_num(ours):>12}{_num(up):>12}{_num(ratio):>10}")
    lines.append(f"{'peak RSS MB':<38}{r['peak_rss_mb']:>12}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench runtime", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps and rounds")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-server", action="store_true",
                        help="skip the end-to-end utterance through the real server")
    args = parser.parse_args(argv)
    result = measure(args.quick, args.threads, server=not args.no_server)
    print(_table(result))
    summary = {k: v for k, v in result.items() if k != "vocoder_rows"}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
