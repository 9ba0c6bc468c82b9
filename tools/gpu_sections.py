"""The GPU check's model sections: fidelity, graphs vs eager, the serving
runner, first audio and throughput (``tools/gpu_check.py`` runs them; the
per-step counts and the streaming vocoder are in ``tools/step_counts.py``).

Every section drives the runner through its public contract (``Driver``
plans, ``execute``), never through the graph cache's or the model's own
methods, so it measures whatever the runtime does and keeps working when
the hot path changes shape. A section returns its report entry (a dict), or
raises; ``CheckError`` says the runtime misbehaved (a failed job, no audio,
a graph capture that failed and left the runner eager).

Thread: the caller's (the model thread rules: one runner, one thread).
"""

from __future__ import annotations

import time

import torch

import realtime.engine.compat  # noqa: F401
from bench import strict_graphs
from bench.device_counts import DEVICE
from bench.driver import Driver
from realtime.engine.api import SAMPLE_RATE, RuntimeOptions, SamplingParams, SegmentRequest
from realtime.engine.build import build_runner
from scheduler import Lane, StepPlan

TEXT = "The quick brown fox jumps over the lazy dog, then runs into the forest."
# Distinct jobs: job j speaks SENTENCES[j % 8] then SENTENCES[(j // 8 + j) % 8]
# (64 different texts of varied lengths), with its own seed.
SENTENCES = (
    "The quick brown fox jumps over the lazy dog.",
    "A small boat drifted slowly across the quiet lake at dawn.",
    "Please remember to water the plants before you leave for the weekend.",
    "Our train was late again, so we walked the last mile home.",
    "She opened the old letter and read it twice without a word.",
    "Bright lights flickered over the empty market square.",
    "Could you tell me where the nearest library is?",
    "Thunder rolled in the distance while the children kept on playing outside.",
)
MAX_STEPS_TO_AUDIO = 200  # a stream that has not spoken by then is a failure


class CheckError(RuntimeError):
    """A section saw the runtime misbehave (a failed job, no audio, eager fallback)."""


class StepOutOfMemory(CheckError):
    """A step the runner reported out of device memory (it retries nothing itself)."""


class PlanDriver(Driver):
    """``Driver`` that keeps the last plan it made (for shapes in reports)."""

    _last: StepPlan | None = None

    def plan(self, release=()) -> StepPlan:
        self._last = super().plan(release)
        return self._last

    @property
    def last_plan(self) -> StepPlan:
        if self._last is None:
            raise CheckError("no step was planned yet")
        return self._last


def distinct_text(j: int) -> str:
    return f"{SENTENCES[j % 8]} {SENTENCES[(j // 8 + j) % 8]}"


def add_jobs(driver: Driver, count: int, steps: int, streaming: bool = False, first: int = 0):
    """``count`` jobs of distinct texts and seeds that each run exactly ``steps`` codes."""
    ids = tuple(range(first, first + count))
    for j in ids:
        params = SamplingParams(seed=7919 * j + 1, min_new_tokens=steps, max_new_tokens=steps)
        driver.add(j, SegmentRequest(distinct_text(j), streaming=streaming, params=params))
    return ids


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def free(device: str) -> None:
    import gc
    gc.collect()
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def make_runner(assets, device, precision, graphs, slots, batches, buckets, capture=None):
    """A runner; on the CPU it is built for ``cpu:0`` so that
    ``bench.device_counts`` can tell the device from the host. ``capture``:
    a graph capture other than the device's (``build_runner``)."""
    opts = RuntimeOptions(weights=assets.kind.value, device=str(DEVICE) if device == "cpu" else device,
                          precision=precision, cuda_graphs=graphs, max_slots=slots,
                          batch_sizes=batches, kv_buckets=buckets)
    return build_runner(opts, assets=assets, capture=capture)


