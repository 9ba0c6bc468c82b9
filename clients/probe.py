"""`python -m clients.probe`: a latency sweep over concurrency levels and offered loads.

For each level L in `--levels`, L virtual users each open a connection, speak one text
from the corpus, read all its audio and close, repeatedly, until `--per-level`
utterances ran at that level (or the time budget is spent). For each rate R in
`--rates` (utterances per second), utterances arrive as a Poisson stream at that rate
for `--seconds-per-rate` seconds, each on its own connection, however many are in
flight (up to `--max-in-flight`): an open loop, as real traffic is, so an overloaded
server shows as refusals or as latency. A share of the utterances
(`--background-share`) go to the background lane. Per utterance it records connect
time, first audio, inter-frame gaps, playback stalls of a simulated real-time player
(clients/playback.py), RTF, errors, and for refusals their latency and retry hint (with
`--timestamps`, also whether each word's timing came before its audio and before that
audio was due to play: clients/probe_words.py); per
point and per lane it prints p50/p95/p99 and refusals by code, and writes `probe.json`
and log-axis plots (`first_audio.png`, `stall.png`; `*_by_rate.png` for a rate sweep)
into `--out`.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import random
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clients.client import RealtimeClient
from clients.errors import TTSError
from clients.playback import simulate_playback
from clients.probe_report import UtteranceRecord, plot, summarize, table, write_json
from clients.probe_words import word_timing_stats
from clients.utterance import AudioChunk, Utterance

log = logging.getLogger(__name__)

# The corpus is demo data: it lives in the checkout's examples/, not in the package.
# An installed client without a checkout falls back to a few built-in lines.
DEFAULT_CORPUS = Path(__file__).resolve().parent.parent / "examples" / "corpus.txt"
_BUILTIN_CORPUS = (
    "Good morning. Your order has shipped and should arrive on Thursday.",
    "Please hold the line. An agent will be with you shortly.",
    "Turn left at the next intersection, then keep right for about five hundred meters.",
)


def load_corpus(path: Path | None) -> list[str]:
    """Non-empty, non-comment lines of `path` (None: the default corpus, or the
    built-in lines when the checkout's examples/ is absent)."""
    if path is None:
        if not DEFAULT_CORPUS.is_file():
            return list(_BUILTIN_CORPUS)
        path = DEFAULT_CORPUS
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    texts = [line for line in lines if line and not line.startswith("#")]
    if not texts:
        raise ValueError(f"corpus {path} holds no text")
    return texts


async def measure_one(url: str, token: str | None, text: str, lane: str, level: int,
                      speak_opts: dict[str, Any], rate: float | None = None) -> UtteranceRecord:
    """Connect, speak `text`, read everything, close. Never raises for server errors."""
    rec = UtteranceRecord(level=level, lane=lane, chars=len(text),
                          sweep="concurrency" if rate is None else "rate", rate=rate)
    arrivals: list[tuple[float, float]] = []
    t0 = time.monotonic()
    utt = None
    try:
        async with RealtimeClient(url, token=token) as client:
            rec.connect_ms = client.connect_ms
            utt = await client.speak(text, lane=lane, **speak_opts)
            async for item in utt:
                if isinstance(item, AudioChunk):
                    arrivals.append((item.received_at, item.duration_ms / 1000.0))
            done = await utt.result()
            rec.first_audio_ms = utt.first_audio_ms
            rec.server_first_audio_ms = done.timing.first_audio_ms
            rec.total_ms = 1000.0 * ((utt.ended_at or time.monotonic()) - utt.sent_at)
            rec.audio_ms = utt.audio_ms
            rec.frames = utt.frames
            rec.rtf = rec.total_ms / rec.audio_ms if rec.audio_ms > 0 else None
            score_words(rec, arrivals, utt)
    except TTSError as exc:
        rec.error = exc.code or type(exc).__name__
        if utt is not None and utt.started_at is None and exc.code is not None:
            rec.refused = True
            rec.refusal_ms = 1000.0 * ((utt.ended_at or time.monotonic()) - utt.sent_at)
            rec.retry_after_ms = exc.retry_after_ms
    except (TimeoutError, OSError) as exc:
        rec.error = type(exc).__name__
    stats = simulate_playback(arrivals)
    rec.underruns, rec.stall_ms, rec.max_gap_ms = stats.underruns, stats.stall_ms, stats.max_gap_ms
    if len(arrivals) > 1:
        rec.mean_gap_ms = 1000.0 * (arrivals[-1][0] - arrivals[0][0]) / (len(arrivals) - 1)
    if rec.error is None and rec.total_ms is None:
        rec.total_ms = 1000.0 * (time.monotonic() - t0)
    return rec


def score_words(rec: UtteranceRecord, arrivals: list[tuple[float, float]], utt: Utterance) -> None:
    if not utt.words:
        return
    timings = [(at, w.start_ms) for at, w in zip(utt.words_received_at, utt.words)]
    stats = word_timing_stats(arrivals, timings)
    rec.words, rec.words_late = stats.words, stats.late
    rec.word_lead_ms, rec.word_lead_ms_min = stats.lead_ms_median, stats.lead_ms_min
    rec.word_margin_ms_min = stats.margin_ms_min


async def run_level(args: argparse.Namespace, level: int, texts: list[str],
                    rng: random.Random, stop_starting_at: float, hard_stop_at: float
                    ) -> list[UtteranceRecord]:
    """`level` users in parallel until `args.per_level` utterances ran at this level."""
    records: list[UtteranceRecord] = []
    cursor = iter(list(itertools.islice(_utterances(args, texts, rng), args.per_level)))

    async def user() -> None:
        for text, lane in cursor:
            if time.monotonic() >= stop_starting_at:
                return
            records.append(await _measured(args, text, lane, level, None, hard_stop_at))

    await asyncio.gather(*(user() for _ in range(level)))
    return records


async def run_rate(args: argparse.Namespace, rate: float, texts: list[str],
                   rng: random.Random, stop_starting_at: float, hard_stop_at: float
                   ) -> list[UtteranceRecord]:
    """Poisson arrivals at `rate` per second for `args.seconds_per_rate` seconds (or
    until the budget's share ends), each utterance on its own connection."""
    plan = _utterances(args, texts, rng)
    tasks: set[asyncio.Task[UtteranceRecord]] = set()
    started: list[asyncio.Task[UtteranceRecord]] = []
    records: list[UtteranceRecord] = []
    at = time.monotonic()
    end = min(at + args.seconds_per_rate, stop_starting_at)
    while True:
        at += rng.expovariate(rate)
        if at >= end:
            break
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        text, lane = next(plan)
        if len(tasks) >= args.max_in_flight:
            records.append(UtteranceRecord(level=0, lane=lane, chars=len(text), sweep="rate",
                                           rate=rate, error="not_sent"))
            continue
        task = asyncio.create_task(_measured(args, text, lane, 0, rate, hard_stop_at))
        tasks.add(task)
        started.append(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks)
    return records + [t.result() for t in started]


def _utterances(args: argparse.Namespace, texts: list[str],
                rng: random.Random) -> Iterator[tuple[str, str]]:
    """Texts in corpus order, each with its lane (`--background-share` of them background)."""
    for text in itertools.cycle(texts):
        yield text, "background" if rng.random() < args.background_share else "interactive"


async def _measured(args: argparse.Namespace, text: str, lane: str, level: int,
                    rate: float | None, hard_stop_at: float) -> UtteranceRecord:
    opts: dict[str, Any] = {"format": args.format, "frame_ms": args.frame_ms,
                            "chunking": args.chunking, "timestamps": args.timestamps}
    if args.voice:
        opts["voice"] = args.voice
    if lane == "background" and args.deadline_ms:
        opts["deadline_ms"] = args.deadline_ms
    try:
        return await asyncio.wait_for(measure_one(args.url, args.token, text, lane, level, opts, rate),
                                      max(0.1, hard_stop_at - time.monotonic()))
    except TimeoutError:
        return UtteranceRecord(level=level, lane=lane, chars=len(text), error="timeout",
                               sweep="concurrency" if rate is None else "rate", rate=rate)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m clients.probe", description=__doc__.splitlines()[0])
    p.add_argument("--url", default="ws://127.0.0.1:8765/v1/stream")
    p.add_argument("--token", default=None)
    p.add_argument("--levels", default=None,
                   help="comma-separated concurrency levels (default 1,2,4 unless --rates)")
    p.add_argument("--per-level", type=int, default=8, help="utterances per level")
    p.add_argument("--rates", default="",
                   help="comma-separated offered loads in utterances per second (open loop)")
    p.add_argument("--seconds-per-rate", type=float, default=10.0,
                   help="how long each offered load runs")
    p.add_argument("--max-in-flight", type=int, default=256,
                   help="a rate sweep's bound on utterances in flight (beyond: not sent)")
    p.add_argument("--background-share", type=float, default=0.25,
                   help="fraction of utterances on the background lane (0..1)")
    p.add_argument("--deadline-ms", type=int, default=None, help="background deadline")
    p.add_argument("--corpus", type=Path, default=None,
                   help="one text a line (default: examples/corpus.txt)")
    p.add_argument("--format", default="pcm_s16le")
    p.add_argument("--frame-ms", type=int, default=100)
    p.add_argument("--chunking", default="sentence", choices=("sentence", "token"))
    p.add_argument("--voice", default=None)
    p.add_argument("--timestamps", action="store_true",
                   help="ask for word timings and score whether they come in time")
    p.add_argument("--max-seconds", type=float, default=120.0, help="bound on the whole sweep")
    p.add_argument("--seed", type=int, default=0, help="seed of the lane mix")
    p.add_argument("--out", type=Path, default=Path("probe-out"))
    p.add_argument("--no-plots", action="store_true")
    args = p.parse_args(argv)
    try:
        args.rates = sorted({float(x) for x in args.rates.split(",") if x.strip()})
    except ValueError:
        p.error("--rates takes numbers, e.g. 0.5,1,2")
    if args.rates and min(args.rates) <= 0:
        p.error("--rates must be positive")
    levels = args.levels if args.levels is not None else ("" if args.rates else "1,2,4")
    try:
        args.levels = sorted({int(x) for x in levels.split(",") if x.strip()})
    except ValueError:
        p.error("--levels takes integers, e.g. 1,2,4")
    if (not args.levels and not args.rates) or (args.levels and min(args.levels) < 1):
        p.error("--levels must be positive integers (or give --rates)")
    if args.seconds_per_rate <= 0 or args.max_in_flight < 1:
        p.error("--seconds-per-rate must be > 0 and --max-in-flight >= 1")
    if not 0.0 <= args.background_share <= 1.0:
        p.error("--background-share must be within 0..1")
    if args.per_level < 1:
        p.error("--per-level must be >= 1")
    return args


async def sweep(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[UtteranceRecord]]:
    texts = load_corpus(args.corpus)
    rng = random.Random(args.seed)
    start = time.monotonic()
    hard_stop = start + args.max_seconds
    records: list[UtteranceRecord] = []
    points = [(run_level, level) for level in args.levels] + [(run_rate, rate) for rate in args.rates]
    for i, (run, value) in enumerate(points):
        # Share what is left of the budget between the points still to run.
        remaining = hard_stop - time.monotonic()
        if remaining <= 0:
            log.warning("time budget spent before point %s", value)
            break
        stop_starting = time.monotonic() + remaining / (len(points) - i)
        records += await run(args, value, texts, rng, stop_starting, hard_stop)
    return summarize(records), records


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    summary, records = asyncio.run(sweep(args))
    args.out.mkdir(parents=True, exist_ok=True)
    config = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
              if k != "token"}
    write_json(args.out / "probe.json", config, summary, records)
    print(table(summary))
    print(f"json: {args.out / 'probe.json'}")
    if not args.no_plots and summary:
        for path in plot(args.out, summary):
            print(f"plot: {path}")
    failed = sum(1 for r in records if r.error is not None)
    return 0 if records and failed < len(records) else 1


if __name__ == "__main__":
    sys.exit(main())
