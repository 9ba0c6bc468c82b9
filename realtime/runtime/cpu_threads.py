"""torch's thread settings for the CPU runtime, chosen once at build.

Thread: called from ``build_runner`` on the model thread, before the model is
built (the GEMM measurement runs at the thread count chosen here).
"""

from __future__ import annotations

import logging
import math
import os

import torch

from realtime.runtime import omp_env

log = logging.getLogger(__name__)

CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"  # cgroup v2: "<quota> <period>" or "max <period>"


def cpu_quota(path: str = CGROUP_CPU_MAX) -> int | None:
    """CPUs a cgroup v2 CPU quota allows (rounded up), None without a quota."""
    try:
        with open(path, encoding="utf-8") as f:
            quota, period = f.read().split()[:2]
    except (OSError, ValueError):
        return None
    if quota == "max":
        return None
    return max(1, math.ceil(int(quota) / int(period)))


def usable_cpus() -> int:
    """CPUs this process may use: its affinity mask (a container's cpuset),
    capped by a cgroup CPU quota (a container's ``--cpus``)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cpus = os.cpu_count() or 1
    quota = cpu_quota()
    return min(cpus, quota) if quota else cpus


def configure_threads(requested: int) -> int:
    """Set torch's intra-op threads to ``requested`` when > 0; with 0 keep
    torch's own count (one per CPU, or what the host process chose) but no
    more than the usable CPUs: torch counts CPUs a quota does not grant, and
    threads beyond the cores wait on each other at every parallel region.
    Returns the count in effect."""
    if requested < 0:
        raise ValueError(f"cpu threads must be >= 0, got {requested}")
    cpus = usable_cpus()
    current = torch.get_num_threads()
    threads = requested or min(current, cpus)
    if threads != current:
        torch.set_num_threads(threads)
    why = "requested" if requested else (
        "torch's count" if threads == current else f"capped to {cpus} usable CPUs")
    log.info("cpu threads: %d intra-op (%s; %d usable CPUs); %s", threads, why, cpus,
             omp_env.describe())
    return threads