def graph_errors(runner) -> list[str]:
    """Why shapes run eagerly that should replay a graph ([] when none)."""
    graphs = getattr(runner, "graphs", None)
    if graphs is None:
        return ["no graph cache: every step runs eagerly"] if runner.device == "cuda" else []
    return [str(e) for e in getattr(graphs, "errors", ())]


def check_step(out, job_ids) -> None:
    bad = {j: out.failed[j] for j in job_ids if j in out.failed}
    if out.oom and not bad:
        raise StepOutOfMemory(f"step out of memory with {len(job_ids)} jobs")
    if out.oom or bad:
        raise CheckError(f"step failed: oom={out.oom} failed={bad}")


def step(driver: Driver, release=()):
    """One checked step of every live job."""
    live = tuple(driver.live) + tuple(driver.pending)
    out = driver.step(release=release, check=False)
    check_step(out, live)
    return out


# --- 1. fidelity ------------------------------------------------------------------------

def _greedy_run(runner, steps: int):
    params = SamplingParams(temperature=1e-5, min_new_tokens=steps, max_new_tokens=steps)
    driver = Driver(runner, Lane.INTERACTIVE)
    driver.add(1, SegmentRequest(TEXT, params=params))
    # The prefill step, then the codes; on CUDA a deferred EOS read
    # (eos_read.py) and the vocoder's overlap (audio a step later) each add a
    # step before the job is reported finished: a few steps of margin.
    for _ in range(steps + 8):
        if 1 in driver.codes:
            break
        step(driver)
    if 1 not in driver.codes:
        raise CheckError(f"greedy job did not finish after {steps} steps")
    return driver.codes[1], driver.hidden[1].float()


def fidelity(assets, device: str, mixed: str, steps: int) -> dict:
    """fp32 vs ``mixed`` greedy codes, both eager: the first step where they
    diverge and the hidden-state error over the steps before it."""
    ref = make_runner(assets, device, "fp32", False, 2, (1,), (512,))
    codes32, hid32 = _greedy_run(ref, steps)
    del ref
    free(device)
    low = make_runner(assets, device, mixed, False, 2, (1,), (512,))
    codes_lo, hid_lo = _greedy_run(low, steps)
    del low
    free(device)
    same = (codes32 == codes_lo).all(dim=1)
    first_diff = int((~same).nonzero()[0, 0]) if (~same).any() else None
    upto = first_diff if first_diff is not None else steps
    out = {"precision": mixed, "steps": steps, "first_divergent_step": first_diff,
           "steps_compared": upto}
    if upto:
        err = (hid32[:upto] - hid_lo[:upto]).abs()
        rel = err.norm(dim=1) / hid32[:upto].norm(dim=1).clamp(min=1e-12)
        for q in (0.5, 0.9, 0.99):
            out[f"hidden_abs_err_p{round(q * 100)}"] = float(torch.quantile(err.flatten(), q))
        out.update(hidden_abs_err_max=float(err.max()),
                   hidden_rel_err_p50=float(torch.quantile(rel, 0.5)),
                   hidden_rel_err_max=float(rel.max()),
                   # Per step, so a growing error shows as a trend.
                   hidden_rel_err_by_step=[round(float(r), 6) for r in rel])
    return out


# --- 2. graphs vs eager -----------------------------------------------------------------

def _timed_batch(runner, batch: int, warm: int, measured: int) -> tuple[dict, PlanDriver]:
    """``batch`` distinct jobs: ``warm`` steps (prefill included), then the
    mean wall time of ``measured`` steady decode steps."""
    driver = PlanDriver(runner)
    add_jobs(driver, batch, warm + measured + 1)  # finishing (one-shot audio) after the window
    for _ in range(warm):
        step(driver)
    sync(runner.device)
    start = time.perf_counter()
    for _ in range(measured):
        step(driver)
    sync(runner.device)
    step_s = (time.perf_counter() - start) / measured
    plan = driver.last_plan
    while driver.live:
        step(driver)
    return {"step_ms": step_s * 1e3, "batch_size": plan.batch_size, "kv_bucket": plan.kv_bucket}, driver


