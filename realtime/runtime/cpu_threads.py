"""torch's thread settings for the CPU runtime, chosen once at build.

Thread: called from ``build_runner`` on the model thread, before the model is
built (the GEMM measurement runs at the thread count chosen here).
"""

from __future__ import annotations

import logging
import os

import torch

from realtime.runtime import omp_env

log = logging.getLogger(__name__)


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, e.g. a container's cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def configure_threads(requested: int) -> int:
    """Set torch's intra-op threads: ``requested`` when > 0, else one per
    usable CPU. Returns the count set."""
    if requested < 0:
        raise ValueError(f"cpu threads must be >= 0, got {requested}")
    cpus = usable_cpus()
    threads = requested or cpus
    torch.set_num_threads(threads)
    log.info("cpu threads: %d intra-op (%s; %d usable CPUs); %s", threads,
             "requested" if requested else "one per usable CPU", cpus, omp_env.describe())
    return threads
