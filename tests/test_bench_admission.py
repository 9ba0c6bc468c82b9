"""The admission bench: one short run ends with its JSON line, every segment
of the corpus admitted both ways and nothing left admitted."""

from __future__ import annotations

import json

from bench.admission import main


def test_a_short_run_prints_the_json_line(capsys):
    assert main(["--rounds", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["segments"] >= 60
    for name in ("inline", "prepared", "prepare"):
        assert 0 < result[f"{name}_median_ms"] <= result[f"{name}_p99_ms"]
