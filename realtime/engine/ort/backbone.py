"""One ONNX Runtime session of the backbone graph, run with IO binding.

``OrtBackbone(path, threads, spin)`` opens ``graph.GRAPH_FILE`` under
``path`` on the CPU provider: ``threads`` intra-op threads (the runtime's
CPU threads), sequential execution, idle workers spinning only when the
OpenMP policy chose to spin (a shared machine wants its cores back between
steps: ``cpu.omp_env``). ``run`` binds the step's embeddings, mask and
output where they lie (torch tensors and numpy buffers, no copies) and the
K/V window of ``kv.OrtKV`` as both past and present: the graph writes each
row's K/V in place (``kv_dtype``: the graph's cache, fp32 or int8, which the
buffers must match). The K/V bindings are kept while the window (base row,
rows, the same ``OrtKV``) stays the same, and the window holds its ``OrtKV``:
the session writes into those buffers, so they live until another is bound
(keyed by ``id()`` alone, a cache freed and a new one at the same address
were taken for one another, and the graph wrote into freed memory).

Raises ``BackboneError`` with a one-line reason when the graph cannot be
opened (the start-up error says to rebuild it).

Thread: the model thread.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
import torch

from realtime.engine.ort.graph import GRAPH_FILE
from realtime.engine.ort.kv import OrtKV

log = logging.getLogger(__name__)


class BackboneError(RuntimeError):
    """The backbone graph cannot be loaded or run."""


def session_options(threads: int, spin: bool) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    # Spin between the graph's ops, not after it: torch's own threads (sampling,
    # the vocoder's FFTs) want the same cores as soon as a run returns.
    so.add_session_config_entry("session.force_spinning_stop", "1")
    so.log_severity_level = 3  # warnings about unused initializers are not ours to fix
    return so


class OrtBackbone:
    """The backbone graph under ``path``; see the module docstring."""

    def __init__(self, path: str, threads: int, spin: bool):
        import onnxruntime as ort

        try:
            self.session = ort.InferenceSession(os.path.join(path, GRAPH_FILE),
                                                session_options(threads, spin),
                                                providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own types, not exported
            raise BackboneError(f"cannot load the ONNX backbone in {path}: "
                                f"{type(exc).__name__}: {exc}") from exc
        self.threads, self.spin = threads, spin
        kv_type = {i.name: i.type for i in self.session.get_inputs()}["past_key_values.0.key"]
        self.kv_dtype: type = np.int8 if kv_type == "tensor(int8)" else np.float32  # the graph's K/V cache
        # Q * V where the graph outputs logits (graph.write_backbone given the heads), else 0
        self.logits_width: int = next((o.shape[-1] for o in self.session.get_outputs()
                                       if o.name == "logits"), 0)
        self._binding = self.session.io_binding()
        self._window: tuple[int, int, OrtKV | None] = (-1, -1, None)  # (base, rows, K/V bound)

    @property
    def has_logits(self) -> bool:
        return self.logits_width > 0

    def run(self, x: torch.Tensor, mask: np.ndarray, kv: OrtKV, base: int,
            logits: torch.Tensor | None = None) -> torch.Tensor:
        """``x`` [B, T, D] fp32 (contiguous; batch rows in K/V row order from
        ``base``), ``mask`` int64 [B, total] -> hidden [B, T, D] fp32 (new).
        ``logits`` [B, Q * V] fp32 (contiguous): where the graph ``has_logits``,
        it writes each row's last-position logits there (None: into scratch,
        bound anew each run, since a binding outlives the buffer it names)."""
        b, t, d = x.shape
        io = self._binding
        out = torch.empty(b, t, d, dtype=torch.float32)
        io.bind_input("inputs_embeds", "cpu", 0, np.float32, [b, t, d], x.data_ptr())
        io.bind_input("attention_mask", "cpu", 0, np.int64, list(mask.shape), mask.ctypes.data)
        io.bind_output("hidden_states", "cpu", 0, np.float32, [b, t, d], out.data_ptr())
        if self.has_logits:
            if logits is None:
                logits = torch.empty(b, self.logits_width, dtype=torch.float32)
            io.bind_output("logits", "cpu", 0, np.float32, [b, 1, self.logits_width], logits.data_ptr())
        if self._window[:2] != (base, b) or self._window[2] is not kv:
            shape = [b, kv.heads, kv.max_len, kv.head_dim]
            if kv.dtype != self.kv_dtype:
                raise BackboneError(f"the graph's K/V cache is {np.dtype(self.kv_dtype)}, "
                                    f"the buffers {kv.dtype}")
            for name, address in kv.pointers(base):
                io.bind_input(name, "cpu", 0, self.kv_dtype, shape, address)
                io.bind_output(name.replace("past_key_values", "present"), "cpu", 0, self.kv_dtype, shape,
                               address)
            self._window = (base, b, kv)
        self.session.run_with_iobinding(io)
        return out
