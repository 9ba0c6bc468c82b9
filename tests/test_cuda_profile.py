"""The CUDA profile from the GPU's memory and the model's sizes (a pure
function: the figures of an H200 and smaller GPUs, no GPU needed), and the
configuration that leaves shapes to it."""

from __future__ import annotations

import pytest

from realtime.engine.cuda.profile import MAX_ROWS, MAX_SLOTS, cuda_profile, slot_bytes
from realtime.engine.model.shapes import FULL, TINY
from realtime.server.config import load_config

GIB = 2**30
H200 = 143771 * 2**20  # torch.cuda.get_device_properties(0).total_memory on an H200


def test_a_slot_at_2048_positions_holds_126_mib_in_bf16():
    # 20 layers x K and V x 12 heads x 64 x 2 bytes per position, plus fp32 hidden and codes.
    assert slot_bytes(FULL, 2048, 2) == 2048 * (20 * 2 * 768 * 2 + 768 * 4 + 4 * 8)
    assert slot_bytes(FULL, 2048, 2) / 2**20 == pytest.approx(126, abs=0.5)


def test_an_h200_gets_512_slots_and_batches_up_to_256():
    p = cuda_profile(H200, FULL, 2)
    assert p.max_slots == MAX_SLOTS == 512 and max(p.batch_sizes) == MAX_ROWS == 256
    assert p.kv_buckets == (256, 512, 1024, 2048)
    assert p.batch_sizes == (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
    assert p.max_slots * p.slot_bytes <= p.kv_budget_bytes <= 0.6 * H200
    assert p.decode_graphs == 48 and p.prefill_graphs == 16
    assert "512 slots" in p.describe()


@pytest.mark.parametrize(("gib", "slots", "rows"), [(80, 352, 128), (40, 160, 64), (24, 80, 32),
                                                    (16, 40, 16), (8, 6, 2), (4, 2, 1)])
def test_smaller_gpus_get_what_their_memory_holds(gib, slots, rows):
    p = cuda_profile(gib * GIB, FULL, 2)
    assert (p.max_slots, max(p.batch_sizes)) == (slots, rows)
    assert p.max_slots >= 2 and p.batch_sizes[0] == 1
    if slots > 2:
        assert p.max_slots * p.slot_bytes <= p.kv_budget_bytes
    # Every batch fits the slots beside the interactive reserve.
    assert max(p.batch_sizes) <= p.max_slots - 1 or p.max_slots == 2


def test_fp32_halves_the_slots_and_tiny_weights_fill_the_cap():
    assert cuda_profile(H200, FULL, 4).max_slots == 328
    assert cuda_profile(16 * GIB, TINY, 4).max_slots == MAX_SLOTS


def test_the_configuration_leaves_to_the_hardware_only_the_shapes_not_given():
    _, config = load_config([], environ={})
    assert config.runtime_options().auto_shapes == ("batch_sizes", "kv_buckets", "max_slots")
    _, config = load_config(["--max-slots", "32"], environ={"CHATTTS_RT_KV_BUCKETS": "256,512"})
    assert config.runtime_options().auto_shapes == ("batch_sizes",)
    # The CPU profile is the configuration's defaults, unchanged.
    assert (config.batch_sizes, config.max_slots) == ((1, 2, 4, 8), 32)


def test_build_applies_the_profile_to_the_shapes_left_to_it(monkeypatch, caplog):
    import torch

    from realtime.engine import build
    from realtime.engine.api import RuntimeOptions
    from realtime.engine.model.weights import random_assets

    class Props:
        total_memory = H200

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Props)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device: "NVIDIA H200")
    assets = random_assets(TINY, seed=0)
    options = RuntimeOptions(max_slots=32, auto_shapes=("batch_sizes", "kv_buckets"))
    with caplog.at_level("INFO", logger="realtime.engine.build"):
        chosen = build._with_cuda_profile(options, torch.device("cuda"), assets, torch.bfloat16)
    assert chosen.max_slots == 32  # given: kept
    assert max(chosen.batch_sizes) == 256 and chosen.kv_buckets == (256, 512, 1024, 2048)
    assert "cuda profile (NVIDIA H200)" in caplog.text and "512 slots" in caplog.text
