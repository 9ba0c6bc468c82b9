"""The vocoder beside the decode: its own CUDA stream, audio one step later.

``AudioDelivery`` takes each step's due vocoder windows (``vocoder_batch.Due``)
and hands their audio out as a ``Vocoded``, in one of two modes:

- at once (``delayed`` False, the CPU's default): ``deliver`` renders what
  is due and returns it in the same step, as the runner always did;
- one step later (``delayed`` True, CUDA's default): ``deliver`` first
  collects what the previous step launched, then launches this step's
  windows and returns without waiting for them. The packed Decoder + Vocos
  call runs on a stream of its own, which first waits for the model stream
  (the hidden states it reads were written there), and its samples cross
  to a pinned host buffer in one non-blocking copy followed by an event.
  The runner returns, the worker plans, and the next step's decode is
  launched on the model stream while the vocoder still runs; the next
  ``deliver`` waits on the event (by then usually passed), slices the
  buffer and completes the streams. The step's blocking EOS read waits for
  the model stream only, never for the vocoder.

Both modes run the same code: with ``delayed`` False the launch is collected
at once. Off CUDA the stream and the event are stand-ins that do nothing
(work runs as it is issued), so the delayed ordering is tested on the CPU.

Ordering. What a step's launch renders is delivered by the next step's
``deliver``, before anything new is asked of the streams (so a window is
completed before its stream is asked again). A job whose last audio is in
flight is reported ended in the step that delivers it: it keeps its slot
until then, so the hidden states the vocoder reads stay put. A job that the
runner no longer holds when its audio lands (released: cancelled, failed)
gets nothing: its audio is dropped, never delivered to a job after its end.
``drop`` forgets what is in flight (the runner's ``reset``).

Thread: the model thread.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from realtime.engine.api import VOCODER_OVERLAPS, DeviceFailure
from realtime.engine.vocoder.batch import (
    Due,
    Vocoded,
    VocoderCall,
    choose_units,
    complete_units,
    packed_on_device,
    render_units,
    split_audio,
)
from realtime.engine.vocoder.stream import StreamingVocoder

log = logging.getLogger(__name__)



@contextlib.contextmanager
def _device_failure():
    """What escapes a vocoder call is a lost device (other failures fail
    their jobs inside): raised as ``DeviceFailure``."""
    try:
        yield
    except Exception as exc:
        raise DeviceFailure(f"{type(exc).__name__}: {exc}") from exc


def overlap_for(mode: str, device: torch.device) -> bool:
    """Whether audio is delivered one step later: ``auto`` on CUDA only (on
    the CPU the vocoder shares the cores with the decode: nothing overlaps)."""
    if mode not in VOCODER_OVERLAPS:
        raise ValueError(f"unknown vocoder overlap {mode!r} ({', '.join(VOCODER_OVERLAPS)})")
    return device.type == "cuda" if mode == "auto" else mode == "on"


class _NullEvent:
    """An event that has always passed (work off CUDA runs as it is issued)."""

    def synchronize(self) -> None:
        pass


class _Lane:
    """Where the vocoder's work runs: a CUDA stream of its own, or (off
    CUDA) a stand-in that runs it in place."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self._stream = torch.cuda.Stream(device) if self.cuda else None

    def enter(self):
        """A context that issues work on the lane, after what the model
        stream has issued so far."""
        if self._stream is None:
            return contextlib.nullcontext()
        self._stream.wait_stream(torch.cuda.current_stream(self._stream.device))
        return torch.cuda.stream(self._stream)

    def record(self):
        """An event marking the work issued on the lane so far."""
        if self._stream is None:
            return _NullEvent()
        return self._stream.record_event()


class HostBuffer:
    """A float32 host buffer that grows to the largest packed row, pinned on
    CUDA (the copy back is then a DMA the host does not wait for). Reused
    only after the previous step's audio was collected."""

    def __init__(self, pinned: bool):
        self.pinned = pinned
        self._buffer = torch.empty(0, dtype=torch.float32)

    def take(self, samples: int) -> torch.Tensor:
        """A [samples] view of the buffer."""
        if self._buffer.numel() < samples:
            size = max(samples, 2 * self._buffer.numel())
            self._buffer = torch.empty(size, dtype=torch.float32, pin_memory=self.pinned)
        return self._buffer[:samples]


@dataclass
class _InFlight:
    """A launched call: its units, its samples' way back, and what must stay
    alive until the vocoder stream is past it."""

    call: VocoderCall
    event: object = None
    host: torch.Tensor | None = None  # the packed row's samples, once the event passed
    spans: list[tuple[int, int]] = field(default_factory=list)
    rendered: list[list[np.ndarray] | None] | None = None  # rendered already (a fallback)
    keep: tuple = ()