def graphs_vs_eager(assets, device: str, batches, buckets, warm: int, measured: int) -> dict:
    """Whole decode steps (the runner's ``execute``: model, sampling, the
    EOS read) with and without graphs, on the same distinct jobs; codes and
    hidden states compared. On the CPU the graph runner uses the strict
    capture stand-in (``bench/strict_graphs.py``). A capture failure fails
    the section: the graph runner would otherwise be timed running eagerly."""
    slots = max(batches)
    eager = make_runner(assets, device, "auto", False, slots, tuple(batches), tuple(buckets))
    graph = make_runner(assets, device, "auto", device == "cuda", slots, tuple(batches), tuple(buckets),
                        capture=None if device == "cuda" else strict_graphs.StrictCapture())
    graph.warmup()
    out: dict = {"dtype": str(graph.dtype).removeprefix("torch.")}
    errors = graph_errors(graph)
    if errors:
        out["graph_error"] = "; ".join(errors)
    for b in batches:
        e, de = _timed_batch(eager, b, warm, measured)
        g, dg = _timed_batch(graph, b, warm, measured)
        same = sum(torch.equal(de.codes[j], dg.codes[j]) for j in de.codes)
        diff = max(float((de.hidden[j] - dg.hidden[j]).abs().max()) for j in de.codes)
        out[f"batch_{b}"] = {"eager_step_ms": e["step_ms"], "graph_step_ms": g["step_ms"],
                             "speedup": e["step_ms"] / g["step_ms"],
                             "graph_shape": [g["batch_size"], g["kv_bucket"]],
                             "jobs_with_identical_codes": f"{same}/{len(de.codes)}",
                             "max_abs_hidden_diff": diff}
    del eager, graph
    free(device)
    return out


# --- 3-4. the serving runner and first audio --------------------------------------------

def serving(assets, device: str, batches, kv_lens) -> tuple[object, dict]:
    """The serving runner (graphs on a GPU; ``max(batches)`` slots) and its
    warm-up: build and capture times apart. Graph memory is what the graph
    pools hold after capture (``graph_pool_bytes``), not a difference of
    reserved memory. A capture error fails the section."""
    start = time.perf_counter()
    runner = make_runner(assets, device, "auto", device == "cuda", max(batches),
                         tuple(sorted({1, *batches})), tuple(kv_lens))
    built = time.perf_counter()
    timings = runner.warmup()
    info = {"build_s": built - start, "warmup_s": time.perf_counter() - built,
            "cold_start_s": time.perf_counter() - start,
            "slots": runner.max_slots, "batch_sizes": list(runner.batch_sizes),
            "kv_buckets": list(runner.kv_buckets), "dtype": str(runner.dtype).removeprefix("torch."),
            "decode_step_ms": {f"{b}x{k}": t * 1e3 for (b, k), t in sorted(timings.items())},
            "kv_cache_mib": runner.cache.nbytes / 2**20}
    graphs = runner.graphs
    if graphs is not None:
        info.update(decode_graphs=len(getattr(graphs, "decode_graphs", ())),
                    prefill_graphs=len(getattr(graphs, "prefill_graphs", ())))
    if device == "cuda":
        info.update(graph_pool_bytes(), allocated_mib=torch.cuda.memory_allocated() / 2**20,
                    reserved_mib=torch.cuda.memory_reserved() / 2**20)
    errors = graph_errors(runner)
    if errors:
        info["graph_error"] = "; ".join(errors)
    return runner, info


