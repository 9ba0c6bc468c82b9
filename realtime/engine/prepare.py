"""``Runner.prepare`` for the model: a segment request in, a ``JobSpec`` out.

``JobPreparer`` validates the sampling settings, builds the prompt with the
text front end (``frontend.TextFrontEnd``: normalization unless the server
normalized already, the speaker, the tokenizer, any voice sample's codes),
checks that it leaves room in a KV slot, draws the job's seed when the
request names none, and packs the prompt into the plain host values the
prefill uploads (``held.JobSpec``). A request with a refine pass goes to the
refine stage's own ``prepare`` (``refine.py``).

Thread: any, one caller at a time: a lock guards the front end (whose
normalizer is not thread-safe) and the seed stream. The server prepares on
its preparation thread; the refine pass prepares its audio prompt on the
model thread, beside it. Seeds are drawn in call order, so one preparation
thread in submission order draws what the model thread used to.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from realtime.engine.api import PreparedJob, RequestError, SegmentRequest
from realtime.engine.held import JobSpec
from realtime.engine.text.frontend import TextFrontEnd, validate_params

log = logging.getLogger(__name__)

RefinePrepare = Callable[[SegmentRequest, str, int], PreparedJob]


class JobPreparer:
    """Prepares segments for a runner whose slots hold ``max_len`` positions;
    ``seed`` seeds the stream unseeded requests draw from. ``refine`` (set
    once the refine stage exists) prepares a request with a refine pass."""

    def __init__(self, front: TextFrontEnd, max_len: int, seed: int):
        self.front, self.max_len = front, max_len
        self.refine: RefinePrepare | None = None
        self._seeds = random.Random(seed)
        self._lock = threading.RLock()

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        """The job of ``request``; raises ``RequestError`` (``VoiceError``)."""
        with self._lock:
            return self._prepare(request)

    def _prepare(self, request: SegmentRequest) -> PreparedJob:
        validate_params(request.params)
        prompt = self.front.build(request.text, request.voice, request.lang, request.speed,
                                  request.sample, request.normalized)
        if prompt is None:
            return PreparedJob(prompt_len=0, empty=True)
        if prompt.length >= self.max_len - 1:
            raise RequestError(f"segment too long: {prompt.length} prompt tokens, at most {self.max_len - 2}")
        seed = request.params.seed if request.params.seed is not None else self._seeds.getrandbits(32)
        if request.refine is not None:  # the refine pass first (realtime/engine/refine.py)
            if self.refine is None:
                raise RequestError("this runner runs no refine pass")
            return self.refine(request, prompt.text, seed)
        max_new = min(request.params.max_new_tokens, self.max_len - prompt.length)
        ids = prompt.ids.tolist() + ([] if prompt.codes is None else prompt.codes.flatten().tolist())
        spec = JobSpec(prompt, request.params, seed, request.streaming, max_new,
                       tuple(ids), tuple(prompt.speaker.tolist()), request.frame_s)
        return PreparedJob(prompt_len=prompt.length, work=spec)
