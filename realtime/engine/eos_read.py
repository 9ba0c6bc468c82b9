"""The step's EOS flags on the host: read in the step, or one step later.

A step's only device-to-host value is its rows' EOS flags ([B] bool). Read
in the step that drew them (``blocking``) the host waits for the whole step
before it can report, plan and launch the next one, and the device idles
meanwhile. Read one step later (``deferred``) the flags cross to a host
buffer (pinned on CUDA) in a non-blocking copy marked by an event, and the
runner returns at once; the next step is planned and launched while they
are in flight, and that step's ``take`` waits on the event (by then
usually passed) and hands them out.

What deferring costs, and why the audio is the same: a row whose flag said
EOS is known finished one step late, so the step launched meanwhile drew
one code for it that nothing keeps (``HeldJob.in_flight`` counts the codes
drawn whose flags are not yet read; a row that has ended discards its
extra). Its codes are those of the blocking read, and reach the host one
step later; its hidden states and audio agree within float rounding, not
bit for bit (the step after an end still carries the ended row, which can
lengthen the attended KV or change the batch's graph). The scheduler sees ``drawn`` codes
(the in-flight one counted) so its KV buckets cover what the device
writes; the count drops back by one when the flag turns out EOS.

Modes (``RuntimeOptions.eos_read``): ``auto`` defers on CUDA only (on the
CPU the step runs as it is issued: nothing overlaps, a deferred read only
wastes a step per finished job), ``deferred``, ``blocking``. The CPU runs
the deferred mode exactly as CUDA does, less the stream: tests check it
there. At most two steps' flags are in flight (the one just launched and
the one about to be taken); two host buffers alternate, so a buffer is
written again only after its flags were taken.

Thread: the model thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from realtime.engine.api import EOS_READS
from realtime.engine.held import HeldJob
from scheduler import JobId

log = logging.getLogger(__name__)


def deferred_for(mode: str, device: torch.device) -> bool:
    """Whether a step's EOS flags are read one step later."""
    if mode not in EOS_READS:
        raise ValueError(f"unknown EOS read {mode!r} ({', '.join(EOS_READS)})")
    return device.type == "cuda" if mode == "auto" else mode == "deferred"


def count_codes(read: list[tuple[HeldJob, bool]], held: Mapping[JobId, HeldJob]) -> list[HeldJob]:
    """Apply the EOS flags ``read`` to their jobs; returns the jobs they
    advanced, in launch order. The flag of a job no longer ``held``
    (released meanwhile), or of one that ended before it (a code drawn while
    its end was in flight), counts nothing."""
    jobs = []
    for job, hit_eos in read:
        if job.done or held.get(job.id) is not job:
            continue
        if not hit_eos:
            job.n_codes += 1
        if hit_eos or job.n_codes >= job.spec.max_new:
            job.done = True
        jobs.append(job)
    return jobs


@dataclass
class _Flags:
    jobs: list[HeldJob]
    host: torch.Tensor  # [B] bool, valid once ``event`` passed (blocking: the device's own)
    event: torch.cuda.Event | None
    buffer: int  # which of the two host buffers ``host`` views


class EosReader:
    """Steps' EOS flags, read at once or one step later (module docstring):
    ``launch`` starts the read of a step's flags, ``take`` hands out those
    launched before, all of them or all but the newest."""

    def __init__(self, device: torch.device, deferred: bool):
        self.device, self.deferred = device, deferred
        self._cuda = device.type == "cuda"
        self._buffers = [torch.empty(0, dtype=torch.bool) for _ in range(2)]
        self._in_flight: list[_Flags] = []

    @property
    def pending(self) -> bool:
        return bool(self._in_flight)

    def launch(self, jobs: list[HeldJob], flags: torch.Tensor) -> None:
        """Start reading ``flags`` [len(jobs)] (device bool) of ``jobs``: one
        step's at most beside the previous one's. Each job counts one code
        in flight until its flag is taken."""
        if len(self._in_flight) > 1:
            raise RuntimeError("EOS flags of two steps are in flight already")
        index = 1 if self._in_flight and self._in_flight[0].buffer == 0 else 0
        host, event = flags, None  # blocking: taken before anything else runs, read in place
        if self.deferred:
            host = self._buffer(index, len(jobs))
            # Copied now: the next replay may overwrite a graph's output flags.
            host.copy_(flags, non_blocking=self._cuda)
            if self._cuda:
                event = torch.cuda.Event()
                event.record(torch.cuda.current_stream(self.device))
        for job in jobs:
            job.in_flight += 1
        self._in_flight.append(_Flags(jobs, host, event, index))

    def take(self, keep_newest: bool = False) -> list[tuple[HeldJob, bool]]:
        """The flags in flight, as (job, drew EOS) in launch order, waiting
        for them; ``keep_newest``: all but the last step's."""
        keep = 1 if keep_newest and self._in_flight else 0
        taken = self._in_flight[:len(self._in_flight) - keep]
        self._in_flight = self._in_flight[len(taken):]
        read: list[tuple[HeldJob, bool]] = []
        for flags in taken:
            for job in flags.jobs:
                job.in_flight -= 1
            if flags.event is not None:
                flags.event.synchronize()
            read += zip(flags.jobs, flags.host.cpu().tolist())  # blocking: the step's one read
        return read

    def drop(self) -> None:
        """Forget the flags in flight (the runner's ``reset``), once copied."""
        taken, self._in_flight = self._in_flight, []
        for flags in taken:
            if flags.event is not None:
                flags.event.synchronize()

    def _buffer(self, index: int, rows: int) -> torch.Tensor:
        if self._buffers[index].numel() < rows:
            size = max(rows, 2 * self._buffers[index].numel(), 8)
            self._buffers[index] = torch.empty(size, dtype=torch.bool, pin_memory=self._cuda)
        return self._buffers[index][:rows]
