"""A record of the work a runner did, and its replay without the server.

``StepRecorder`` wraps a ``Runner`` (``--record-steps PATH``): every
``execute`` (the scheduler's ``StepPlan``, with the step's measured seconds,
and for each prefilled job the segment request its work was prepared from) is
appended to PATH as one JSON line as it happens. ``replay(runner, records)``
prepares the same requests and runs the same plans, in order and as fast as it
can, through a runner in the calling process. The same work with and without the serving path around it: the
runtime bench compares the two per step.

Thread: the recorder runs on the model thread (one line-buffered write per
step, microseconds beside a model step); ``replay`` on the caller's.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Iterable
from typing import Any

from realtime.engine.api import (
    EmbeddingVoice,
    NamedVoice,
    PreparedJob,
    SamplingParams,
    SeedVoice,
    SegmentRequest,
    Voice,
)
from scheduler import StepOutput
from scheduler.plan import Lane, StepPlan


def _plain(value: Any) -> Any:
    if isinstance(value, Lane):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


def plan_to_json(plan: StepPlan) -> dict:
    """The plan without its ``work`` (the runner's own objects: a replay
    prepares them again from the recorded requests)."""
    return {f.name: _plain(getattr(plan, f.name)) for f in dataclasses.fields(plan) if f.name != "work"}


def plan_from_json(data: dict, work: tuple = ()) -> StepPlan:
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
    fields["lane"] = Lane(fields["lane"])
    return StepPlan(**fields, work=work)


def voice_to_json(voice: Voice | None) -> dict | None:
    match voice:
        case None:
            return None
        case SeedVoice(seed=seed):
            return {"seed": seed}
        case EmbeddingVoice(encoded=encoded):
            return {"embedding": encoded}
        case NamedVoice(name=name):
            return {"name": name}


def voice_from_json(data: dict | None) -> Voice | None:
    if data is None:
        return None
    if not isinstance(data, dict):  # recordings made before voices were typed held the wire's string
        raise ValueError(f"a recorded voice must be an object (seed, embedding or name), not {data!r:.40}")
    if "seed" in data:
        return SeedVoice(int(data["seed"]))
    if "embedding" in data:
        return EmbeddingVoice(str(data["embedding"]))
    return NamedVoice(str(data["name"]))


def request_to_json(request: SegmentRequest) -> dict:
    return {"text": request.text, "voice": voice_to_json(request.voice), "streaming": request.streaming,
            "params": dataclasses.asdict(request.params), "speed": request.speed,
            "reference": request.reference, "frame_s": request.frame_s}


def request_from_json(data: dict) -> SegmentRequest:
    # speed, reference and frame_s came later: a recording without them used the defaults.
    return SegmentRequest(text=data["text"], voice=voice_from_json(data["voice"]),
                          streaming=data["streaming"], params=SamplingParams(**data["params"]),
                          speed=data.get("speed", 5), reference=data.get("reference", "none"),
                          frame_s=data.get("frame_s", 0.0))


class StepRecorder:
    """A ``Runner`` that writes what it is asked to do to ``path`` (JSON lines:
    ``{"plan": {...}, "requests": [...], "seconds": s, "started": t}``, one
    request per prefilled job; ``started``: ``time.monotonic()`` as the step
    began, so the gaps between steps show) and otherwise is the runner it wraps."""

    def __init__(self, runner, path: str):
        self._runner = runner
        self._file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - lives with the runner
        # id(work) -> the request it was prepared from, until a plan prefills it.
        # The work objects stay alive in the scheduler until then, so ids are unique.
        self._requests: dict[int, dict] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._runner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        # Settings such as ``pad_batches`` belong to the wrapped runner.
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._runner, name, value)

    def _write(self, record: dict) -> None:
        self._file.write(json.dumps(record, separators=(",", ":")) + "\n")

    def warmup(self) -> dict[tuple[int, int], float]:
        return self._runner.warmup()

    def warmup_first(self) -> dict[tuple[int, int], float]:
        return self._runner.warmup_first()

    @property
    def warmup_left(self) -> int:
        return self._runner.warmup_left

    def warm_idle(self, cost: object = None) -> dict[tuple[int, int], float]:
        return self._runner.warm_idle(cost)

    def prepare(self, request: SegmentRequest) -> PreparedJob:
        prepared = self._runner.prepare(request)
        if not prepared.empty:
            # The seed the runner drew for an unseeded request, so a replay samples alike.
            seed = getattr(prepared.work, "seed", request.params.seed)
            params = dataclasses.replace(request.params, seed=seed)
            self._requests[id(prepared.work)] = request_to_json(dataclasses.replace(request, params=params))
        return prepared

    def execute(self, plan: StepPlan) -> StepOutput:
        requests = [self._requests.pop(id(work), None) for work in plan.work]
        started = time.monotonic()
        out = self._runner.execute(plan)
        self._write({"plan": plan_to_json(plan), "requests": requests, "seconds": out.seconds,
                     "started": started})
        return out

    def reset(self) -> None:
        self._requests.clear()
        self._runner.reset()


def read(path: str, start_line: int = 0) -> list[dict]:
    """The records of ``path`` from line ``start_line`` on."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for i, line in enumerate(f) if i >= start_line and line.strip()]


def replay(runner, records: Iterable[dict]) -> dict:
    """Run ``records`` through ``runner``; returns ``steps``, ``wall_s``,
    ``step_ms``, ``recorded_step_ms`` (the mean of the recorded steps' own
    seconds), ``audio_s`` and ``failed`` (steps whose jobs the runner refused:
    0 when the replay did the same work). The runner is reset at the end.
    Preparing is not timed, as the recorded seconds are ``execute``'s alone."""
    steps = failed = samples = 0
    recorded = wall = 0.0
    for record in records:
        work = tuple(runner.prepare(request_from_json(r)).work for r in record["requests"])
        plan = plan_from_json(record["plan"], work)
        start = time.perf_counter()
        out = runner.execute(plan)
        wall += time.perf_counter() - start
        steps += 1
        recorded += record["seconds"]
        failed += bool(out.failed)
        samples += sum(len(a) for a in out.audio.values())
    runner.reset()
    return dict(steps=steps, wall_s=wall, step_ms=wall / steps * 1e3 if steps else None,
                recorded_step_ms=recorded / steps * 1e3 if steps else None,
                audio_s=samples / runner.sample_rate, failed=failed)
