"""The GPU check's sections on the CPU with tiny weights (the whole check
through its script: tests/test_gpu_check_script.py); the CUDA path
itself (graphs, mixed precision) runs only where a GPU is present. On the CPU,
the runner's graph path (padded batches, static inputs and outputs, replay)
runs under bench/strict_graphs.py's strict stand-in for capture (see also
tests/test_runtime_capture.py)."""

from __future__ import annotations

import json

import pytest
import torch
from runtime_fixtures import GREEDY, TEXTS, Driver, request, strict_graph_runner, tiny_assets, tiny_runner

from bench import strict_graphs
from bench.strict_graphs import StrictCapture
from realtime.engine.api import RuntimeOptions
from tools import gpu_check, gpu_sections, step_counts


def test_gpu_check_records_a_failing_section_and_goes_on(tmp_path, monkeypatch, one_torch_thread):
    # The whole check on the CPU, the server too: tests/test_gpu_check_script.py.
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(gpu_check, "server_section", lambda plan, device: {"stub": True})
    monkeypatch.setattr(gpu_sections, "fidelity", broken)
    monkeypatch.setattr(gpu_sections, "graphs_vs_eager", lambda *args: {"skipped_here": True})
    # The serving runner's capture failed: it runs eagerly, so the sections
    # measured on it fail too (their numbers stay).
    monkeypatch.setattr(gpu_sections, "graph_errors", lambda runner: ["decode 4x256: capture failed"])
    out = tmp_path / "report.json"
    assert gpu_check.main(["--out", str(out), "--device", "cpu", "--tiny"]) == 1
    report = json.loads(out.read_text())
    assert report["complete"] is False
    assert report["fidelity"]["error"] == "RuntimeError: boom"
    assert "boom" in report["fidelity"]["traceback"]
    assert "capture failed" in report["serving"]["graph_error"]
    for name in gpu_check.ON_SERVING_RUNNER:
        assert "capture failed" in report[name]["graph_error"], name
    assert "error" not in report["throughput"]["batch_4"]
    assert report["throughput"]["batch_4"]["audio_s"] > 0


def test_gpu_check_budget_skips_sections_but_writes_json(tmp_path, one_torch_thread):
    out = tmp_path / "report.json"
    assert gpu_check.main(["--out", str(out), "--device", "cpu", "--tiny", "--budget", "0"]) == 1
    report = json.loads(out.read_text())
    assert report["complete"] is False
    for name in ("assets",) + gpu_check.SECTIONS:
        assert "skipped" in report[name], name


def test_a_failed_capture_fails_the_graph_section(monkeypatch, one_torch_thread):
    monkeypatch.setattr(strict_graphs, "StrictCapture", lambda: _FailingCapture(fail_at=1))
    entry = gpu_sections.graphs_vs_eager(tiny_assets(), "cpu", (2,), (128,), 2, 2)
    assert "capture failed" in entry["graph_error"]
    assert entry["batch_2"]["jobs_with_identical_codes"] == "2/2"  # measured, eagerly
    assert gpu_check._failed(entry)


def test_graph_memory_is_what_private_pools_hold(monkeypatch):
    segments = [{"segment_pool_id": (0, 0), "total_size": 8 << 20, "allocated_size": 1 << 20},
                {"segment_pool_id": (1, 7), "total_size": 4 << 20, "allocated_size": 3 << 20},
                {"segment_pool_id": (1, 7), "total_size": 2 << 20, "allocated_size": 0}]
    monkeypatch.setattr(torch.cuda, "memory_snapshot", lambda: segments)
    assert gpu_sections.graph_pool_bytes() == {"graph_pool_mib": 6.0, "graph_pool_in_use_mib": 3.0,
                                               "graph_pool_segments": 2}


