"""torch's thread settings for the CPU runtime, chosen once at build.

Thread: called from ``build_runner`` on the model thread, before the model is
built (the GEMM measurement runs at the thread count chosen here).
"""

from __future__ import annotations

import logging

import torch

from realtime.engine.cpu import omp_env

log = logging.getLogger(__name__)

def configure_threads(requested: int) -> int:
    """Set torch's intra-op threads to ``requested`` when > 0; with 0 keep
    torch's own count (one per CPU, or what the host process chose) but no
    more than the usable CPUs: torch counts CPUs a quota does not grant, and
    threads beyond the cores wait on each other at every parallel region.
    Returns the count in effect."""
    if requested < 0:
        raise ValueError(f"cpu threads must be >= 0, got {requested}")
    cpus = omp_env.usable_cpus()
    current = torch.get_num_threads()
    threads = requested or min(current, cpus)
    if threads != current:
        torch.set_num_threads(threads)
    why = "requested" if requested else (
        "torch's count" if threads == current else f"capped to {cpus} usable CPUs")
    log.info("cpu threads: %d intra-op (%s; %d usable CPUs); %s", threads, why, cpus,
             omp_env.describe())
    return threads


def leave_cores_to(pool_threads: int) -> None:
    """Another thread pool (ONNX Runtime's, ``pool_threads`` workers) does
    the heavy work: torch's own part runs on one thread, so the two pools do
    not wait on each other. For the process (torch's count is global): a
    second runtime built in it without ``cpu_threads`` then gets one."""
    if torch.get_num_threads() > 1:
        log.info("torch threads: 1 (ONNX Runtime runs the model on %d)", pool_threads)
        torch.set_num_threads(1)
