"""Whether the int8 K/V cache pays on this CPU: attention timed both ways.

ONNX Runtime's int8 cache (``kv_scales``) reads a quarter of fp32's bytes,
but its CPU path is, in ONNX Runtime's own words, a baseline: kernels for
AVX2 and NEON are to follow. Where it attends slower than fp32 the int
forms would lose time, not gain it, so it is measured, never assumed:
``int8_cache_pays(shape, threads, spin, cache_dir)`` builds two graphs of
``GroupQueryAttention`` alone (the model's layers, heads and head size, one
decode position per row), times ``ROWS`` rows over ``POSITIONS`` positions
on each (rounds alternating, medians) and keeps the verdict per machine in
the prepared cache (kind ``ort-kv-cache``). Small models (the tests') are
not timed: the int8 cache serves.

Thread: build time (the model thread).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np

from realtime.engine.model.prepared_cache import CacheKey, PreparedCache
from realtime.engine.model.shapes import ModelShape
from realtime.engine.ort.graph import INT8_CACHE, scale_shape
from realtime.engine.timing import alternating_medians, ms_per_call

log = logging.getLogger(__name__)

KIND = "ort-kv-cache"
ROWS, POSITIONS = 2, 400  # two streams at a sentence's length: what admission decides on
ROUNDS, STEPS = 3, 5
SMALL_HIDDEN = 256  # models below this are not timed


def int8_cache_pays(shape: ModelShape, threads: int, spin: bool, cache_dir: str | None) -> bool:
    """True where attention over the int8 cache is faster than over fp32's."""
    if shape.hidden < SMALL_HIDDEN:
        return True
    import onnxruntime

    cache = PreparedCache(cache_dir)
    key = CacheKey.of(KIND, shape=[shape.layers, shape.kv_heads, shape.head_dim], threads=threads,
                      onnxruntime=onnxruntime.__version__, rows=ROWS, positions=POSITIONS)
    doc = cache.load_json(key)
    if isinstance(doc, dict) and isinstance(doc.get("int8"), bool):
        log.info("ort K/V cache: %s (measured earlier on this machine: %s)",
                 "int8" if doc["int8"] else "fp32", doc.get("ms"))
        return doc["int8"]
    ms = measure(shape, threads, spin)
    pays = ms["int8"] < ms["fp32"]
    cache.store_json(key, {"int8": pays, "ms": ms})
    log.info("ort K/V cache: %s (attention of %d rows over %d positions: int8 %.2f ms, fp32 %.2f ms)",
             "int8" if pays else "fp32", ROWS, POSITIONS, ms["int8"], ms["fp32"])
    return pays


def measure(shape: ModelShape, threads: int, spin: bool) -> dict[str, float]:
    """Median ms of one decode position of ``ROWS`` rows through every
    layer's attention, per cache type, rounds alternating."""
    import onnxruntime as ort

    from realtime.engine.ort.backbone import session_options

    sessions = {kind: ort.InferenceSession(_graph(shape, kind), session_options(threads, spin),
                                           providers=["CPUExecutionProvider"]) for kind in ("int8", "fp32")}
    bindings = {kind: _bind(session, shape, kind) for kind, session in sessions.items()}
    for kind, session in sessions.items():
        session.run_with_iobinding(bindings[kind][0])  # warm: the first run of a shape
    runs = {kind: functools.partial(session.run_with_iobinding, bindings[kind][0])
            for kind, session in sessions.items()}
    ms = alternating_medians({kind: ms_per_call(run, STEPS) for kind, run in runs.items()}, ROUNDS)
    return {kind: round(t, 3) for kind, t in ms.items()}


def _graph(shape: ModelShape, kind: str) -> bytes:
    """``shape.layers`` GroupQueryAttention ops, each over its own cache (as
    the model's), the query of each the output of the one before."""
    from onnx import TensorProto, helper

    heads, hd, length = shape.kv_heads, shape.head_dim, POSITIONS + 1
    width = heads * hd
    cache_type = TensorProto.INT8 if kind == "int8" else TensorProto.FLOAT
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [ROWS, 1, width]) for n in ("q", "k", "v")]
    inputs += [helper.make_tensor_value_info("seqlens_k", TensorProto.INT32, [ROWS]),
               helper.make_tensor_value_info("total_len", TensorProto.INT32, [])]
    outputs, nodes, inits, query = [], [], [], "q"
    for i in range(shape.layers):
        dims = [ROWS, heads, length, hd]
        inputs += [helper.make_tensor_value_info(f"past.{i}.{n}", cache_type, dims) for n in "kv"]
        outputs += [helper.make_tensor_value_info(f"present.{i}.{n}", cache_type, dims) for n in "kv"]
        names = [query, "k", "v", f"past.{i}.k", f"past.{i}.v", "seqlens_k", "total_len"]
        quant: dict[str, Any] = {}
        if kind == "int8":  # the model graph's cache (graph.INT8_CACHE), of made-up scales
            for n in "kv":
                inits.append(helper.make_tensor(f"{n}_scale.{i}", TensorProto.FLOAT, scale_shape(shape),
                                                [0.05] * width))
            names += ["", "", "", "", "", f"k_scale.{i}", f"v_scale.{i}"]
            quant = INT8_CACHE
        nodes.append(helper.make_node("GroupQueryAttention", names, [f"out.{i}", f"present.{i}.k",
                                                                     f"present.{i}.v"],
                                      domain="com.microsoft", num_heads=heads, kv_num_heads=heads,
                                      scale=hd ** -0.5, **quant))
        query = f"out.{i}"
    outputs.insert(0, helper.make_tensor_value_info(query, TensorProto.FLOAT, [ROWS, 1, width]))
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    graph = helper.make_graph(nodes, "attention", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model.SerializeToString()


def _bind(session, shape: ModelShape, kind: str) -> tuple:
    """An IO binding of ``session`` over written caches (returned with them:
    they live while it is used)."""
    dims = (ROWS, shape.kv_heads, POSITIONS + 1, shape.head_dim)
    element = np.int8 if kind == "int8" else np.float32
    # written pages (a calloc'd page never written reads as the one zero page, from cache)
    caches = [np.full(dims, 3, dtype=element) for _ in range(2 * shape.layers)]
    io = session.io_binding()
    x = np.full((ROWS, 1, shape.kv_heads * shape.head_dim), 0.1, dtype=np.float32)
    for name in ("q", "k", "v"):
        io.bind_cpu_input(name, x)
    io.bind_cpu_input("seqlens_k", np.full(ROWS, POSITIONS, dtype=np.int32))
    io.bind_cpu_input("total_len", np.array(POSITIONS + 1, dtype=np.int32))
    for i in range(shape.layers):
        for j, n in enumerate("kv"):
            buf = caches[2 * i + j]
            io.bind_input(f"past.{i}.{n}", "cpu", 0, element, list(dims), buf.ctypes.data)
            io.bind_output(f"present.{i}.{n}", "cpu", 0, element, list(dims), buf.ctypes.data)
    io.bind_output(f"out.{shape.layers - 1}")
    return io, caches
