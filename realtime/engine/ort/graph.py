"""ChatTTS's GPT backbone as an ONNX graph for ONNX Runtime's CPU provider.

``write_backbone(shape, gpt_state, form, directory)`` writes ``model.onnx``
(and its weights beside it in ``model.onnx.data``) from the checkpoint's own
weights: inputs ``inputs_embeds`` [B, T, D] and ``attention_mask`` [B, total]
(int64, 1 for each position a row attends to, right-padded), one
``past_key_values.<layer>.{key,value}`` [B, H, max_len, Dh] per layer;
outputs ``hidden_states`` [B, T, D] (after the final RMSNorm, fp32) and
``present.<layer>.{key,value}``, bound to the same buffers as the past ones
(ORT's shared past/present buffer: each step writes its K/V in place). Given
the code heads, also ``logits`` [B, 1, Q * V]: each row's last position times
the heads, fp32 (``MatMul``), so a decode step's logits come from the same run
on ONNX Runtime's threads (a prompt's run writes them too, unused: its rows'
last real positions differ, and torch's heads read those).

The graph is what onnxruntime-genai's model builder makes of a Llama with
``exclude_embeds`` and ``exclude_lm_head`` (one ``SimplifiedLayerNormalization``,
per layer a fused QKV matrix, ``GroupQueryAttention`` with the rotary
embedding inside it, ``SkipSimplifiedLayerNormalization`` for each residual
add), written here instead of by the builder: the builder (0.18) needs
transformers 5, which ChatTTS's pin excludes, a tokenizer file and a
transformers model load; this is ~50 nodes from the state dict. Its fp32 form
gave the builder's hidden states to 2e-9 on the same weights. Gate and up
are one fused matrix here (the builder keeps two): measured as fast or
faster at batch 1 and 4 on the AMD EPYC Zen 3 (docs/runtime.md).

Forms: ``fp32`` (plain ``MatMul``), ``int4`` (``MatMulNBits``: symmetric
per block of ``BLOCK`` weights along K, the block's value of largest
magnitude at the bottom of the range as ORT's own quantizer does, no zero
points; ``accuracy_level`` 4: the activations quantized to int8 per block
inside the kernel, the only level that was fast here) and ``int8``
(``MatMulInteger``: MLAS's integer GEMM, VNNI or AMX where the CPU has them;
7-bit symmetric weights per output channel, since AVX2's u8 x s8 pair sums
must not saturate, as in the int8 vocoder; each row's activations quantized
alone to uint8 around ``ROW_ZERO`` by its largest magnitude, the int32 sums
scaled back by row and channel, so a row never depends on its batch mates).
``MatMulNBits`` costs more with each row (its 8-bit form, int8's until
export 2, twice int4's at three rows), the integer GEMM reads the weights'
bytes once whatever the rows: int8 is as fast as int4 from two rows on
(docs/runtime.md, "int8 on the integer GEMM"). RMSNorm, RoPE, attention and
the residual stream stay fp32 in every form; the K/V cache is int8 where
``write_backbone`` is given scales (the int forms: ``kv_scales``),
GroupQueryAttention quantizing each position's K and V as it writes them.

``PROMPT_FORM`` (``int8-dynamic``) is for prompts only (``ort.prompts``):
``DynamicQuantizeMatMul``, the same 7-bit weights, each call's activations
quantized as one tensor inside the operator. A 64-token prompt takes 28 ms
where ``MatMulNBits`` takes 111 (int4) on the Intel Xeon of
docs/runtime.md, and a 48-token one 25 ms against 31 on the int8 graph,
whose per-row scaling is a few more passes over many rows. Not for decode steps:
one activation scale for all rows would make a row's codes depend on its
batch mates.

Thread: build time (the model thread). Imports onnx on use only: the GPU
image's server never builds a CPU graph.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import torch

from realtime.engine.model.shapes import ModelShape

FORMS = ("int4", "int8", "fp32")  # what decode steps run
PROMPT_FORM = "int8-dynamic"  # what prompts run (module docstring)
INT8_WEIGHT_MAX = 63  # 7-bit weights: AVX2's u8 x s8 pair sums stay within int16
INT4_BITS, BLOCK = 4, 32  # MatMulNBits: bits and weights per quantization block along K
ACCURACY_LEVEL = 4  # MatMulNBits: int8 activations per block (the fast kernels)
ROW_ZERO = 128  # an int8 graph's activations: uint8 around this, per row
# Bump when the graph changes: cached graphs then miss (2: int8 on MatMulInteger; 3: logits).
EXPORT_VERSION = 3
GRAPH_FILE, DATA_FILE = "model.onnx", "model.onnx.data"
SCALES_FILE = "kv_scales.npy"  # the int8 K/V cache's scales, beside a graph that has one
KV_QUANT = "PER_CHANNEL"  # one scale per head and channel (kv_scales.py)
# GroupQueryAttention's attributes for the int8 cache; its scales come in as [1, heads, 1, head_dim]
INT8_CACHE = {"k_quant_type": KV_QUANT, "v_quant_type": KV_QUANT, "kv_cache_bit_width": 8}


def scale_shape(shape: ModelShape) -> tuple[int, int, int, int]:
    return (1, shape.kv_heads, 1, shape.head_dim)
INLINE_BYTES = 4096  # initializers smaller than this stay in the graph file


def quantize_blocks(w: np.ndarray, bits: int, block: int = BLOCK) -> tuple[np.ndarray, np.ndarray]:
    """``w`` [N, K] fp32 -> (``MatMulNBits``'s B: uint8 [N, K / block, block
    * bits / 8], scales fp32 [N * K / block]). Symmetric, no zero points:
    stored values are q + 2^(bits-1) with q in [-2^(bits-1), 2^(bits-1));
    int4 packs element 2i in the low nibble of byte i."""
    n, k = w.shape
    blocks = -(-k // block)
    if blocks * block != k:
        w = np.pad(w, ((0, 0), (0, blocks * block - k)))
    wb = w.reshape(n, blocks, block)
    half = 2 ** (bits - 1)
    peak = np.take_along_axis(wb, np.abs(wb).argmax(-1)[..., None], -1)[..., 0]  # signed
    scale = peak / -half
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(wb / scale[..., None]), -half, half - 1).astype(np.int16) + half
    q = q.astype(np.uint8)
    if bits == 4:
        q = q[..., 0::2] | (q[..., 1::2] << 4)
    return np.ascontiguousarray(q), scale.astype(np.float32).reshape(-1)


def quantize_channels(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``w`` [N, K] fp32 -> (the integer GEMM's B: int8 [K, N] in
    [-INT8_WEIGHT_MAX, INT8_WEIGHT_MAX], scales fp32 [N]): symmetric, one
    scale per output channel, no zero points."""
    peak = np.abs(w).max(axis=1)
    scale = np.where(peak > 0, peak / INT8_WEIGHT_MAX, 1.0).astype(np.float32)
    q = np.clip(np.rint(w / scale[:, None]), -INT8_WEIGHT_MAX, INT8_WEIGHT_MAX).astype(np.int8)
    return np.ascontiguousarray(q.T), scale


