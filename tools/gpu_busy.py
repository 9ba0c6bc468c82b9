"""The GPU's busy fraction while a section runs, sampled from the driver.

``BusySampler(device)`` is a context manager: on CUDA a thread reads the
device's utilization (the fraction of the last sample period in which a
kernel ran, as NVML reports it: ``torch.cuda.utilization()`` where pynvml
is present, else ``nvidia-smi``) every ``period_s``; ``report()`` gives the
mean and p50 as fractions, and the sample count. It measures the whole
device, so it also sees a server running in another process. On the CPU,
or when no reading works, the fraction is None (and ``busy_note`` says why).

Thread: the sampler's own daemon thread; ``report`` after the ``with``.
"""

from __future__ import annotations

import logging
import statistics
import subprocess
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


def _nvml_reader() -> Callable[[], float] | None:
    import torch
    try:
        torch.cuda.utilization()
    except Exception:  # no pynvml or no NVML: try nvidia-smi
        log.debug("no NVML utilization reading", exc_info=True)
        return None
    return lambda: float(torch.cuda.utilization())


def _smi_read() -> float:
    out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits",
                          "-i", "0"], capture_output=True, text=True, timeout=5, check=True).stdout
    return float(out.split()[0])


def default_reader(device: str) -> tuple[Callable[[], float] | None, str]:
    """A function giving utilization in percent, or None and why not."""
    if device != "cuda":
        return None, "not a GPU"
    nvml = _nvml_reader()
    if nvml is not None:
        return nvml, "nvml"
    try:
        _smi_read()
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        return None, f"no utilization reading: {type(exc).__name__}: {exc}"
    return _smi_read, "nvidia-smi"


class BusySampler:
    """Samples utilization while the ``with`` block runs (module docstring)."""

    def __init__(self, device: str, period_s: float = 0.1,
                 reader: Callable[[], float] | None = None) -> None:
        if reader is None:
            reader, self.source = default_reader(device)
        else:
            self.source = "given"
        self.reader, self.period_s = reader, period_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> BusySampler:
        if self.reader is not None:
            self._thread = threading.Thread(target=self._run, name="busy-sampler", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        assert self.reader is not None
        while not self._stop.wait(self.period_s):
            try:
                self.samples.append(self.reader() / 100.0)
            except Exception as exc:  # a failed reading ends sampling, not the section
                log.warning("busy sampler: %s", exc, exc_info=True)
                self.source = f"stopped: {exc}"
                return

    def report(self) -> dict:
        if not self.samples:
            return {"gpu_busy_fraction": None, "busy_note": self.source}
        return {"gpu_busy_fraction": statistics.fmean(self.samples),
                "gpu_busy_p50": statistics.median(self.samples),
                "busy_samples": len(self.samples), "busy_source": self.source}
