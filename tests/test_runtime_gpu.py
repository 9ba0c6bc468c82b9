"""The GPU check runs end to end on the CPU with tiny weights; the CUDA path
itself (graphs, mixed precision) runs only where a GPU is present."""

from __future__ import annotations

import json

import pytest
import torch

from realtime.runtime import gpu_check
from realtime.runtime.api import RuntimeOptions
from runtime_fixtures import GREEDY, TEXTS, Driver, request, tiny_assets


def test_gpu_check_smoke_on_cpu(tmp_path):
    torch.set_num_threads(1)
    out = tmp_path / "report.json"
    assert gpu_check.main(["--out", str(out), "--device", "cpu", "--tiny"]) == 0
    report = json.loads(out.read_text())
    fid = report["fidelity"]
    assert fid["steps"] == 12 and fid["precision"] == "bf16"
    assert fid["first_divergent_step"] is None or 0 <= fid["first_divergent_step"] < 12
    assert set(report["graphs"]) == {"batch_1", "batch_2"}
    assert report["first_audio"]["first_audio_s"] > 0
    assert [t["batch"] for t in report["throughput"]] == [2, 4]
    assert all(t["realtime_factor"] > 0 for t in report["throughput"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graphs_match_eager_codes():
    from realtime.runtime.build import build_runner
    codes = {}
    for graphs in (False, True):
        opts = RuntimeOptions(weights="tiny-random", device="cuda", precision="fp32",
                              cuda_graphs=graphs, max_slots=4, batch_sizes=(1, 4), kv_buckets=(128,))
        runner = build_runner(opts, assets=tiny_assets())
        runner.warmup()
        d = Driver(runner)
        for i, text in enumerate(TEXTS):
            d.add(i, request(text, **GREEDY))
        d.run()
        codes[graphs] = d.codes
    for i in range(len(TEXTS)):
        assert torch.equal(codes[False][i], codes[True][i])