class AudioDelivery:
    """Each step's vocoding, delivered at once or one step later (module
    docstring). ``fatal``: exceptions that must propagate (a lost device);
    any other failure of a call fails its jobs only (``vocode_step``'s rule)."""

    def __init__(self, vocoder: StreamingVocoder, device: torch.device, delayed: bool,
                 fatal: Callable[[BaseException], bool]):
        self.vocoder, self.delayed, self.fatal = vocoder, delayed, fatal
        self._lane = _Lane(device)
        self._host = HostBuffer(pinned=device.type == "cuda")
        self._in_flight: _InFlight | None = None

    @property
    def pending(self) -> bool:
        """Audio was launched and is not delivered yet."""
        return self._in_flight is not None

    def launch(self, due: Sequence[Due], steps_per_call: int) -> None:
        """Start rendering what ``due`` asks, within ``steps_per_call``
        (``vocoder_batch.choose_units``); ``collect`` hands it out (at
        once when not ``delayed``, else in the next step, before anything
        new is asked of the streams). Raises ``DeviceFailure`` for a lost
        device; any other failure fails its jobs (in the audio collected)."""
        with _device_failure():
            self._launch(due, steps_per_call)

    def collect(self, held: Callable[[int], bool]) -> Vocoded:
        """What the last ``launch`` rendered, completed through the streams
        (waits for the vocoder's stream); jobs not ``held`` are left out.
        Raises ``DeviceFailure`` for a lost device."""
        with _device_failure():
            return self._collect(held)

    def _launch(self, due: Sequence[Due], steps_per_call: int) -> None:
        if self._in_flight is not None:
            raise RuntimeError("launch before the previous audio was collected")
        call = choose_units(self.vocoder, due, steps_per_call)
        if not (call.units or call.result.ended):  # nothing to hand out
            return
        flight = _InFlight(call)
        if call.units:
            hiddens = [w.hidden for u in call.units for w in u.windows]
            try:
                with self._lane.enter():
                    audio, flight.spans = packed_on_device(self.vocoder, hiddens)
                    flight.host = self._copy_back(audio)
                    flight.event = self._lane.record()
                flight.keep = (audio, hiddens)
            except Exception as exc:
                if self.fatal(exc):
                    raise
                log.warning("a packed vocoder call of %d jobs failed (%s: %s); rendering "
                            "them one by one", len(call.units), type(exc).__name__, exc)
                flight.rendered = [render_units(self.vocoder, [u], call.result, self.fatal)[0]
                                   for u in call.units]
        self._in_flight = flight

    def _collect(self, held: Callable[[int], bool]) -> Vocoded:
        flight, self._in_flight = self._in_flight, None
        if flight is None:
            return Vocoded()
        call = flight.call
        rendered = flight.rendered
        if rendered is None:
            if flight.event is not None:
                flight.event.synchronize()  # type: ignore[attr-defined]
            flat = split_audio(flight.host.numpy(), flight.spans) if flight.host is not None else []
            rendered = []
            for unit in call.units:
                rendered.append(flat[:len(unit.windows)])
                flat = flat[len(unit.windows):]
        kept = [(u, r) for u, r in zip(call.units, rendered) if held(u.job_id)]
        result = call.result
        result.audio = {j: a for j, a in result.audio.items() if held(j)}
        result.failed = {j: m for j, m in result.failed.items() if held(j)}
        result.ended = [j for j in result.ended if held(j)]
        return complete_units(VocoderCall([u for u, _ in kept], result), [r for _, r in kept])

    def warm(self) -> None:
        """One packed call per padded size (``vocoder.pad_steps``; none:
        nothing to warm), on the lane serving will use: every convolution
        and FFT plan and every kernel the sizes need is made before serving."""
        sizes = () if self.vocoder is None else self.vocoder.pad_steps
        if not sizes:
            return
        dim = self.vocoder.decoder.decoder.conv_in[0].in_channels * 2
        with _device_failure():
            for size in sizes:
                with self._lane.enter():
                    audio, _ = packed_on_device(self.vocoder, [torch.zeros(size, dim)])
                    self._copy_back(audio)
                    event = self._lane.record()
                event.synchronize()
        log.info("vocoder: packed rows padded to %s steps, each shape warmed",
                 ",".join(map(str, sizes)))

    def drop(self) -> None:
        """Forget what is in flight (after the vocoder stream is past it)."""
        flight, self._in_flight = self._in_flight, None
        if flight is not None and flight.event is not None:
            flight.event.synchronize()  # type: ignore[attr-defined]

    def _copy_back(self, audio: torch.Tensor) -> torch.Tensor:
        """The samples on the host: off CUDA the tensor itself (already
        there), on CUDA one non-blocking copy into the pinned buffer."""
        if audio.device.type != "cuda":
            return audio
        host = self._host.take(audio.numel())
        host.copy_(audio, non_blocking=True)
        return host
