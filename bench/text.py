"""Text front end bench: what normalizing a sentence costs.

The corpus (bench/text_corpus.py: voice-assistant answers, English and
Chinese) is split into sentences by the server's splitter, then each
sentence goes through ``TextNormalizer.spoken`` (our rules, then upstream's
clean-up, exactly as serving runs it) ``--repeats`` times after the warm-up;
each call is timed alone, on the wall clock and on the thread's CPU clock
(the machines here are shared: the wall p99 holds descheduling).

Reported: median and p99 per sentence (all, and split into sentences the
pre-check lets skip the rules and those it does not), the whole prompt
(``TextFrontEnd.build``: normalization, tokenizer, speaker) per sentence,
start-up (construction and warm-up), and the front end's share of first
audio (a first sentence's prompt cost over ``--first-audio-ms``, the CPU
int8 stream's first audio in docs/runtime.md).

Prints a table and, as the last line, one JSON object with
``text_median_ms`` and ``text_p99_ms``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def corpus_answers() -> list[list[str]]:
    """Each answer's sentences, as the server's splitter cuts them."""
    from bench.text_corpus import ANSWERS
    from realtime.speech.sentences import SentenceSplitter
    out = []
    for answer in ANSWERS:
        splitter = SentenceSplitter()
        out.append(splitter.feed(answer) + splitter.flush())
    return out


def _timed(fn, sentences: list[str], repeats: int, clock=time.perf_counter) -> dict[str, list[float]]:
    per: dict[str, list[float]] = {s: [] for s in sentences}
    for _ in range(repeats):
        for s in sentences:
            t0 = clock()
            fn(s)
            per[s].append((clock() - t0) * 1000)
    return per


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench text", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20, help="timed calls per sentence")
    ap.add_argument("--first-audio-ms", type=float, default=465.0,
                    help="first audio to compare with (CPU, int8 stream, docs/runtime.md)")
    args = ap.parse_args(argv)

    from realtime.engine.api import SeedVoice
    from realtime.engine.model.shapes import TINY
    from realtime.engine.model.weights import random_assets
    from realtime.engine.text.frontend import Speakers, TextFrontEnd
    from realtime.engine.text.spoken import TextNormalizer
    from realtime.speech.lang import needs_rules

    t0 = time.perf_counter()
    normalizer = TextNormalizer()
    built_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    normalizer.warm_up()
    warm_s = time.perf_counter() - t0

    answers = corpus_answers()
    sentences = [s for a in answers for s in a]
    per = _timed(normalizer.spoken, sentences, args.repeats)
    all_ms = [v for vs in per.values() for v in vs]
    # The same calls on the thread's CPU clock: what the code costs, without
    # the time a shared machine deschedules the thread.
    cpu_ms = [v for vs in _timed(normalizer.spoken, sentences, args.repeats, time.thread_time).values()
              for v in vs]
    plain = [v for s, vs in per.items() if not needs_rules(s) for v in vs]
    ruled = [v for s, vs in per.items() if needs_rules(s) for v in vs]

    assets = random_assets(TINY, 0)
    front = TextFrontEnd(assets.tokenizer, Speakers(assets.shape.hidden, assets.spk_stat))
    front.warmup()
    prompt = _timed(lambda s: front.build(s, SeedVoice(1)), sentences, max(1, args.repeats // 4))
    prompt_ms = [v for vs in prompt.values() for v in vs]
    first_ms = statistics.median(v for a in answers for v in prompt[a[0]])

    result = {
        "cpu": _cpu_name(), "cpus": os.cpu_count(), "sentences": len(sentences),
        "with_rules": sum(needs_rules(s) for s in sentences), "calls": len(all_ms),
        "text_median_ms": round(statistics.median(all_ms), 3),
        "text_p99_ms": round(_percentile(all_ms, 0.99), 3),
        "text_max_ms": round(max(all_ms), 3),
        "text_cpu_median_ms": round(statistics.median(cpu_ms), 3),
        "text_cpu_p99_ms": round(_percentile(cpu_ms, 0.99), 3),
        "plain_median_ms": round(statistics.median(plain), 3) if plain else None,
        "rules_median_ms": round(statistics.median(ruled), 3) if ruled else None,
        "rules_p99_ms": round(_percentile(ruled, 0.99), 3) if ruled else None,
        "prompt_median_ms": round(statistics.median(prompt_ms), 3),
        "prompt_p99_ms": round(_percentile(prompt_ms, 0.99), 3),
        "startup_s": round(built_s + warm_s, 2), "warm_up_s": round(warm_s, 2),
        "first_sentence_prompt_ms": round(first_ms, 3),
        "first_audio_share": round(first_ms / args.first_audio_ms, 5),
    }
    slowest = max(per, key=lambda s: statistics.median(per[s]))
    print(f"CPU: {result['cpu']} ({result['cpus']} cores visible)")
    print(f"{len(sentences)} sentences, {result['with_rules']} need rules, "
          f"{args.repeats} timed calls each after warm-up")
    for key in ("text_median_ms", "text_p99_ms", "text_max_ms", "text_cpu_median_ms", "text_cpu_p99_ms",
                "plain_median_ms", "rules_median_ms",
                "rules_p99_ms", "prompt_median_ms", "prompt_p99_ms", "startup_s", "first_audio_share"):
        print(f"  {key:<20} {result[key]}")
    print(f"  slowest sentence: {slowest[:70]!r} ({statistics.median(per[slowest]):.3f} ms median)")
    print(json.dumps(result))
    return 0
