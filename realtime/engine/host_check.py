"""Start-up checks of the machine the runtime is about to fill.

Before the runner allocates its KV cache and captures graphs, ``check``
compares what the configuration needs (``Needs``: the weights, the KV cache
of the configured slots and positions, the graphs' and activations'
reserve) with what the machine has (``HostFacts``, read by ``gather``): the
CUDA driver against the CUDA runtime torch was built for, the GPU's free
memory, the host's available memory, the NUMA nodes and the CPUs this
process may use, the CUDA allocator's settings. Each check logs one line at
every start; a check that cannot pass refuses with ``StartupRefused``, one
line that gives the numbers and the fix. Where the slot count was left to
the hardware, too little GPU memory shrinks it instead (``fit_slots``) and
says so. ``findings`` is pure: tests fake the facts.

Thread: the caller's (start-up).
"""

from __future__ import annotations

import glob
import logging
import os
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

GIB = 2**30
HOST_MARGIN_BYTES = GIB // 2  # the interpreter, the server, buffers


class StartupRefused(RuntimeError):
    """The machine cannot run the configuration; the message says why and what to do."""


@dataclass(frozen=True)
class HostFacts:
    device: str  # "cuda" or "cpu"
    cuda_runtime: str | None = None  # the CUDA torch was built for, "13.0"
    cuda_driver: int | None = None  # the driver's CUDA version, 13000 for 13.0
    gpu_name: str | None = None
    gpu_free_bytes: int | None = None
    gpu_total_bytes: int | None = None
    gpu_numa_node: int | None = None
    host_available_bytes: int | None = None  # MemAvailable, capped by a cgroup's limit
    numa_nodes: dict[int, frozenset[int]] = field(default_factory=dict)  # node: its CPUs
    allowed_cpus: frozenset[int] = frozenset()  # this process's affinity mask
    allocator: str | None = None  # the caching allocator's backend
    alloc_conf: str | None = None  # PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF


@dataclass(frozen=True)
class Needs:
    weights_bytes: int  # on the device, in its dtype
    kv_bytes: int  # the KV cache and per-slot buffers of every slot
    slot_bytes: int  # one slot's share of kv_bytes
    slots: int
    reserve_bytes: int  # graph pools, the vocoder, activations of the largest batch
    slots_auto: bool = False  # the slot count was left to the hardware: shrink it

    @property
    def total(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.reserve_bytes


@dataclass(frozen=True)
class Finding:
    check: str
    message: str
    refuse: bool = False
    advice: bool = False
    slots: int | None = None  # a shrunk slot count


def _gib(n: int) -> str:
    return f"{n / GIB:.1f} GiB"


def _version(v: int) -> str:
    return f"{v // 1000}.{v % 1000 // 10}"


def findings(facts: HostFacts, needs: Needs) -> list[Finding]:
    """Every check's line for ``facts`` and ``needs`` (module docstring). Pure."""
    out: list[Finding] = []
    if facts.device == "cuda":
        out.append(_driver(facts))
        out.append(_gpu_memory(facts, needs))
        out.append(Finding("allocator", f"CUDA allocator {facts.allocator or 'native'}, "
                           f"alloc conf {facts.alloc_conf or 'unset'}" + _alloc_advice(facts.alloc_conf),
                           advice="expandable_segments:true" in (facts.alloc_conf or "").lower()))
    out.append(_host_memory(facts, needs))
    out.append(_numa(facts))
    return out


def _driver(facts: HostFacts) -> Finding:
    runtime, driver = facts.cuda_runtime, facts.cuda_driver
    if runtime is None or driver is None:
        return Finding("cuda", f"CUDA runtime {runtime or 'unknown'}, driver "
                       f"{_version(driver) if driver else 'unknown'}: cannot compare")
    major = int(runtime.split(".")[0])
    if driver // 1000 < major:
        return Finding("cuda", f"the CUDA driver supports CUDA {_version(driver)} but torch was built for "
                       f"CUDA {runtime}: upgrade the NVIDIA driver, or install a torch built for CUDA "
                       f"{driver // 1000}.x (docs/install.md: make serve TORCH_INDEX=...)", refuse=True)
    return Finding("cuda", f"CUDA driver {_version(driver)} runs torch's CUDA {runtime}"
                   f" on {facts.gpu_name or 'the GPU'}")


def _gpu_memory(facts: HostFacts, needs: Needs) -> Finding:
    free, total = facts.gpu_free_bytes, facts.gpu_total_bytes
    if free is None:
        return Finding("gpu memory", "free GPU memory unknown: not checked")
    summary = (f"weights {_gib(needs.weights_bytes)} + KV {_gib(needs.kv_bytes)} ({needs.slots} slots) "
               f"+ graphs and activations {_gib(needs.reserve_bytes)} = {_gib(needs.total)}")
    if needs.total <= free:
        return Finding("gpu memory", f"GPU memory: {summary} of {_gib(free)} free"
                       + (f" ({_gib(total)} in all)" if total else ""))
    fit = (free - needs.weights_bytes - needs.reserve_bytes) // max(1, needs.slot_bytes)
    if needs.slots_auto and fit >= 2:
        return Finding("gpu memory", f"GPU memory: {summary} but only {_gib(free)} free (another process "
                       f"holds the rest): {int(fit)} slots instead of {needs.slots}", advice=True,
                       slots=int(fit))
    fix = (f"--max-slots {int(fit)} (or fewer --kv-buckets positions)" if fit >= 2
           else "free the GPU (nvidia-smi lists what holds it) or use --device cpu")
    return Finding("gpu memory", f"not enough GPU memory: {summary}, only {_gib(free)} free: {fix}",
                   refuse=True)


def _host_memory(facts: HostFacts, needs: Needs) -> Finding:
    available = facts.host_available_bytes
    # On the CPU the KV cache lives in host memory; the weights are already there.
    want = HOST_MARGIN_BYTES + (needs.kv_bytes if facts.device == "cpu" else 0)
    if available is None:
        return Finding("host memory", "available host memory unknown: not checked")
    if available < want:
        fit = (available - HOST_MARGIN_BYTES) // max(1, needs.slot_bytes)
        fix = f"--max-slots {int(fit)}" if fit >= 2 else "a machine (or container limit) with more memory"
        return Finding("host memory", f"not enough host memory: {_gib(want)} needed "
                       f"(KV cache {_gib(needs.kv_bytes)} and a margin), {_gib(available)} available: {fix}",
                       refuse=True)
    return Finding("host memory", f"host memory: {_gib(available)} available, {_gib(want)} more needed")


def _numa(facts: HostFacts) -> Finding:
    cpus = facts.allowed_cpus
    nodes = {n: c for n, c in facts.numa_nodes.items() if c}
    spanned = sorted(n for n, c in nodes.items() if c & cpus)
    line = f"CPUs: {len(cpus)} usable" + (f" on NUMA nodes {spanned} of {len(nodes)}" if nodes else "")
    if len(spanned) > 1:
        target = facts.gpu_numa_node if facts.gpu_numa_node in nodes else spanned[0]
        where = "the GPU's node" if facts.gpu_numa_node in nodes else "one node"
        return Finding("numa", f"{line}: memory and threads cross nodes; bind to {where}, e.g. "
                       f"numactl --cpunodebind={target} --membind={target} python -m realtime serve",
                       advice=True)
    return Finding("numa", line)


def _alloc_advice(conf: str | None) -> str:
    if conf and "expandable_segments:true" in conf.lower():
        return ("; expandable segments let graph pools and the cache grow in place, but the "
                "runtime's graphs were measured without them: unset it if a capture fails")
    return ""


def fit_slots(found: list[Finding]) -> int | None:
    """The shrunk slot count a finding asks for, if any."""
    return next((f.slots for f in found if f.slots is not None), None)


def check(facts: HostFacts, needs: Needs) -> list[Finding]:
    """Log every finding; raise ``StartupRefused`` with the first refusal."""
    found = findings(facts, needs)
    for f in found:
        (log.warning if f.advice or f.refuse else log.info)("start-up check: %s", f.message)
    refused = [f for f in found if f.refuse]
    if refused:
        raise StartupRefused(refused[0].message)
    return found


# --- reading the machine -----------------------------------------------------------------

def gather(device) -> HostFacts:
    """The facts of this machine for ``device`` (a torch.device)."""
    import torch
    facts: dict = dict(device=device.type, host_available_bytes=_host_available(),
                       numa_nodes=_numa_nodes(), allowed_cpus=_allowed_cpus())
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        free, total = torch.cuda.mem_get_info(index)
        props = torch.cuda.get_device_properties(index)
        facts.update(cuda_runtime=torch.version.cuda, cuda_driver=_cuda_driver(),
                     gpu_name=props.name, gpu_free_bytes=free, gpu_total_bytes=total,
                     gpu_numa_node=_pci_numa_node(props),
                     allocator=torch.cuda.get_allocator_backend(),
                     alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF")
                     or os.environ.get("PYTORCH_ALLOC_CONF"))
    return HostFacts(**facts)


def _cuda_driver() -> int | None:
    """The driver's CUDA version (``cuDriverGetVersion``: 13000 for 13.0)."""
    import ctypes
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
        version = ctypes.c_int()
        if libcuda.cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return version.value


def _pci_numa_node(props) -> int | None:
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    domain, device = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
    try:
        with open(f"/sys/bus/pci/devices/{domain:04x}:{bus:02x}:{device:02x}.0/numa_node") as f:
            node = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def _host_available(meminfo: str = "/proc/meminfo",
                    cgroup: str = "/sys/fs/cgroup/memory.max") -> int | None:
    available = None
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    try:
        with open(cgroup) as f:
            limit = f.read().strip()
        if available is not None and limit != "max":
            available = min(available, int(limit))
    except (OSError, ValueError):
        pass
    return available


def _numa_nodes(root: str = "/sys/devices/system/node") -> dict[int, frozenset[int]]:
    nodes = {}
    for path in glob.glob(f"{root}/node[0-9]*/cpulist"):
        try:
            with open(path) as f:
                nodes[int(path.split("/node")[-1].split("/")[0])] = parse_cpulist(f.read())
        except (OSError, ValueError):
            continue
    return nodes


def parse_cpulist(text: str) -> frozenset[int]:
    """``0-3,8,10-11`` as a set of CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if "-" in part:
            lo, hi = part.split("-")
            cpus.update(range(int(lo), int(hi) + 1))
        elif part:
            cpus.add(int(part))
    return frozenset(cpus)


def _allowed_cpus() -> frozenset[int]:
    try:
        return frozenset(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return frozenset(range(os.cpu_count() or 1))
