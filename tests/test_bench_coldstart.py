"""``python -m bench coldstart``'s JSON: the main pass's keys as before, and an
``--also`` precision's pass under suffixed keys (no server started: the
starts are stand-ins that log a timeline)."""

from __future__ import annotations

import json

import pytest

from bench import coldstart


@pytest.fixture
def starts(monkeypatch, tmp_path):
    """Each start's precision and settle flag; ready = 10 s for int8, else 4 s,
    plus the run's number, first audio 1 s later."""
    made: list[tuple[str, bool]] = []

    def one_start(checkpoint, cache, args, log_path, settle, precision=None):
        made.append((precision or args.precision, settle))
        ready = (10.0 if precision == "int8" else 4.0) + len(made) / 100
        log_path.write_text(f"x start-up: decoder matrices {int(ready * 100)} ms (at 1 ms)\n")
        return {"ready_s": ready, "first_audio_s": ready + 1}

    monkeypatch.setattr(coldstart, "one_start", one_start)
    monkeypatch.setattr(coldstart, "ensure_checkpoint", lambda work: tmp_path / "checkpoint")
    return made


def _run(capsys, tmp_path, *argv: str) -> dict:
    assert coldstart.main(["--work-dir", str(tmp_path), "--warm-runs", "3", *argv]) == 0
    return json.loads(capsys.readouterr().out.splitlines()[-1])


def test_an_int8_pass_follows_under_its_own_keys(starts, capsys, tmp_path):
    out = _run(capsys, tmp_path, "--also", "int8")
    assert starts == [("auto", True)] + [("auto", False)] * 3 + [("int8", True)] + [("int8", False)] * 3
    assert (out["ready_s_cold"], out["ready_s_warm"], out["first_audio_s_warm"]) == (4.01, 4.03, 5.03)
    assert out["phases_ms_cold"] == {"decoder matrices": 401}
    assert out["phases_ms_warm"] == {"decoder matrices": 403}
    assert (out["ready_s_first_int8"], out["ready_s_warm_int8"], out["first_audio_s_warm_int8"]) == (
        10.05, 10.07, 11.07)
    assert [r["ready_s"] for r in out["warm_runs_int8"]] == [10.06, 10.07, 10.08]
    assert out["phases_ms_warm_int8"] == {"decoder matrices": 1007}
    assert "ready_s_cold_int8" not in out and "cache_bytes_int8" not in out


@pytest.mark.parametrize("argv", [("--also", "none"), ("--precision", "fp32")])
def test_no_second_pass_when_none_is_asked_or_it_is_the_main_one(starts, capsys, tmp_path, argv):
    out = _run(capsys, tmp_path, *argv)
    assert len(starts) == 4
    assert not [k for k in out if k.endswith(("_int8", "_fp32"))]
