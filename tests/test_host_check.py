"""Start-up checks of the machine (realtime/engine/host_check.py), with the
machine's facts faked: each check logs its line, refuses in one line with the
numbers and the fix, or shrinks the slots it was free to choose."""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch

from realtime.engine import host_check
from realtime.engine.host_check import GIB, HostFacts, Needs, StartupRefused, findings, parse_cpulist
from tests.runtime_fixtures import tiny_runner

H200 = HostFacts(device="cuda", cuda_runtime="13.0", cuda_driver=13000, gpu_name="NVIDIA H200",
                 gpu_free_bytes=140 * GIB, gpu_total_bytes=141 * GIB, gpu_numa_node=1,
                 host_available_bytes=100 * GIB,
                 numa_nodes={0: frozenset(range(8)), 1: frozenset(range(8, 16))},
                 allowed_cpus=frozenset(range(8, 16)), allocator="native")
NEEDS = Needs(weights_bytes=GIB, kv_bytes=64 * GIB, slot_bytes=GIB // 8, slots=512, reserve_bytes=4 * GIB,
              slots_auto=False)


def _by_check(found):
    return {f.check: f for f in found}


def test_a_healthy_gpu_machine_passes_every_check_with_its_numbers():
    found = _by_check(findings(H200, NEEDS))
    assert set(found) == {"cuda", "gpu memory", "allocator", "host memory", "numa"}
    assert not any(f.refuse or f.advice for f in found.values())
    assert "driver 13.0" in found["cuda"].message and "H200" in found["cuda"].message
    assert "512 slots" in found["gpu memory"].message and "69.0 GiB" in found["gpu memory"].message
    assert "140.0 GiB free" in found["gpu memory"].message
    assert "8 usable on NUMA nodes [1] of 2" in found["numa"].message


def test_a_driver_older_than_torchs_cuda_is_refused_with_the_fix():
    old = dataclasses.replace(H200, cuda_driver=12080)
    found = _by_check(findings(old, NEEDS))["cuda"]
    assert found.refuse
    assert "12.8" in found.message and "CUDA 13.0" in found.message
    assert "upgrade the NVIDIA driver" in found.message and "TORCH_INDEX" in found.message
    # A newer minor of the same major runs (CUDA's minor-version compatibility).
    assert not _by_check(findings(dataclasses.replace(H200, cuda_driver=13020), NEEDS))["cuda"].refuse


def test_too_little_free_gpu_memory_refuses_with_the_slots_that_would_fit():
    busy = dataclasses.replace(H200, gpu_free_bytes=37 * GIB)
    found = _by_check(findings(busy, NEEDS))["gpu memory"]
    assert found.refuse and found.slots is None
    # (37 - 1 - 4) GiB at 1/8 GiB a slot: 256 slots fit.
    assert "--max-slots 256" in found.message and "37.0 GiB free" in found.message
    nothing = _by_check(findings(dataclasses.replace(H200, gpu_free_bytes=4 * GIB), NEEDS))["gpu memory"]
    assert nothing.refuse and "--device cpu" in nothing.message


def test_slots_left_to_the_hardware_shrink_to_the_free_memory_instead():
    busy = dataclasses.replace(H200, gpu_free_bytes=37 * GIB)
    found = findings(busy, dataclasses.replace(NEEDS, slots_auto=True))
    mem = _by_check(found)["gpu memory"]
    assert not mem.refuse and mem.advice and mem.slots == 256
    assert host_check.fit_slots(found) == 256
    assert "256 slots instead of 512" in mem.message


def test_host_memory_on_the_cpu_counts_the_kv_cache():
    cpu = HostFacts(device="cpu", host_available_bytes=8 * GIB, allowed_cpus=frozenset({0, 1}))
    found = _by_check(findings(cpu, dataclasses.replace(NEEDS, kv_bytes=16 * GIB)))["host memory"]
    assert found.refuse and "16.0 GiB" in found.message and "8.0 GiB available" in found.message
    assert "--max-slots 60" in found.message  # (8 - 0.5) GiB at 1/8 GiB a slot
    ok = _by_check(findings(cpu, dataclasses.replace(NEEDS, kv_bytes=GIB)))["host memory"]
    assert not ok.refuse
    # On a GPU the cache is on the device: the host needs only the margin.
    assert not _by_check(findings(dataclasses.replace(H200, host_available_bytes=GIB), NEEDS))[
        "host memory"].refuse


def test_cpus_across_numa_nodes_get_advice_to_bind_to_the_gpus_node():
    spread = dataclasses.replace(H200, allowed_cpus=frozenset(range(16)))
    found = _by_check(findings(spread, NEEDS))["numa"]
    assert found.advice and not found.refuse
    assert "--cpunodebind=1 --membind=1" in found.message and "GPU's node" in found.message
    cpu = HostFacts(device="cpu", numa_nodes=spread.numa_nodes, allowed_cpus=frozenset(range(16)))
    assert "--cpunodebind=0" in _by_check(findings(cpu, NEEDS))["numa"].message


def test_the_allocator_settings_are_logged_and_expandable_segments_flagged():
    assert "alloc conf unset" in _by_check(findings(H200, NEEDS))["allocator"].message
    expandable = dataclasses.replace(H200, alloc_conf="expandable_segments:True")
    found = _by_check(findings(expandable, NEEDS))["allocator"]
    assert found.advice and "expandable_segments:True" in found.message


def test_check_logs_every_line_and_raises_the_first_refusal(caplog):
    with caplog.at_level(logging.INFO, logger="realtime.engine.host_check"):
        host_check.check(H200, NEEDS)
    assert sum("start-up check:" in r.message for r in caplog.records) == 5
    with pytest.raises(StartupRefused, match="upgrade the NVIDIA driver"):
        host_check.check(dataclasses.replace(H200, cuda_driver=12000), NEEDS)


def test_parse_cpulist():
    assert parse_cpulist("0-3,8,10-11\n") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpulist("") == frozenset()


def test_this_machine_is_read_and_the_runner_logs_its_checks(caplog):
    facts = host_check.gather(torch.device("cpu"))
    assert facts.allowed_cpus and (facts.host_available_bytes or 0) > 0
    with caplog.at_level(logging.INFO, logger="realtime.engine.host_check"):
        tiny_runner(max_slots=4, batch_sizes=(1, 2), kv_buckets=(128,))
    lines = [r.message for r in caplog.records if r.message.startswith("start-up check:")]
    assert any("host memory" in line for line in lines) and any("CPUs:" in line for line in lines)


def test_the_runner_refuses_to_start_on_a_machine_without_the_memory(monkeypatch):
    poor = HostFacts(device="cpu", host_available_bytes=GIB // 4, allowed_cpus=frozenset({0}))
    monkeypatch.setattr(host_check, "gather", lambda device: poor)
    with pytest.raises(StartupRefused, match="not enough host memory"):
        tiny_runner(max_slots=4, batch_sizes=(1, 2), kv_buckets=(128,))
