"""The refine pass's cost to first audio: one interactive sentence, refine on vs off.

Through ``ModelRunner.execute`` (the ``Driver`` playing the scheduler at
batch 1, token chunking): seconds from the sentence's first step to its
first audio, with the refine pass before it and without, alternating in
each round; medians. Random weights do not end the pass at ``[Ebreak]``
the way trained ones do, so the pass is pinned to ``refine_tokens`` text
tokens (``min_new_tokens`` = ``max_new_tokens``): 1.25 x the sentence's
tokens, about what ChatTTS adds in breaks and fillers. ``refine_ms_per_token``
scales the figure to another length (a trained checkpoint's pass on the
same sentence may be shorter or longer).

Keys: ``refine_tokens``, ``refine_first_audio_ms_off``,
``refine_first_audio_ms_on``, ``refine_added_ms``, ``refine_ms_per_token``.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

SENTENCE = "The quick brown fox jumps over the lazy dog, and then it runs far away."


def _first_audio_s(runner, request) -> float:
    from bench.driver import Driver
    from scheduler import Lane

    d = Driver(runner, Lane.INTERACTIVE)
    d.add(0, request)
    start = time.perf_counter()
    for _ in range(2000):
        out = d.step()
        chunk = out.audio.get(0)
        if chunk is not None and len(chunk):
            seconds = time.perf_counter() - start
            if 0 in d.live:
                d.step(release=(0,))
            return seconds
        if 0 in out.finished:
            break
    raise RuntimeError("the sentence produced no audio")


def measure(runner, rounds: int = 5) -> dict:
    """The refine row on ``runner`` (a ``ModelRunner``)."""
    from realtime.engine.api import REFINE_SAMPLING, RefineRequest, SamplingParams, SegmentRequest

    audio = SamplingParams(seed=1, min_new_tokens=64)
    off = SegmentRequest(SENTENCE, params=audio, streaming=True)
    probe = runner.prepare(dataclasses.replace(off, refine=RefineRequest()))
    tokens = round(1.25 * probe.prompt_len)
    pinned = dataclasses.replace(REFINE_SAMPLING, min_new_tokens=tokens, max_new_tokens=tokens, seed=1)
    on = dataclasses.replace(off, refine=RefineRequest("[oral_2][laugh_0][break_6]", pinned))
    times: dict[str, list[float]] = {"off": [], "on": []}
    _first_audio_s(runner, off)  # warm both paths once
    _first_audio_s(runner, on)
    for r in range(rounds):
        for name in (("off", "on") if r % 2 == 0 else ("on", "off")):
            times[name].append(_first_audio_s(runner, off if name == "off" else on))
    off_ms = statistics.median(times["off"]) * 1e3
    on_ms = statistics.median(times["on"]) * 1e3
    return {"refine_tokens": tokens, "refine_first_audio_ms_off": round(off_ms, 1),
            "refine_first_audio_ms_on": round(on_ms, 1), "refine_added_ms": round(on_ms - off_ms, 1),
            "refine_ms_per_token": round((on_ms - off_ms) / tokens, 2)}