def dequantize_blocks(q: np.ndarray, scale: np.ndarray, bits: int, k: int) -> np.ndarray:
    """The [N, K] fp32 weights ``quantize_blocks`` stored (for tests)."""
    n, blocks, _ = q.shape
    if bits == 4:
        q = np.stack([q & 0x0F, q >> 4], -1).reshape(n, blocks, -1)
    w = (q.astype(np.float32) - 2 ** (bits - 1)) * scale.reshape(n, blocks, 1)
    return w.reshape(n, -1)[:, :k]


def rope_caches(shape: ModelShape) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin [max_positions, Dh / 2] as transformers' LlamaRotaryEmbedding
    computes them (fp32 frequencies), the halves GroupQueryAttention takes."""
    hd = shape.head_dim
    inv_freq = 1.0 / (shape.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    freqs = torch.outer(torch.arange(shape.max_positions, dtype=torch.float32), inv_freq)
    return freqs.cos().numpy(), freqs.sin().numpy()


class _Graph:
    """Nodes and initializers as they are made; initializers' bytes go to
    the data file at once (external data), so a build holds one matrix at a
    time beside the checkpoint."""

    def __init__(self, data_path: str, form: str):
        from onnx import helper  # noqa: F401  (fail here, not half-way)

        self.nodes: list = []
        self.inits: list = []
        self.form = form
        self._data = open(data_path, "wb")  # noqa: SIM115  (closed by finish)

    def init(self, name: str, array: np.ndarray) -> str:
        from onnx import TensorProto, helper, numpy_helper

        array = np.ascontiguousarray(array)
        if array.nbytes < INLINE_BYTES:  # shape inference reads small constants inline only
            self.inits.append(numpy_helper.from_array(array, name))
            return name
        offset = self._data.tell()
        pad = -offset % 64  # aligned, so ORT may map it
        self._data.write(b"\0" * pad)
        offset += pad
        self._data.write(array.tobytes())
        tensor = TensorProto(name=name, dims=list(array.shape),
                             data_type=helper.np_dtype_to_tensor_dtype(array.dtype))
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", DATA_FILE), ("offset", str(offset)),
                           ("length", str(array.nbytes))):
            tensor.external_data.add(key=key, value=value)
        self.inits.append(tensor)
        return name

    def node(self, op: str, inputs: list[str], outputs: list[str], ms: bool = False, **attrs) -> None:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, outputs, domain="com.microsoft" if ms else "",
                                           **attrs))

    def matmul(self, x: str, w: torch.Tensor, name: str) -> str:
        """``x`` times the transpose of ``w`` [N, K] in the graph's form."""
        out = f"{name}/out"
        weights = w.detach().to(torch.float32).numpy()
        if self.form == "fp32":
            self.node("MatMul", [x, self.init(f"{name}.weight", weights.T)], [out])
            return out
        if self.form == PROMPT_FORM:
            q8, scale = quantize_channels(weights)
            self.node("DynamicQuantizeMatMul", [x, self.init(f"{name}.q", q8),
                                                self.init(f"{name}.scales", scale)], [out], ms=True)
            return out
        if self.form == "int8":
            return self._integer_matmul(x, weights, name)
        q, scale = quantize_blocks(weights, INT4_BITS)
        self.node("MatMulNBits", [x, self.init(f"{name}.q", q), self.init(f"{name}.scales", scale)],
                  [out], ms=True, K=weights.shape[1], N=weights.shape[0], bits=INT4_BITS,
                  block_size=BLOCK, accuracy_level=ACCURACY_LEVEL)
        return out

    def _integer_matmul(self, x: str, weights: np.ndarray, name: str) -> str:
        """``x`` times ``weights`` [N, K] transposed on the integer GEMM: each
        row of ``x`` scaled by its own largest magnitude to uint8 around
        ``ROW_ZERO``, the int32 products scaled back by row and by channel."""
        q, scale = quantize_channels(weights)
        self.node("Abs", [x], [f"{name}/abs"])
        self.node("ReduceMax", [f"{name}/abs", "rows.axis"], [f"{name}/peak"], keepdims=1)
        self.node("Max", [f"{name}/peak", "rows.tiny"], [f"{name}/peak+"])
        self.node("Div", [f"{name}/peak+", "rows.top"], [f"{name}/row_scale"])
        self.node("Div", [x, f"{name}/row_scale"], [f"{name}/scaled"])
        self.node("QuantizeLinear", [f"{name}/scaled", "rows.one", "rows.zero"], [f"{name}/xq"])
        self.node("MatMulInteger", [f"{name}/xq", self.init(f"{name}.q", q), "rows.zero"], [f"{name}/sums"])
        self.node("Cast", [f"{name}/sums"], [f"{name}/sums_f"], to=1)  # TensorProto.FLOAT
        self.node("Mul", [f"{name}/sums_f", f"{name}/row_scale"], [f"{name}/by_row"])
        self.node("Mul", [f"{name}/by_row", self.init(f"{name}.scales", scale)], [f"{name}/out"])
        return f"{name}/out"

    def finish(self) -> None:
        self._data.flush()
        os.fsync(self._data.fileno())
        self._data.close()


def write_backbone(shape: ModelShape, gpt_state: Mapping[str, torch.Tensor], form: str,
                   directory: str, kv_scales: np.ndarray | None = None,
                   heads: torch.Tensor | None = None) -> None:
    """Write the backbone of ``gpt_state`` (a transformers ``LlamaModel``
    state dict) in ``form`` into ``directory`` (``GRAPH_FILE``, ``DATA_FILE``).
    ``kv_scales`` [layers, 2, heads, head_dim] (``kv_scales.calibrate``): the
    K/V cache is int8 with these scales (written beside, ``SCALES_FILE``);
    None: fp32. ``heads`` [Q * V, D] (``gpt_ends.head_weights``): the graph
    also outputs ``logits``; None: hidden states only."""
    from onnx import TensorProto, helper, save_model

    if form not in FORMS + (PROMPT_FORM,):
        raise ValueError(f"unknown ONNX form {form!r} ({', '.join(FORMS + (PROMPT_FORM,))})")
    d, h, hd = shape.hidden, shape.heads, shape.head_dim
    g = _Graph(os.path.join(directory, DATA_FILE), form)
    inputs = [helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, ["batch", "seq", d]),
              helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "total"])]
    outputs = [helper.make_tensor_value_info("hidden_states", TensorProto.FLOAT, ["batch", "seq", d])]
    try:
        _mask_lengths(g)
        if form == "int8":  # _integer_matmul's constants
            g.init("rows.axis", np.array([-1], np.int64))
            g.init("rows.tiny", np.array(1e-30, np.float32))  # a row of zeros (padding) scales to zeros
            g.init("rows.top", np.array(127, np.float32))
            g.init("rows.one", np.array(1, np.float32))
            g.init("rows.zero", np.array(ROW_ZERO, np.uint8))
        cos, sin = rope_caches(shape)
        g.init("cos_cache", cos)
        g.init("sin_cache", sin)
        ln1 = g.init("ln1.0", _vec(gpt_state["layers.0.input_layernorm.weight"]))
        g.node("SimplifiedLayerNormalization", ["inputs_embeds", ln1], ["y.0"],
               epsilon=shape.rms_eps, axis=-1, stash_type=1)
        kv_dims: list[str | int] = ["batch", h, "max_len", hd]
        kv_type = TensorProto.FLOAT if kv_scales is None else TensorProto.INT8
        for i in range(shape.layers):
            inputs += [helper.make_tensor_value_info(f"past_key_values.{i}.{n}", kv_type, kv_dims)
                       for n in ("key", "value")]
            outputs += [helper.make_tensor_value_info(f"present.{i}.{n}", kv_type, kv_dims)
                        for n in ("key", "value")]
            _layer(g, shape, gpt_state, i, None if kv_scales is None else kv_scales[i])
        if heads is not None:
            g.init("last_position", np.array([-1], np.int64))
            g.node("Gather", ["hidden_states", "last_position"], ["last_hidden"], axis=1)  # [B, 1, D]
            g.node("MatMul", ["last_hidden", g.init("heads", _vec(heads).T)], ["logits"])
            outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                         ["batch", 1, heads.shape[0]]))
    finally:
        g.finish()
    graph = helper.make_graph(g.nodes, "chattts_gpt_backbone", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("com.microsoft", 1)],
                              producer_name="chattts-realtime", producer_version=str(EXPORT_VERSION))
    model.ir_version = 10
    save_model(model, os.path.join(directory, GRAPH_FILE))
    if kv_scales is not None:
        np.save(os.path.join(directory, SCALES_FILE), kv_scales)


