"""OpenMP settings that only take effect if set before torch is loaded.

torch's CPU kernels (its own, oneDNN's, fbgemm's) run on libgomp's thread
team, and libgomp reads its environment once, when torch loads it. What an
idle worker does between parallel regions decides a CPU decode step, which is
~100 short parallel regions with a little Python between them:

- spinning keeps the worker hot for the next region: on a machine the server
  has to itself that roughly halves a batch-1 step;
- on a machine whose cores other work wants, a spinning worker keeps a core
  that the event loop, the client, another process or the hypervisor needs,
  and every region waits for whichever thread was descheduled: there libgomp's
  default spin makes a step several times slower than sleeping workers.

The measured figures (steps by policy, alone and beside other work) are in
docs/runtime.md ("CPU fallback: GEMM backends, int8, threads"); they go stale, this contract does not.

``apply_defaults()`` therefore chooses, when the environment does not
(``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` set: they win): a short spin when
the machine is otherwise idle as the process starts (1-minute load average
below ``IDLE_LOAD_PER_CPU`` per usable CPU), else sleeping workers; it records
the choice, the reason and whether it was in time (torch not yet imported).
The choice holds for the life of the process (docs/runtime.md says what a
wrong guess costs); set the variables to decide for a deployment. The entry
points call it first, before anything imports torch: ``python -m realtime``
(``realtime.__main__``) and ``python -m bench``; importing a module applies
nothing. No torch here.
"""

from __future__ import annotations

import math
import os
import sys

WAIT_POLICY = "OMP_WAIT_POLICY"
SPIN_COUNT = "GOMP_SPINCOUNT"
QUIET_SPIN_COUNT = "10000"
IDLE_LOAD_PER_CPU = 0.5
CGROUP_CPU_MAX = "/sys/fs/cgroup/cpu.max"  # cgroup v2: "<quota> <period>" or "max <period>"

# How the settings in effect came about, for the start-up log: "set",
# "inherited" (the environment chose) or "late" (torch was loaded first).
source = "unset"
_reason = ""


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


def choose(load: float | None, cpus: int) -> tuple[dict[str, str], str]:
    """The libgomp variables for a machine at 1-minute ``load`` (None: not
    known) with ``cpus`` usable CPUs, and why, in words. Pure."""
    if load is not None and load < IDLE_LOAD_PER_CPU * cpus:
        return ({SPIN_COUNT: QUIET_SPIN_COUNT},
                f"machine idle (load {load:.2f} on {cpus} CPUs): idle workers spin briefly")
    known = "load unknown" if load is None else f"load {load:.2f} on {cpus} CPUs"
    return {WAIT_POLICY: "PASSIVE"}, f"machine busy ({known}): idle workers sleep"


def apply_defaults() -> None:
    """Choose the wait policy unless the environment did; idempotent."""
    global source, _reason
    if source != "unset":
        return
    if os.environ.get(WAIT_POLICY) or os.environ.get(SPIN_COUNT):
        source = "inherited"
    elif "torch" in sys.modules:
        source = "late"
    else:
        try:
            load: float | None = os.getloadavg()[0]
        except OSError:
            load = None
        settings, _reason = choose(load, usable_cpus())
        os.environ.update(settings)
        source = "set"


def spinning() -> bool:
    """Whether idle workers were told to spin (briefly or for ever): other
    thread pools (ONNX Runtime's) follow the same choice."""
    if os.environ.get(WAIT_POLICY, "").upper() == "PASSIVE":
        return False
    return bool(os.environ.get(SPIN_COUNT)) or os.environ.get(WAIT_POLICY, "").upper() == "ACTIVE"


def describe() -> str:
    """The wait policy libgomp runs with, and why, in words."""
    chosen = ", ".join(f"{k}={os.environ[k]}" for k in (WAIT_POLICY, SPIN_COUNT) if os.environ.get(k))
    if source == "set":
        return f"{chosen} ({_reason}; set before torch loaded)"
    if source == "inherited":
        return f"{chosen} (from the environment)"
    return ("OpenMP wait policy unset, libgomp default (workers spin; torch was loaded "
            "before realtime.engine could choose)")
