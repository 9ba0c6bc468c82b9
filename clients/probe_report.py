"""Summaries of a latency probe run: percentiles per level, a text table, JSON and plots."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path


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


def summarize(records: Sequence[UtteranceRecord]) -> list[dict]:
    """One dict per level: counts, errors by code, and p50/p95/p99 of each metric."""
    levels = sorted({r.level for r in records})
    out = []
    for level in levels:
        rows = [r for r in records if r.level == level]
        ok = [r for r in rows if r.error is None]
        errors: dict[str, int] = {}
        for r in rows:
            if r.error is not None:
                errors[r.error] = errors.get(r.error, 0) + 1
        entry: dict = {"level": level, "utterances": len(rows), "ok": len(ok),
                       "errors": errors,
                       "underruns": sum(r.underruns for r in ok),
                       "background": sum(1 for r in rows if r.lane == "background")}
        for metric in METRICS:
            values = [getattr(r, metric) for r in ok]
            entry[metric] = {f"p{q}": percentile(values, q) for q in (50, 95, 99)}
        interactive = [r.first_audio_ms for r in ok if r.lane == "interactive"]
        entry["interactive_first_audio_ms"] = {f"p{q}": percentile(interactive, q)
                                               for q in (50, 95, 99)}
        out.append(entry)
    return out


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def table(summary: Sequence[dict]) -> str:
    """A fixed-width text table of the summary (p50/p95/p99 per metric)."""
    head = (f"{'level':>5} {'n':>4} {'ok':>4} {'err':>4} | {'connect p50/p95/p99':>20} | "
            f"{'first audio p50/p95/p99':>24} | {'max gap p50/p95':>16} | "
            f"{'stall ms p50/p95/p99':>21} {'underr':>6} | {'RTF p50/p95':>12}")
    lines = [head, "-" * len(head)]
    for e in summary:
        c, f, g, s, r = (e[m] for m in METRICS)
        lines.append(
            f"{e['level']:>5} {e['utterances']:>4} {e['ok']:>4} "
            f"{sum(e['errors'].values()):>4} | "
            f"{_fmt(c['p50']):>6}/{_fmt(c['p95']):>6}/{_fmt(c['p99']):>6} | "
            f"{_fmt(f['p50']):>7}/{_fmt(f['p95']):>7}/{_fmt(f['p99']):>8} | "
            f"{_fmt(g['p50']):>7}/{_fmt(g['p95']):>8} | "
            f"{_fmt(s['p50']):>6}/{_fmt(s['p95']):>6}/{_fmt(s['p99']):>7} {e['underruns']:>6} | "
            f"{_fmt(r['p50'], 3):>5}/{_fmt(r['p95'], 3):>6}")
    return "\n".join(lines)


def write_json(path: Path, config: dict, summary: Sequence[dict],
               records: Sequence[UtteranceRecord]) -> None:
    doc = {"config": config, "levels": list(summary), "utterances": [asdict(r) for r in records]}
    path.write_text(json.dumps(doc, indent=2))


def plot(out_dir: Path, summary: Sequence[dict]) -> list[Path]:
    """first_audio.png and stall.png (p50/p95/p99 against concurrency). Returns the paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = [e["level"] for e in summary]
    paths = []
    for metric, name, ylabel in (("first_audio_ms", "first_audio.png", "first audio (ms)"),
                                 ("stall_ms", "stall.png", "playback stall per utterance (ms)")):
        fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
        for q, style in (("p50", "o-"), ("p95", "s--"), ("p99", "^:")):
            ys = [e[metric][q] for e in summary]
            ax.plot(levels, [float("nan") if y is None else y for y in ys], style, label=q)
        ax.set_xlabel("concurrent utterances")
        ax.set_ylabel(ylabel)
        ax.set_xticks(levels)
        ax.grid(True, alpha=0.3)
        ax.legend()
        ax.set_title(f"{ylabel} vs concurrency")
        fig.tight_layout()
        path = out_dir / name
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths
