"""The start-up timeline: one line per phase, read back by the cold-start bench."""

from __future__ import annotations

import logging
import time

from bench.coldstart import _median_phases, phases_ms
from realtime.engine.startup_clock import LINE_PREFIX, StartupClock, process_age_s


def test_each_mark_is_the_time_since_the_previous_one(caplog):
    clock = StartupClock()
    clock.mark("first")  # since the process started: whatever it is
    time.sleep(0.05)
    with caplog.at_level(logging.INFO, logger="realtime.engine.startup_clock"):
        ms = clock.mark("sleep")
    assert 45 <= ms < 5000
    assert [p for p, _ in clock.phases()] == ["first", "sleep"]
    assert clock.summary().startswith("first ") and ", sleep " in clock.summary()
    assert any(r.getMessage().startswith(LINE_PREFIX + "sleep ") for r in caplog.records)


def test_the_first_phase_counts_from_the_process_start():
    age = process_age_s()
    assert age is not None and age > 0  # Linux: from /proc
    clock = StartupClock()
    assert clock.mark("so far") >= age * 1e3 - 50  # jiffies: 10 ms


def test_the_bench_reads_the_phases_from_a_server_log(tmp_path, caplog):
    clock = StartupClock()
    with caplog.at_level(logging.INFO, logger="realtime.engine.startup_clock"):
        clock.mark("runtime imports")
        clock.mark("weights loaded")
    log = tmp_path / "server.log"
    log.write_text("".join(f"2026-12-01 10:00:00,000 INFO    {r.name}: {r.getMessage()}\n"
                           for r in caplog.records) + "unrelated line 12 ms (at 3 ms)\n")
    phases = phases_ms(log)
    assert list(phases) == ["runtime imports", "weights loaded"]
    assert _median_phases([{"a": 1, "b": 5}, {"a": 3}, {"a": 2, "b": 7}]) == {"a": 2}
