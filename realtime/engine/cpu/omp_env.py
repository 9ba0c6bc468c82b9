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
the machine is otherwise idle as the process starts, else sleeping workers; it
records the choice, the reason and whether it was in time (torch not yet
imported). Idle means other work used under ``IDLE_LOAD_PER_CPU`` of each
usable CPU over the ``PROBE_SECONDS`` just before (``/proc/stat``, the
process's own CPUs): the 1-minute load average, the fallback where
``/proc/stat`` cannot be read, lags, and a server started within a minute of
other work (a build, a benchmark, the server it replaces) read busy from it and
slept on an idle machine.
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
import time

WAIT_POLICY = "OMP_WAIT_POLICY"
SPIN_COUNT = "GOMP_SPINCOUNT"
QUIET_SPIN_COUNT = "10000"
IDLE_LOAD_PER_CPU = 0.5
PROBE_SECONDS = 0.2
PROC_STAT = "/proc/stat"  # per CPU: user nice system idle iowait irq softirq steal ... (clock ticks)
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


def cpu_ticks(path: str = PROC_STAT) -> dict[int, tuple[int, int]]:
    """Per CPU number, (busy, total) clock ticks since boot; {} where unreadable.
    Stolen time counts as busy: the hypervisor gave the CPU to someone else."""
    ticks = {}
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                name, *fields = line.split()
                if not name.startswith("cpu") or name == "cpu":
                    continue
                user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields[:8])
                busy = user + nice + system + irq + softirq + steal
                ticks[int(name[3:])] = (busy, busy + idle + iowait)
    except (OSError, ValueError):
        return {}
    return ticks


def busy_between(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]],
                 cpus: set[int]) -> float | None:
    """CPUs' worth of work ``cpus`` ran between two ``cpu_ticks`` readings
    (None: no ticks passed on any of them). Pure."""
    busy, seen = 0.0, False
    for cpu in cpus & before.keys() & after.keys():
        total = after[cpu][1] - before[cpu][1]
        if total > 0:
            busy += (after[cpu][0] - before[cpu][0]) / total
            seen = True
    return busy if seen else None


def busy_cpus(seconds: float = PROBE_SECONDS, path: str = PROC_STAT) -> float | None:
    """CPUs' worth of other work on this process's CPUs over the next
    ``seconds`` (this process sleeps meanwhile); None where not known."""
    try:
        cpus = os.sched_getaffinity(0)
    except (AttributeError, OSError):  # not Linux
        return None
    before = cpu_ticks(path)
    if not before:
        return None
    time.sleep(seconds)
    return busy_between(before, cpu_ticks(path), cpus)


def choose(load: float | None, cpus: int, busy: float | None = None) -> tuple[dict[str, str], str]:
    """The libgomp variables for a machine where other work kept ``busy`` CPUs
    busy just now (None: not known; the 1-minute ``load`` decides, None: not
    known either) with ``cpus`` usable CPUs, and why, in words. Pure."""
    seen = (f"{busy:.2f} of {cpus} CPUs busy over {PROBE_SECONDS:g} s" if busy is not None
            else "load unknown" if load is None else f"load {load:.2f} on {cpus} CPUs")
    if busy is not None and load is not None:
        seen += f"; 1-minute load {load:.2f}"
    level = busy if busy is not None else load
    if level is not None and level < IDLE_LOAD_PER_CPU * cpus:
        return {SPIN_COUNT: QUIET_SPIN_COUNT}, f"machine idle ({seen}): idle workers spin briefly"
    return {WAIT_POLICY: "PASSIVE"}, f"machine busy ({seen}): idle workers sleep"


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
        settings, _reason = choose(load, usable_cpus(), busy_cpus())
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
