"""Summaries of a latency probe run: percentiles per point, per lane, a text table, JSON and plots.

A point is one concurrency level (``sweep == "concurrency"``, keyed by ``level``) or one
offered load in utterances per second (``sweep == "rate"``, keyed by ``rate``). Each point
reports every metric for all utterances and for each lane on its own, and refusals by
error code with their latency and retry hints.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class UtteranceRecord:
    """What the probe measured for one utterance (times in ms; None when not reached)."""

    level: int
    lane: str
    chars: int
    connect_ms: float | None = None
    first_audio_ms: float | None = None
    server_first_audio_ms: float | None = None
    total_ms: float | None = None
    audio_ms: float = 0.0
    frames: int = 0
    max_gap_ms: float = 0.0
    mean_gap_ms: float = 0.0
    underruns: int = 0
    stall_ms: float = 0.0
    rtf: float | None = None
    error: str | None = None
    sweep: str = "concurrency"  # or "rate": offered utterances per second
    rate: float | None = None
    refused: bool = False  # an error before `started`: the server said no
    refusal_ms: float | None = None  # speak sent to the refusal received
    retry_after_ms: int | None = None
    # With --timestamps (clients/probe_words.py): words timed, the median and smallest
    # lead of a timing over its audio, the smallest margin before its audio was due to
    # play, and the words whose timing came after that.
    words: int = 0
    word_lead_ms: float | None = None
    word_lead_ms_min: float | None = None
    word_margin_ms_min: float | None = None
    words_late: int = 0


def percentile(values: Sequence[float | None], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100) of `values`; None when empty."""
    data = sorted(v for v in values if v is not None and not math.isnan(v))
    if not data:
        return None
    pos = (len(data) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


METRICS = ("connect_ms", "first_audio_ms", "max_gap_ms", "stall_ms", "rtf")


LANES = ("interactive", "background")


def _point(record: UtteranceRecord) -> tuple[str, float]:
    if record.sweep == "rate":
        return (record.sweep, record.rate or 0.0)
    return (record.sweep, record.level)


def _metrics(rows: Sequence[UtteranceRecord]) -> dict[str, Any]:
    ok = [r for r in rows if r.error is None]
    refused = [r for r in rows if r.refused]
    codes: dict[str, int] = {}
    for r in refused:
        codes[r.error or "?"] = codes.get(r.error or "?", 0) + 1
    entry: dict[str, Any] = {"utterances": len(rows), "ok": len(ok), "refusals": codes,
                   "underruns": sum(r.underruns for r in ok),
                   "refusal_ms": {f"p{q}": percentile([r.refusal_ms for r in refused], q)
                                  for q in (50, 99)},
                   "retry_after_ms_p50": percentile([r.retry_after_ms for r in refused], 50)}
    for metric in METRICS:
        values = [getattr(r, metric) for r in ok]
        entry[metric] = {f"p{q}": percentile(values, q) for q in (50, 95, 99)}
    timed = [r for r in ok if r.words]
    if timed:
        entry["words"] = {"utterances": len(timed), "words": sum(r.words for r in timed),
                          "late": sum(r.words_late for r in timed),
                          "lead_ms_p50": percentile([r.word_lead_ms for r in timed], 50),
                          "lead_ms_min": min(r.word_lead_ms_min or 0.0 for r in timed),
                          "margin_ms_min": min(r.word_margin_ms_min or 0.0 for r in timed)}
    return entry


def summarize(records: Sequence[UtteranceRecord]) -> list[dict[str, Any]]:
    """One dict per point (concurrency level or offered rate): counts, errors by code,
    p50/p95/p99 of each metric over all utterances, and the same per lane in ``lanes``
    (with refusals by code, their latency and retry hints)."""
    out = []
    for sweep, value in sorted({_point(r) for r in records}):
        rows = [r for r in records if _point(r) == (sweep, value)]
        errors: dict[str, int] = {}
        for r in rows:
            if r.error is not None:
                errors[r.error] = errors.get(r.error, 0) + 1
        entry: dict[str, Any] = {"sweep": sweep, "level" if sweep == "concurrency" else "rate": value,
                       **_metrics(rows), "errors": errors,
                       "background": sum(1 for r in rows if r.lane == "background")}
        entry["lanes"] = {lane: _metrics([r for r in rows if r.lane == lane])
                          for lane in LANES if any(r.lane == lane for r in rows)}
        interactive = entry["lanes"].get("interactive", {}).get("first_audio_ms")
        entry["interactive_first_audio_ms"] = interactive or {f"p{q}": None for q in (50, 95, 99)}
        out.append(entry)
    return out


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _label(entry: dict[str, Any]) -> str:
    return f"{entry['level']}" if entry["sweep"] == "concurrency" else f"{entry['rate']:g}/s"


def table(summary: Sequence[dict[str, Any]]) -> str:
    """A fixed-width text table: one row per point and lane (p50/p95/p99 per metric,
    refusals by code)."""
    head = (f"{'point':>7} {'lane':11} {'n':>4} {'ok':>4} | {'connect p50/p95/p99':>20} | "
            f"{'first audio p50/p95/p99':>24} | {'max gap p50/p95':>16} | "
            f"{'stall ms p50/p95/p99':>21} {'underr':>6} | {'RTF p50/p95':>12} | refusals")
    lines = [head, "-" * len(head)]
    for e in summary:
        for lane, m in e["lanes"].items():
            c, f, g, s, r = (m[k] for k in METRICS)
            refusals = ", ".join(f"{code} {n}" for code, n in sorted(m["refusals"].items())) or "-"
            if m["refusals"]:
                refusals += f" (p99 {_fmt(m['refusal_ms']['p99'])} ms)"
            lines.append(
                f"{_label(e):>7} {lane:11} {m['utterances']:>4} {m['ok']:>4} | "
                f"{_fmt(c['p50']):>6}/{_fmt(c['p95']):>6}/{_fmt(c['p99']):>6} | "
                f"{_fmt(f['p50']):>7}/{_fmt(f['p95']):>7}/{_fmt(f['p99']):>8} | "
                f"{_fmt(g['p50']):>7}/{_fmt(g['p95']):>8} | "
                f"{_fmt(s['p50']):>6}/{_fmt(s['p95']):>6}/{_fmt(s['p99']):>7} {m['underruns']:>6} | "
                f"{_fmt(r['p50'], 3):>5}/{_fmt(r['p95'], 3):>6} | {refusals}")
    timed = [(e, lane, m["words"]) for e in summary for lane, m in e["lanes"].items()
             if "words" in m]
    if timed:
        lines += ["", f"{'point':>7} {'lane':11} {'words':>6} | {'timing lead over its audio ms':>30}"
                      f" | {'margin before due ms':>20} | late"]
        for e, lane, w in timed:
            lead = f"p50 {_fmt(w['lead_ms_p50'], 1)}  min {_fmt(w['lead_ms_min'], 1)}"
            lines.append(f"{_label(e):>7} {lane:11} {w['words']:>6} | {lead:>30} | "
                         f"{'min ' + _fmt(w['margin_ms_min'], 1):>20} | {w['late']}")
    return "\n".join(lines)


def write_json(path: Path, config: dict[str, Any], summary: Sequence[dict[str, Any]],
               records: Sequence[UtteranceRecord]) -> None:
    doc = {"config": config, "levels": list(summary), "utterances": [asdict(r) for r in records]}
    path.write_text(json.dumps(doc, indent=2))


def plot(out_dir: Path, summary: Sequence[dict[str, Any]]) -> list[Path]:
    """first_audio.png and stall.png against concurrency (and first_audio_by_rate.png,
    stall_by_rate.png against offered load for a rate sweep): p50 and p99 of each lane,
    log axis. Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for sweep, suffix, xlabel in (("concurrency", "", "concurrent utterances"),
                                  ("rate", "_by_rate", "offered load (utterances per second)")):
        points = [e for e in summary if e["sweep"] == sweep]
        if not points:
            continue
        xs = [e["level" if sweep == "concurrency" else "rate"] for e in points]
        for metric, name, ylabel in (("first_audio_ms", "first_audio", "first audio (ms)"),
                                     ("stall_ms", "stall", "playback stall per utterance (ms)")):
            fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
            for lane, color in zip(LANES, ("tab:blue", "tab:orange")):
                for q, style in (("p50", "o-"), ("p99", "^:")):
                    ys = [e["lanes"].get(lane, {}).get(metric, {}).get(q) for e in points]
                    if all(y is None for y in ys):
                        continue
                    # A log axis cannot show 0: a stall-free point sits at its floor.
                    ax.plot(xs, [float("nan") if y is None else max(y, 0.1) for y in ys], style,
                            color=color, label=f"{lane} {q}")
            ax.set_yscale("log")
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(True, which="both", alpha=0.3)
            if ax.lines:
                ax.legend()
            ax.set_title(f"{ylabel} vs {'concurrency' if sweep == 'concurrency' else 'offered load'}")
            fig.tight_layout()
            path = out_dir / f"{name}{suffix}.png"
            fig.savefig(path)
            plt.close(fig)
            paths.append(path)
    return paths