def graph_pool_bytes() -> dict:
    """What the private pools (CUDA graphs') hold, from the allocator's snapshot:
    unlike a difference of reserved memory, it cannot go negative when the
    capture releases cached blocks."""
    segments = torch.cuda.memory_snapshot()
    if segments and "segment_pool_id" not in segments[0]:
        return {"graph_pool_mib": None, "graph_pool_note": "this torch's snapshot names no pools"}
    private = [s for s in segments if tuple(s["segment_pool_id"]) != (0, 0)]
    return {"graph_pool_mib": sum(s["total_size"] for s in private) / 2**20,
            "graph_pool_in_use_mib": sum(s["allocated_size"] for s in private) / 2**20,
            "graph_pool_segments": len(private)}


def _time_to_audio(runner, job_id: int) -> dict:
    driver = Driver(runner, Lane.INTERACTIVE)
    driver.add(job_id, SegmentRequest(TEXT, streaming=True, params=SamplingParams(
        seed=1, min_new_tokens=MAX_STEPS_TO_AUDIO, max_new_tokens=MAX_STEPS_TO_AUDIO)))
    sync(runner.device)
    start = time.perf_counter()
    out = step(driver)
    steps = 1
    while not len(out.audio.get(job_id, ())):
        if steps >= MAX_STEPS_TO_AUDIO or job_id in out.finished:
            raise CheckError(f"no audio after {steps} steps")
        out = step(driver)
        steps += 1
    elapsed = time.perf_counter() - start
    driver.step(release=(job_id,))
    return {"first_audio_s": elapsed, "steps_before_audio": steps,
            "first_chunk_samples": len(out.audio[job_id])}


def first_audio(runner) -> dict:
    """A cold run (the vocoder's first call on this device), then the measure."""
    cold = _time_to_audio(runner, 6)
    warm = _time_to_audio(runner, 7)
    return dict(warm, cold_first_audio_s=cold["first_audio_s"])


# --- 7. throughput ----------------------------------------------------------------------

def finish_all(driver: Driver, cap: int) -> int:
    """Step until every job the driver started has ended (its last audio
    out), at most ``cap`` steps; returns the steps run. A packed vocoder
    step renders a bounded number of hidden steps, so jobs that all finish
    decoding together end over several steps: a fixed step count would
    leave some in the runner."""
    steps = 0
    while driver.live or driver.pending:
        if steps >= cap:
            raise CheckError(f"{len(driver.live) + len(driver.pending)} jobs unfinished "
                             f"after {cap} steps")
        step(driver)
        steps += 1
    return steps


def left_in(runner) -> int:
    """Jobs the runner still holds (0 once every job it started has ended)."""
    audio = getattr(runner, "audio", None)  # a ModelRunner's audio stage
    return len(getattr(runner, "jobs", ())) + (len(audio.awaiting) if audio is not None else 0)


def throughput(runner, batch: int, steps: int) -> dict:
    """Background throughput of ``batch`` distinct one-shot jobs of ``steps``
    codes each, as audio seconds per wall second (vocoder included), run
    until every job has ended (bounded: ``steps`` plus what the vocoder's
    per-step budget needs to render every job, twice over)."""
    driver = Driver(runner)
    ids = add_jobs(driver, batch, steps, first=1000)
    audio = getattr(runner, "audio", None)
    budget = max(1, audio.steps_per_call if audio is not None else steps * batch)
    cap = 2 * (steps + 2 + -(-batch * steps // budget))
    sync(runner.device)
    start = time.perf_counter()
    ran = finish_all(driver, cap)
    sync(runner.device)
    elapsed = time.perf_counter() - start
    samples = sum(len(a) for j in ids for a in driver.audio[j])
    if sorted(driver.finished) != list(ids):
        raise CheckError(f"jobs ended {sorted(driver.finished)}, started {list(ids)}")
    audio_s = samples / SAMPLE_RATE
    return {"batch": batch, "steps": steps, "steps_run": ran,
            "distinct_texts": len({distinct_text(j) for j in ids}),
            "wall_s": elapsed, "audio_s": audio_s, "realtime_factor": audio_s / elapsed}
