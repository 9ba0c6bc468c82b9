"""The text bench: its corpus splits as the server splits it, and one short run
ends with the JSON line the issue asks for."""

from __future__ import annotations

import json

from bench.text import _percentile, corpus_answers, main
from realtime.speech.lang import needs_rules


def test_corpus_is_mixed_and_mostly_plain():
    sentences = [s for a in corpus_answers() for s in a]
    assert len(sentences) >= 60
    ruled = sum(needs_rules(s) for s in sentences)
    assert 0.2 * len(sentences) < ruled < 0.6 * len(sentences)
    assert any("\u4e00" <= ch <= "\u9fff" for s in sentences for ch in s)


def test_percentile_is_the_ranked_value():
    values = [float(v) for v in range(1, 101)]
    assert _percentile(values, 0.5) == 51.0 and _percentile(values, 0.99) == 99.0
    assert _percentile(values, 1.0) == 100.0


def test_a_short_run_prints_the_json_line(capsys):
    assert main(["--repeats", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    result = json.loads(last)
    assert result["text_median_ms"] <= result["text_p99_ms"] <= result["text_max_ms"]
    assert result["sentences"] == result["calls"]
    assert 0 < result["first_audio_share"] < 1
