"""The CPU streams bench: its sweep stops at the first count that does not
pass, and a quick run through the real server gives the JSON keys."""

from __future__ import annotations

import json

import pytest

from bench import cpu_streams
from bench.cpu_streams import passes, sweep


def row(n: int, underruns: int = 0, refused: int = 0, errors: int = 0) -> dict:
    return {"streams": n, "served": n - refused - errors, "refused": refused,
            "errors": errors, "underruns": underruns}


def test_the_sweep_stops_at_the_first_count_with_underruns():
    ran: list[int] = []

    def run(n: int) -> dict:
        ran.append(n)
        return row(n, underruns=2 if n >= 3 else 0)

    best, rows = sweep(run, range(1, 7))
    assert best == 2 and ran == [1, 2, 3]  # 4..6 never run
    assert [r["streams"] for r in rows] == [1, 2, 3]


def test_the_best_setup_per_precision_and_overall():
    result = {"realtime_streams_ort-int8": 2, "rtf_stream_ort-int8": 0.7, "realtime_streams_torch-int8": 1,
              "rtf_stream_torch-int8": 0.9, "realtime_streams_ort-int4": 3, "rtf_stream_ort-int4": 0.5}
    for setup in ("ort-int8", "torch-int8", "ort-int4"):
        result |= {f"first_audio_ms_{setup}": 1.0, f"admission_capacity_{setup}": 1}
    best = cpu_streams.best_of(result, ("ort-int8", "torch-int8", "ort-int4"))
    int8 = (best["best_setup_int8"], best["realtime_streams_int8"], best["rtf_stream_int8"])
    assert int8 == ("ort-int8", 2, 0.7)
    overall = (best["best_setup_cpu"], best["realtime_streams_cpu"], best["rtf_stream_cpu"])
    assert overall == ("ort-int4", 3, 0.5)


def test_a_refused_or_failed_stream_ends_the_sweep_too():
    assert sweep(lambda n: row(n, refused=1 if n == 2 else 0), range(1, 5))[0] == 1
    assert sweep(lambda n: row(n, errors=1), range(1, 5))[0] == 0
    assert not passes(row(1, underruns=1)) and passes(row(4))


@pytest.mark.slow
def test_quick_run_through_the_real_server_gives_the_keys(capsys):
    assert cpu_streams.main(["--quick", "--max-streams", "2", "--setup", "ort-int8"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"cpu", "threads", "realtime_streams_int8", "rtf_stream_int8", "realtime_streams_ort-int8",
            "first_audio_ms_int8", "admission_capacity_int8", "rows", "rtf_stream_cpu",
            "realtime_streams_cpu", "load_average"} <= set(result)
    assert result["best_setup_cpu"] == result["best_setup_int8"] == "ort-int8"
    rows = result["rows"]
    assert 1 <= len(rows) <= 2 and rows[0]["streams"] == 1
    # The reported count is the last passing row's, and rows stop at the first failure.
    passing = [r["streams"] for r in rows if passes(r)]
    assert result["realtime_streams_int8"] == (passing[-1] if passing else 0)
    assert all(passes(r) for r in rows[:-1])
    assert rows[0]["audio_s"] > 0 and result["rtf_stream_int8"] > 0
    assert result["admission_capacity_int8"] >= 1


@pytest.mark.slow
def test_a_server_too_slow_for_one_stream_counts_none():
    # The tone runner at 40 ms a code: a stream gets half real time and underruns.
    slow = ("--weights", "tone", "--tone-step-ms", "40", "--tone-codes-per-char", "1")
    result = cpu_streams.measure(quick=True, max_streams=3, setups=("torch-fp32",),
                                 server_args=slow, text="A short sentence of speech.")
    assert result["realtime_streams_fp32"] == result["realtime_streams_cpu"] == 0
    assert len(result["rows"]) == 1 and result["rows"][0]["underruns"] > 0
