"""The runner's audio stage: hidden states in, audio chunks out, per step.

Streaming jobs push new hidden states into their ``VocoderStream`` every
``PUSH_EVERY`` codes (and at their end); what is due across all jobs runs as
one bounded Decoder + Vocos call (``vocoder_batch.vocode_step``, at most
``steps_per_call`` hidden steps). A job that follows another
(``StepPlan.follows``) plays after that job's audio: its stream reads when
that audio runs out at the listener (from the other job's stream while it is
held, else from ``ends``), so its chunks wait and grow while the listener
holds enough (``vocoder.listener``). A one-shot job renders once, at its end. A
job done decoding whose audio must wait stays in ``awaiting`` (oldest
first) until the step that delivers its last audio; the runner keeps its
slot meanwhile, since its hidden states live there. With ``delayed``
(``vocoder_overlap``: CUDA's default) the call runs on a stream of its own
and its audio is handed out by the next step's ``render``, before anything
new is asked of the streams.

Thread: the model thread.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping

import torch

from realtime.engine.held import HeldJob
from realtime.engine.step_failure import is_device_lost
from realtime.engine.vocoder.batch import Due, Vocoded
from realtime.engine.vocoder.overlap import AudioDelivery
from realtime.engine.vocoder.stream import StreamingVocoder, Window
from scheduler import JobId, StepOutput

PUSH_EVERY = 4  # codes between pushes into a streaming job's vocoder
# Ended streaming jobs whose listener's playback end is kept for a job that
# follows one of them (its next sentence comes within a few jobs).
KEPT_ENDS = 256


class AudioStage:
    """Renders the audio of the runner's jobs from ``hidden`` [slots, T, D],
    the runner's per-slot hidden states. ``vocoder`` None: a runner that
    never renders (shape checks on the meta device)."""

    def __init__(self, vocoder: StreamingVocoder | None, hidden: torch.Tensor, steps_per_call: int,
                 delayed: bool = False, jobs: Mapping[JobId, HeldJob] | None = None):
        self.vocoder = vocoder
        self.hidden = hidden
        self.steps_per_call = steps_per_call
        self.jobs: Mapping[JobId, HeldJob] = {} if jobs is None else jobs  # the runner's held jobs
        self.awaiting: dict[JobId, HeldJob] = {}
        # Ended streaming jobs: when their listener's audio runs out (the vocoder's clock).
        self.ends: OrderedDict[JobId, float] = OrderedDict()
        self.delivery = AudioDelivery(vocoder, hidden.device, delayed, is_device_lost)  # type: ignore[arg-type]

    def render(self, jobs: list[HeldJob], out: StepOutput, held: Callable[[JobId], bool]) -> list[JobId]:
        """Vocode what is due after this step of ``jobs`` into ``out``;
        returns the jobs whose last audio went out, or that failed. ``held``:
        whether the runner still holds a job (audio in flight for one it
        released is dropped). Raises ``DeviceFailure`` for a lost device."""
        ended = self._take(self.delivery.collect(held), out)
        for job in jobs:
            self._feed(job)
            if job.done:
                self.awaiting[job.id] = job
        running = [j for j in jobs if j.spec.streaming and not j.done]
        due = [self._due(j) for j in running + list(self.awaiting.values())]
        self.delivery.launch(due, self.steps_per_call)
        if not self.delivery.delayed:
            ended += self._take(self.delivery.collect(held), out)
        return ended

    def reset(self) -> None:
        """Forget every job (what is in flight too)."""
        self.delivery.drop()
        self.awaiting.clear()
        self.ends.clear()

    def _take(self, done: Vocoded, out: StepOutput) -> list[JobId]:
        out.audio.update(done.audio)
        out.failed.update(done.failed)
        for job_id in done.ended:
            stream = self.awaiting[job_id].stream if job_id in self.awaiting else None
            end = stream.listener.play_end() if stream is not None else None
            if end is not None:
                self.ends[job_id] = end
                if len(self.ends) > KEPT_ENDS:
                    self.ends.popitem(last=False)
        for job_id in [*done.failed, *done.ended]:
            self.awaiting.pop(job_id, None)
        return [*done.ended, *done.failed]

    def _vocoder(self) -> StreamingVocoder:
        if self.vocoder is None:
            raise RuntimeError("this runner has no vocoder")
        return self.vocoder

    def _feed(self, job: HeldJob) -> None:
        """Push a streaming job's new hidden states into its stream, every
        ``PUSH_EVERY`` codes and at its end."""
        if not job.spec.streaming:
            return
        if job.stream is None:
            after = None if job.follows is None else self._end_of(job.follows)
            job.stream = self._vocoder().start(after, job.spec.frame_s)
        if job.n_codes - job.pushed >= PUSH_EVERY or (job.done and job.n_codes > job.pushed):
            job.stream.append(self.hidden[job.slot, job.pushed:job.n_codes])
            job.pushed = job.n_codes

    def _end_of(self, job_id: JobId) -> Callable[[], float | None]:
        """When the audio of ``job_id`` runs out at its listener, as known
        now: from its stream while it is held (growing as it renders), from
        ``ends`` once it ended; None if unknown (it rendered nothing yet, or
        ended too long ago)."""
        def end() -> float | None:
            job = self.jobs.get(job_id)
            if job is not None:
                return job.stream.listener.play_end() if job.stream is not None else None
            return self.ends.get(job_id)
        return end

    def _due(self, job: HeldJob) -> Due:
        if job.stream is not None:
            return Due(job.id, job.stream.windows(final=job.done), job.stream, job.done)
        # A finished one-shot job's hidden states stay in its slot until it is reported finished.
        windows = [Window(self.hidden[job.slot, :job.n_codes], 0, 0, None)] if job.n_codes else []
        return Due(job.id, windows, None, True)

