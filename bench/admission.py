"""Admission bench: the model thread's time per admitted segment.

Before, the model thread prepared each segment itself (``Runner.prepare``:
the tokenizer, the speaker, the prompt's host values) and then admitted it,
so every admission stalled every decoding stream; now the preparation
thread (realtime/server/work/preparation.py) prepares it and the model thread only
admits. Both are timed on the same ``ModelWorker`` over the tiny-random
model runner (its generated tokenizer) on the corpus's sentences, already
normalized as the server's text thread hands them over:

- ``inline``: ``ModelWorker._submit`` of a bare ``Submission`` (prepare, then
  admit: the model thread's work before);
- ``prepared``: ``_submit`` of the ``Prepared`` the preparation thread makes
  (admit only: its work now); ``prepare`` alone is timed too.

Rounds alternate between the two, each admission is cancelled at once, and
medians are reported, on the thread's CPU clock (what the work costs the
model thread, without the descheduling of a shared machine). Prints a table and, as the
last line, one JSON object with ``inline_median_ms``, ``prepared_median_ms``
and ``prepare_median_ms``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench admission", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5, help="alternating rounds over the corpus")
    args = ap.parse_args(argv)

    from bench.text import _cpu_name, _percentile, corpus_answers
    from realtime.engine.api import RuntimeOptions, SeedVoice, SegmentRequest
    from realtime.engine.build import build_runner
    from realtime.engine.text.spoken import TextNormalizer
    from realtime.server.work.handoff import SegmentWork, Submission
    from realtime.server.work.preparation import prepare_submission
    from realtime.server.work.worker import ModelWorker
    from scheduler import Lane, SchedulerConfig

    runner = build_runner(RuntimeOptions(weights="tiny-random", device="cpu"))
    normalizer = TextNormalizer()
    normalizer.warm_up()
    texts = [t for a in corpus_answers() for s in a if (t := normalizer.spoken(s).text)]
    worker = ModelWorker(lambda: runner, lambda r: SchedulerConfig(
        batch_sizes=r.batch_sizes, kv_buckets=r.kv_buckets, max_slots=r.max_slots))
    worker.runner = runner
    worker._new_scheduler()
    ids = iter(range(1, 10**9))

    class Sink:
        def on_worker_update(self, update) -> None:
            pass

    def submission(text: str) -> Submission:
        request = SegmentRequest(text, voice=SeedVoice(1), normalized=True)
        return Submission(Sink(), Lane.INTERACTIVE, time.monotonic(), None,
                          (SegmentWork(next(ids), 0, request, 40),), True)

    def admit(command) -> float:
        sub = command if isinstance(command, Submission) else command.submission
        start = time.thread_time()
        worker._submit(command, [])
        seconds = time.thread_time() - start
        worker._cancel(tuple(s.job_id for s in sub.segments), sub.sink)
        return seconds

    times: dict[str, list[float]] = {"inline": [], "prepared": [], "prepare": []}
    for _ in range(args.rounds):
        for text in texts:
            times["inline"].append(admit(submission(text)))
        for text in texts:
            sub = submission(text)
            start = time.thread_time()
            done = prepare_submission(runner, sub)
            times["prepare"].append(time.thread_time() - start)
            times["prepared"].append(admit(done))
    result: dict[str, object] = {"cpu": _cpu_name(), "cpus": os.cpu_count(),
                                 "load": round(os.getloadavg()[0], 2), "segments": len(texts)}
    for name, values in times.items():
        ms = [v * 1e3 for v in values]
        result[f"{name}_median_ms"] = round(statistics.median(ms), 4)
        result[f"{name}_p99_ms"] = round(_percentile(ms, 0.99), 4)
    print(f"CPU: {result['cpu']} ({result['cpus']} cores visible, load {result['load']})")
    print(f"{len(texts)} segments x {args.rounds} rounds; the model thread's time per admission:")
    for key in ("inline_median_ms", "inline_p99_ms", "prepared_median_ms", "prepared_p99_ms",
                "prepare_median_ms", "prepare_p99_ms"):
        print(f"  {key:<20} {result[key]}")
    print(json.dumps(result))
    return 0
