"""OpenMP settings that only take effect if set before torch is loaded.

torch's CPU kernels (its own, oneDNN's, fbgemm's) run on libgomp's thread
team, and libgomp reads its environment once, when torch loads it. By default
a worker that waits for the next parallel region spins for ~300,000 rounds
before it sleeps. On a machine with as many busy threads as cores that is
fatal: the event loop, the client, another process or the hypervisor takes a
core, the spinning worker keeps its own, and every parallel region of a
decode step waits for the descheduled thread. Measured on 2 shared cores
(load average ~5 from other work), 2 threads, full-size step in ms, int8 bs1
/ bs8 / fp32 bs1 / bs8: spinning 53 / 622 / 674 / 363, sleeping (PASSIVE)
45 / 124 / 93 / 108, one thread 75 / 121 / 152 / 251.

``apply_defaults()`` therefore sets ``OMP_WAIT_POLICY=PASSIVE`` when the
environment does not choose, and records whether it was in time (torch not
yet imported). ``realtime.runtime`` calls it on import, which the server
reaches through its config before anything imports torch. No torch here.
"""

from __future__ import annotations

import os
import sys

WAIT_POLICY = "OMP_WAIT_POLICY"
DEFAULT_WAIT_POLICY = "PASSIVE"

# How the policy in effect came about, for the start-up log: "set", "inherited"
# (the environment chose) or "late" (torch was loaded before we could set it).
source = "unset"


def apply_defaults() -> None:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless the environment sets it; idempotent."""
    global source
    if source != "unset":
        return
    if os.environ.get(WAIT_POLICY):
        source = "inherited"
    elif "torch" in sys.modules:
        source = "late"
    else:
        os.environ[WAIT_POLICY] = DEFAULT_WAIT_POLICY
        source = "set"


def describe() -> str:
    """The wait policy libgomp runs with, and why, in words."""
    policy = os.environ.get(WAIT_POLICY)
    if source == "set":
        return f"{WAIT_POLICY}={policy} (set before torch loaded: idle workers sleep)"
    if source == "inherited":
        return f"{WAIT_POLICY}={policy} (from the environment)"
    return (f"{WAIT_POLICY} unset, libgomp default (workers spin; torch was loaded before "
            "realtime.runtime could set PASSIVE)")