def _layer(g: _Graph, shape: ModelShape, state: Mapping[str, torch.Tensor], i: int,
           kv_scales: np.ndarray | None) -> None:
    """Layer ``i``: from its normed input ``y.i`` (and residual stream) to the
    next layer's normed input (the last: ``hidden_states``); ``kv_scales``
    [2, heads, head_dim]: its K/V cache is int8."""
    p, eps, hd = f"layers.{i}.", shape.rms_eps, shape.head_dim
    resid = "inputs_embeds" if i == 0 else f"r2.{i - 1}"
    qkv = g.matmul(f"y.{i}", torch.cat([state[p + f"self_attn.{n}_proj.weight"] for n in "qkv"]), f"l{i}.qkv")
    inputs = [qkv, "", "", f"past_key_values.{i}.key", f"past_key_values.{i}.value", "seqlens_k", "total_len",
              "cos_cache", "sin_cache"]
    quant: dict = {}
    if kv_scales is not None:  # after position_ids, attention_bias, head_sink
        inputs += ["", "", "", g.init(f"l{i}.k_scale", kv_scales[0].reshape(scale_shape(shape))),
                   g.init(f"l{i}.v_scale", kv_scales[1].reshape(scale_shape(shape)))]
        quant = INT8_CACHE
    g.node("GroupQueryAttention", inputs, [f"l{i}.attn", f"present.{i}.key", f"present.{i}.value"], ms=True,
           num_heads=shape.heads, kv_num_heads=shape.kv_heads, scale=float(hd) ** -0.5, do_rotary=1,
           rotary_interleaved=0, **quant)
    o = g.matmul(f"l{i}.attn", state[p + "self_attn.o_proj.weight"], f"l{i}.o")
    ln2 = g.init(f"ln2.{i}", _vec(state[p + "post_attention_layernorm.weight"]))
    g.node("SkipSimplifiedLayerNormalization", [resid, o, ln2], [f"y2.{i}", "", "", f"r1.{i}"], ms=True,
           epsilon=eps)
    gate_up = torch.cat([state[p + "mlp.gate_proj.weight"], state[p + "mlp.up_proj.weight"]])
    g.node("Split", [g.matmul(f"y2.{i}", gate_up, f"l{i}.gate_up")], [f"l{i}.gate", f"l{i}.up"],
           axis=-1, num_outputs=2)
    g.node("Sigmoid", [f"l{i}.gate"], [f"l{i}.sig"])
    g.node("Mul", [f"l{i}.gate", f"l{i}.sig"], [f"l{i}.silu"])
    g.node("Mul", [f"l{i}.silu", f"l{i}.up"], [f"l{i}.act"])
    down = g.matmul(f"l{i}.act", state[p + "mlp.down_proj.weight"], f"l{i}.down")
    last = i == shape.layers - 1
    next_norm = "norm.weight" if last else f"layers.{i + 1}.input_layernorm.weight"
    norm = g.init(f"ln1.{i + 1}", _vec(state[next_norm]))
    g.node("SkipSimplifiedLayerNormalization", [f"r1.{i}", down, norm],
           ["hidden_states"] if last else [f"y.{i + 1}", "", "", f"r2.{i}"], ms=True, epsilon=eps)


def _mask_lengths(g: _Graph) -> None:
    """GroupQueryAttention's per-row lengths from the mask, as genai's graphs
    compute them: seqlens_k = sum(mask) - 1 (int32), total_len = mask width."""
    g.init("one", np.array([1], dtype=np.int64))
    g.init("one_scalar", np.array(1, dtype=np.int64))
    g.node("ReduceSum", ["attention_mask", "one"], ["mask_sum"], keepdims=0)
    g.node("Sub", ["mask_sum", "one"], ["seqlens_k64"])
    g.node("Cast", ["seqlens_k64"], ["seqlens_k"], to=6)  # int32
    g.node("Shape", ["attention_mask"], ["mask_shape"])
    g.node("Gather", ["mask_shape", "one_scalar"], ["total_len64"], axis=0)
    g.node("Cast", ["total_len64"], ["total_len"], to=6)


def _vec(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float32).numpy()