def test_kv_bytes_follow_the_shapes():
    from realtime.engine.model.shapes import FULL
    # The figure: batch 64 over a 2048 bucket in bf16 reads 7.5 GiB
    # once (the gather path moved about three times that).
    assert step_counts.kv_bytes(FULL, 2, 64, 2048)["read_mib"] == 64 * 2048 * 2 * 20 * 768 * 2 / 2**20
    assert step_counts.layer_weight_bytes(FULL, 2) / 2**20 == pytest.approx(360, rel=0.01)


class _FailingCapture(StrictCapture):
    """The strict stand-in, with the ``fail_at``-th capture raising."""

    def __init__(self, fail_at: int):
        super().__init__()
        self.fail_at, self.calls = fail_at, 0

    def __call__(self, fn, inputs):
        self.calls += 1
        if self.calls == self.fail_at:
            raise RuntimeError("capture failed")
        return super().__call__(fn, inputs)


def _graph_runner(fail_at=None):
    shapes = dict(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64, 128))
    if fail_at is None:
        return strict_graph_runner(**shapes)
    runner = tiny_runner(capture=_FailingCapture(fail_at), **shapes)
    runner.warmup()
    return runner


def _codes(runner):
    d = Driver(runner)
    for i, text in enumerate(TEXTS):
        d.add(i, request(text, **GREEDY))
    d.run()
    return d.codes


def test_graph_path_on_cpu_matches_eager(one_torch_thread):
    runner = _graph_runner()
    cache = runner.graphs
    assert set(cache.decode_graphs) == {(b, k) for b in (1, 2, 4) for k in (64, 128)}
    # Prompt buckets shorter than the cache (128): 32 and 64.
    assert set(cache.prefill_graphs) == {(b, p) for b in (1, 2, 4) for p in (32, 64)}
    assert cache.errors == []
    got = _codes(runner)
    assert sum(e.graph.replays for e in cache.decode_graphs.values()) > 0
    assert sum(e.graph.replays for e in cache.prefill_graphs.values()) > 0
    want = _codes(tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64, 128)))
    assert set(got) == set(want)
    for i in want:
        assert torch.equal(got[i], want[i]), i


def test_failed_capture_falls_back_to_eager(one_torch_thread):
    runner = _graph_runner(fail_at=3)
    cache = runner.graphs
    assert len(cache.decode_graphs) == 2 and not cache.prefill_graphs
    assert len(cache.errors) == 1 and "capture failed" in cache.errors[0]
    want = _codes(tiny_runner(max_slots=4, batch_sizes=(1, 2, 4), kv_buckets=(64, 128)))
    got = _codes(runner)
    for i in want:
        assert torch.equal(got[i], want[i]), i


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graphs_match_eager_codes():
    from realtime.engine.build import build_runner
    codes = {}
    for use_graphs in (False, True):
        opts = RuntimeOptions(weights="tiny-random", device="cuda", precision="fp32",
                              cuda_graphs=use_graphs, max_slots=4, batch_sizes=(1, 4),
                              kv_buckets=(128,))
        runner = build_runner(opts, assets=tiny_assets())
        runner.warmup()
        if use_graphs:
            assert runner.graphs.decode_graphs and not runner.graphs.errors
        codes[use_graphs] = _codes(runner)
    for i in range(len(TEXTS)):
        assert torch.equal(codes[False][i], codes[True][i])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_runner_buffers_live_on_cuda():
    from realtime.engine.build import build_runner
    opts = RuntimeOptions(weights="tiny-random", device="cuda", precision="auto",
                          max_slots=2, batch_sizes=(1,), kv_buckets=(64,))
    runner = build_runner(opts, assets=tiny_assets())
    assert runner.device == "cuda"  # hello.model.device
    m = runner.model
    tensors = [runner.codes, runner.hidden, m.cos, m.sin, m.emb_text, m.emb_code, m.norm,
               *runner.cache.k, *runner.cache.v]
    assert all(t.device.type == "cuda" for t in tensors)
    assert runner.cache.k[0].dtype == m.dtype == m.cos.dtype != torch.float32
    assert runner.hidden.dtype == torch.float32
