"""clients.probe_report: percentiles, per-level summary, table, JSON and plots."""

import json

import pytest

from clients.probe_report import UtteranceRecord, percentile, plot, summarize, table, write_json


def test_percentile_interpolates():
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile([0, 10], 95) == pytest.approx(9.5)
    assert percentile([7], 99) == 7
    assert percentile([], 50) is None
    assert percentile([None, 4.0], 50) == 4.0


def _records():
    recs = []
    for level in (1, 2):
        for i in range(4):
            recs.append(UtteranceRecord(level=level, lane="interactive" if i else "background",
                                        chars=40, connect_ms=5.0, first_audio_ms=100.0 * level + i,
                                        audio_ms=1000.0, underruns=i % 2, stall_ms=10.0 * i,
                                        max_gap_ms=50.0, rtf=0.5))
    recs.append(UtteranceRecord(level=2, lane="interactive", chars=40, error="overloaded",
                                refused=True, refusal_ms=12.0, retry_after_ms=300))
    return recs


def test_summarize_per_level(tmp_path):
    summary = summarize(_records())
    assert [e["level"] for e in summary] == [1, 2]
    one, two = summary
    assert (one["utterances"], one["ok"], one["errors"]) == (4, 4, {})
    assert (two["utterances"], two["ok"], two["errors"]) == (5, 4, {"overloaded": 1})
    assert one["first_audio_ms"]["p50"] == pytest.approx(101.5)
    assert two["first_audio_ms"]["p99"] == pytest.approx(202.97)
    assert one["underruns"] == 2 and one["background"] == 1
    assert one["interactive_first_audio_ms"]["p50"] == pytest.approx(102.0)
    # Each lane on its own, refusals by code with their latency and hint.
    lanes = two["lanes"]
    assert lanes["background"]["utterances"] == 1 and lanes["background"]["refusals"] == {}
    assert lanes["interactive"]["refusals"] == {"overloaded": 1}
    assert lanes["interactive"]["refusal_ms"]["p99"] == 12.0
    assert lanes["interactive"]["retry_after_ms_p50"] == 300
    assert lanes["interactive"]["first_audio_ms"]["p50"] == pytest.approx(202.0)
    text = table(summary)
    assert len(text.splitlines()) == 2 + 4  # a row per level and lane
    assert "overloaded 1 (p99 12 ms)" in text
    write_json(tmp_path / "p.json", {"levels": [1, 2]}, summary, _records())
    doc = json.loads((tmp_path / "p.json").read_text())
    assert len(doc["utterances"]) == 9 and doc["levels"][1]["errors"] == {"overloaded": 1}


def test_plots_are_png(tmp_path):
    paths = plot(tmp_path, summarize(_records()))
    assert {p.name for p in paths} == {"first_audio.png", "stall.png"}
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_rate_sweep_is_its_own_set_of_points_and_plots(tmp_path):
    recs = [UtteranceRecord(level=0, lane="interactive", chars=40, sweep="rate", rate=rate,
                            first_audio_ms=50.0 * rate, stall_ms=0.0)
            for rate in (0.5, 2.0) for _ in range(3)]
    summary = summarize(recs + _records())
    assert [(e["sweep"], e.get("level", e.get("rate"))) for e in summary] == [
        ("concurrency", 1), ("concurrency", 2), ("rate", 0.5), ("rate", 2.0)]
    assert summary[3]["lanes"]["interactive"]["first_audio_ms"]["p50"] == 100.0
    assert "2/s" in table(summary)
    names = {p.name for p in plot(tmp_path, summary)}
    assert names == {"first_audio.png", "stall.png", "first_audio_by_rate.png", "stall_by_rate.png"}
