"""Which engine runs the CPU decoder: ONNX Runtime or our torch decoder.

``--cpu-engine``: ``ort`` (the backbone as one ONNX graph, ``ort.model.OrtGPT``:
int4, int8 and fp32), ``torch`` (``model.StaticGPT``: fp32, upstream's codes
exactly) or ``auto``, the default: int4 and int8 run on ONNX Runtime only
(torch's own int8 and bf16 forms lost to it and were retired: docs/runtime.md,
"Retired"); for fp32 both are built once and timed by whole steps (decode and
logits, batch 1 and the largest batch size, rounds alternating, medians), the
faster serves and the verdict is kept in the prepared cache per machine (kind
``cpu-engine``:
precision, shape, threads, batch, the onnxruntime version, besides every
key's torch and CPU), so later starts build one engine only. Tiny models
(tests) are not timed: ``ort``, where it is installed. Where onnxruntime or
onnx cannot be imported, ``auto`` runs torch's fp32 and says why; int8 and
int4 are then refused.

``--precision auto`` on a CPU is int8 where one stream keeps real time in
int8 here (its whole step measured once per machine: ``auto_precision``),
else int4; docs/runtime.md says why, and what each costs against fp32.

``build_decoder`` builds the chosen engine's decoder; ``vocoder_body`` the
vocoder's convolutions on ONNX Runtime when the decoder runs there
(``ort.vocoder``; measured faster than torch's here, docs/runtime.md), in
``--vocoder-precision`` fp32 (``auto``) or int8.

Thread: build time (the model thread).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

import torch

from realtime.engine.api import CPU_ENGINES
from realtime.engine.model.prepared_cache import CacheKey, PreparedCache
from realtime.engine.timing import alternating_medians, ms_per_call

log = logging.getLogger(__name__)

DEFAULT_PRECISION = "int8"  # --precision auto on a CPU: int8, int4 where int8 is too slow
INT8_STEP_BUDGET_MS = 12.0  # int8's whole batch-1 step at most this: a stream keeps real time
PRECISION_KIND = "cpu-precision"
ORT_PRECISIONS = ("int4", "int8", "fp32")
INT_PRECISIONS = ("int4", "int8")
# What each reduced precision costs against fp32 (``python -m bench precision``,
# full-size random weights; int8 on the Intel Xeon, int4 on the AMD EPYC Zen 3, docs/runtime.md):
# the start-up log states it.
QUALITY = {
    "int8": "hidden states 1.8% off (3.9% at most), 3.4% of top codes differ, greedy codes part within "
            "0-8 steps, audio SNR 34 dB",
    "int4": "hidden states 7% off (14% at most), 11% of top codes differ, greedy codes part within "
            "0-3 steps, audio SNR 22 dB",
}
VOCODER_INT8_SNR_DB = 36  # the int8 vocoder alone against fp32 (bench precision, vocoder-int8)
KIND = "cpu-engine"
TINY_BYTES = 16 * 2**20  # backbones below this are not timed (the tests' tiny models)
ROUNDS, STEPS, KV_LEN = 5, 3, 128


def ort_missing() -> str | None:
    """None when the ``ort`` engine can be built here, else why not. onnx is
    looked for, not imported: its import takes 1.3 s, and a warm start whose
    graphs are cached never needs it."""
    import importlib.util

    for name in ("onnxruntime", "onnx"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not installed (pip install -r requirements/runtime.txt)"
    return None


def cpu_precision(precision: str) -> str:
    """What ``--precision`` means on a CPU (``auto``: ``DEFAULT_PRECISION``)."""
    return DEFAULT_PRECISION if precision == "auto" else precision


def static_choice(engine: str, precision: str, backbone_bytes: int) -> tuple[str | None, str]:
    """(engine, why) when no timing is needed, else (None, why not). Raises
    ``ValueError`` (a one-line start-up error) for a pair that cannot run."""
    if engine not in CPU_ENGINES:
        raise ValueError(f"unknown cpu engine {engine!r} ({', '.join(CPU_ENGINES)})")
    missing = ort_missing()
    if engine == "ort" or precision in INT_PRECISIONS:
        if precision not in ORT_PRECISIONS:
            raise ValueError(f"precision {precision} runs on the torch engine only (--cpu-engine torch)")
        if engine == "torch":
            raise ValueError(f"precision {precision} runs on the ort engine only (--cpu-engine ort or auto)")
        if missing:
            raise ValueError(f"the ort engine is unavailable: {missing}")
        return "ort", "--cpu-engine ort" if engine == "ort" else f"{precision} runs on ort only"
    if engine == "torch" or precision not in ORT_PRECISIONS:
        return "torch", "--cpu-engine torch" if engine == "torch" else f"{precision} runs on torch only"
    if missing:
        return "torch", f"auto: the ort engine is unavailable ({missing})"
    if backbone_bytes < TINY_BYTES:
        return "ort", "auto: a tiny model, not timed"
    return None, "auto: timed"


def key(precision: str, shape, rows: tuple[int, ...]) -> CacheKey:
    import onnxruntime

    return CacheKey.of(KIND, precision=precision, shape=str(shape), threads=torch.get_num_threads(),
                       rows=list(rows), onnxruntime=onnxruntime.__version__)


def cached(cache_dir: str | None, k: CacheKey) -> str | None:
    doc = PreparedCache(cache_dir).load_json(k)
    engine = doc.get("engine") if isinstance(doc, dict) else None
    return engine if engine in ("ort", "torch") else None


def measure(models: dict[str, object], rows: tuple[int, ...]) -> tuple[str, dict[str, float]]:
    """The faster of ``models`` (engine -> model with ``decode``, ``logits``,
    ``new_cache``) by whole decode steps at each of ``rows``: (engine, ms per
    step summed over ``rows``, per engine)."""
    steps = {name: [whole_step(m, r) for r in rows] for name, m in models.items()}

    def round_ms(name: str) -> float:
        total = 0.0
        for step in steps[name]:
            step()  # warm
            total += ms_per_call(step, STEPS)()
        return total

    medians = alternating_medians({name: functools.partial(round_ms, name) for name in models}, ROUNDS)
    ms = {name: round(t, 2) for name, t in medians.items()}
    return min(ms, key=ms.__getitem__), ms


def store(cache_dir: str | None, k: CacheKey, engine: str, ms: dict[str, float]) -> None:
    import os

    PreparedCache(cache_dir).store_json(k, {"engine": engine, "ms": ms,
                                            "load": round(os.getloadavg()[0], 2)})


def whole_step(model, rows: int, kv_len: int = KV_LEN) -> Callable[[], None]:
    """One decode step of ``rows`` rows at position ``kv_len - 1``, logits included."""
    kv_len = min(kv_len, model.shape.max_positions)
    cache = model.new_cache(rows, kv_len, rows)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(rows, model.shape.hidden, generator=gen) * 0.1
    slots = torch.arange(rows)
    pos = torch.full((rows,), kv_len - 1)

    @torch.no_grad()
    def step() -> None:
        model.logits(model.decode(x, slots, pos, cache, kv_len))
    return step


def build_decoder(options, assets):
    """The CPU decoder of ``options`` (``api.RuntimeOptions``, precision
    resolved) over ``assets``: on the engine ``cpu_engine`` names or, with
    ``auto``, the one measured faster here."""
    shape, precision = assets.shape, options.precision
    chosen, why = static_choice(options.cpu_engine, precision, _backbone_bytes(shape))
    rows = tuple(sorted({1, max(b for b in options.batch_sizes if b <= 4)}))
    k = None if chosen is not None else key(precision, shape, rows)
    if k is not None:
        chosen = cached(options.cache_dir, k)
        why = "auto: measured earlier on this machine (prepared cache)"
    if chosen is None and k is not None:
        models = {name: decoder_on(name, options, assets) for name in ("torch", "ort")}
        chosen, ms = measure(models, rows)
        store(options.cache_dir, k, chosen, ms)
        log.info("cpu engine %s for %s (auto: whole steps at batch %s: %s)", chosen, precision,
                 "+".join(map(str, rows)), ", ".join(f"{n} {t:.1f} ms" for n, t in ms.items()))
        return models[chosen]
    assert chosen is not None
    log.info("cpu engine %s for %s (%s)", chosen, precision, why)
    return decoder_on(chosen, options, assets)


def auto_precision(options, assets) -> str:
    """``--precision auto`` on a CPU: int8 where ONNX Runtime's int8 whole
    decode step at batch 1 takes at most ``INT8_STEP_BUDGET_MS`` (one stream
    then keeps real time with its sampling, vocoder and serving), else int4;
    int8 untimed for tiny models; fp32 without onnxruntime. Kept per machine
    (kind ``cpu-precision``)."""
    if missing := ort_missing():
        log.warning("precision auto: fp32 on torch, the int forms need the ort engine (%s)", missing)
        return "fp32"
    if _backbone_bytes(assets.shape) < TINY_BYTES:
        return DEFAULT_PRECISION
    import dataclasses

    import onnxruntime

    from realtime.engine.ort.graph import EXPORT_VERSION

    k = CacheKey.of(PRECISION_KIND, shape=str(assets.shape), threads=torch.get_num_threads(),
                    onnxruntime=onnxruntime.__version__, budget_ms=INT8_STEP_BUDGET_MS,
                    export=EXPORT_VERSION)  # another int8 graph: measured again
    doc = PreparedCache(options.cache_dir).load_json(k)
    if isinstance(doc, dict) and doc.get("precision") in ("int8", "int4"):
        log.info("precision auto: %s (measured earlier on this machine: int8 step %s ms, budget %.0f ms)",
                 doc["precision"], doc.get("int8_ms"), INT8_STEP_BUDGET_MS)
        return doc["precision"]
    # Timed without its prompt graph; the decoder that serves is built afresh
    # (its graph from the prepared cache: a fraction of a second).
    int8 = decoder_on("ort", dataclasses.replace(options, precision="int8"), assets, prompts=False)
    ms = measure({"ort": int8}, (1,))[1]["ort"]
    precision = "int8" if ms <= INT8_STEP_BUDGET_MS else "int4"
    PreparedCache(options.cache_dir).store_json(k, {"precision": precision, "int8_ms": ms})
    log.info("precision auto: %s (int8's whole step at batch 1 %.1f ms, budget %.0f ms)", precision, ms,
             INT8_STEP_BUDGET_MS)
    return precision


def _backbone_bytes(shape) -> int:
    return 4 * shape.layers * (4 * shape.hidden ** 2 + 3 * shape.hidden * shape.intermediate)


def decoder_on(engine: str, options, assets, prompts: bool = True):
    """The decoder of ``options`` on ``engine`` (``ort`` or ``torch``;
    ``prompts``: ``OrtGPT``'s)."""
    from realtime.engine.cpu.omp_env import spinning

    if engine == "ort":
        from realtime.engine.ort.model import OrtGPT

        return OrtGPT(assets, options.precision, torch.get_num_threads(), spinning(), options.cache_dir,
                      prompts)
    from realtime.engine.model.gpt import StaticGPT
    from realtime.engine.model.prepared_weights import WeightsEntry

    cpu = torch.device("cpu")
    return StaticGPT(assets.shape, assets.gpt_state, assets.embed, cpu, torch.float32,
                     WeightsEntry.of(assets, options.cache_dir, cpu, torch.float32))


def vocoder_precision(options, decoder, resolved: str) -> str:
    """The vocoder's precision: ``--vocoder-precision auto`` beside ONNX
    Runtime's int8 or int4 decoder is its int8 vocoder (1.4x the fp32 one's
    speed here, audio SNR ~36 dB against it: docs/runtime.md), else ``resolved``."""
    from realtime.engine.ort.model import OrtGPT

    if options.vocoder_precision == "auto" and isinstance(decoder, OrtGPT) and decoder.form != "fp32":
        log.warning("VOCODER INT8 (--vocoder-precision auto beside an %s decoder): audio SNR ~%d dB "
                    "against the fp32 vocoder; --vocoder-precision fp32 to keep it", decoder.form,
                    VOCODER_INT8_SNR_DB)
        return "int8"
    return resolved


def vocoder_body(options, assets, decoder, precision: str):
    """The vocoder's convolutions on ONNX Runtime when ``decoder`` runs there
    (``precision``: the resolved vocoder precision, fp32 or int8), else None
    (torch's vocoder; int8 there is refused)."""
    from realtime.engine.cpu.omp_env import spinning
    from realtime.engine.ort.model import OrtGPT

    if not isinstance(decoder, OrtGPT):
        if precision == "int8":
            raise ValueError("vocoder precision int8 runs on the ort engine only (--cpu-engine ort)")
        return None
    if precision not in ("fp32", "int8"):
        raise ValueError(f"vocoder precision {precision} runs on the torch engine only (--cpu-engine torch)")
    from realtime.engine.ort.vocoder import OrtVocoderBody

    return OrtVocoderBody(assets, precision, torch.get_num_threads(), spinning(), options.cache_dir)


def leave_cores_to_ort(decoder) -> None:
    """With ONNX Runtime running the decoder (and the vocoder's convolutions)
    on its own thread pool, torch's part (embeddings, logits, sampling, the
    FFTs) runs on one thread: two pools of two workers on two cores wait on
    each other (4 streams, AMD EPYC Zen 3: the backbone 35.3 -> 29.8 ms, a
    whole step 42.6 -> 34.5 ms; sampling itself 2.6 -> 1.8 ms)."""
    from realtime.engine.cpu.threads import leave_cores_to
    from realtime.engine.ort.model import OrtGPT

    if isinstance(decoder, OrtGPT):
        leave_cores_to(decoder.backbone.threads)
