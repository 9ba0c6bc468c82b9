"""The simulator and the benchmark, on small workloads."""

import json

import pytest

from bench import scheduler as bench
from bench import sim
from clients.probe_report import percentile
from scheduler import CostModel, Lane, SchedulerConfig


@pytest.fixture(scope="module")
def arrivals():
    cost = CostModel.default_gpu()
    return cost, sim.workload(0.8, cost, sim.workload_duration(0.8, cost, 2), seed=3)


def test_workload_is_deterministic_and_has_both_lanes(arrivals):
    cost, arr = arrivals
    again = sim.workload(0.8, cost, sim.workload_duration(0.8, cost, 2), seed=3)
    assert arr == again
    assert {a.lane for a in arr} == {Lane.INTERACTIVE, Lane.BACKGROUND}
    assert all(a.deadline > a.time for a in arr if a.lane is Lane.BACKGROUND)
    assert [a.time for a in arr] == sorted(a.time for a in arr)


def test_our_scheduler_serves_everything_it_accepts_with_invariants_checked(arrivals):
    cost, arr = arrivals
    out = sim.run_ours(arr, cost, SchedulerConfig(), 0.0, check=True)
    interactive = sum(1 for a in arr if a.lane is Lane.INTERACTIVE)
    assert len(out.first_audio) == interactive - out.interactive_refused
    assert len(out.refused) == out.background_refused + out.interactive_refused
    accepted = [a for a in arr if a.key not in out.refused]
    assert out.codes == sum(s.tokens for a in accepted for s in a.segments)
    assert all(t > 0 for t in out.first_audio)


def test_batcher_runs_every_job_and_counts_misses(arrivals):
    cost, arr = arrivals
    out = sim.run_batcher(arr, cost, 0.0, 8, 0.05)
    assert out.codes == sum(s.tokens for a in arr for s in a.segments)
    assert out.background_refused == 0
    stats = sim.summarize(out)
    assert stats["ttfa_p50_ms"] <= stats["ttfa_p99_ms"]


def test_continuous_batching_serves_everything_first_come_first_served(arrivals):
    cost, arr = arrivals
    out = sim.run_continuous(arr, cost, 0.0)
    assert out.codes == sum(s.tokens for a in arr for s in a.segments)
    assert out.background_refused == 0 and out.interactive_refused == 0
    assert len(out.first_audio) == sum(1 for a in arr if a.lane is Lane.INTERACTIVE)
    assert all(t > 0 for t in out.first_audio)


def test_continuous_batching_refills_rows_at_step_boundaries():
    cost = CostModel.default_gpu()
    seg = sim.Segment(tokens=100, est=100, prompt_len=40)
    # A second job arriving mid-run joins at the next step, not after the first ends.
    arr = [sim.Arrival(0.0, Lane.INTERACTIVE, "a", (seg,), None),
           sim.Arrival(0.1, Lane.INTERACTIVE, "b", (seg,), None)]
    out = sim.run_continuous(arr, cost, 0.0)
    first_b = out.first_audio[1]
    assert first_b < 0.05  # one step after it came, not ~1.2 s behind "a"


def test_percentile():
    assert percentile([3, 1, 2], 50) == 2
    assert percentile([1, 2, 3, 4, 5], 99) == pytest.approx(4.96)  # linear between ranks
    assert percentile([], 50) is None


def test_bench_writes_table_plot_and_a_json_last_line(tmp_path, capsys):
    assert bench.main(["--quick", "--bursts", "1", "--out", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    result = json.loads(lines[-1])
    assert {"ttfa_p99_ratio", "deadline_miss_ratio", "ours_bg_refusal_rate", "ttfa_p99_ratio_cb",
            "deadline_miss_ratio_cb", "ours_interactive_refusal_rate"} <= result.keys()
    assert result["ttfa_p99_ratio"] > 0 and result["ttfa_p99_ratio_cb"] > 0
    rows = json.loads((tmp_path / "scheduler_bench.json").read_text())
    assert {r["policy"] for r in rows} == {"two-lane", "continuous", "batcher 50 ms", "batcher 80 ms"}
    assert (tmp_path / "scheduler_bench.png").stat().st_size > 10_000


def test_cpu_steps_file_forms(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps([{"batch": 1, "bucket": 256, "seconds": 0.05}]))
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"1,256": 0.05, "8,256": 0.12}))
    assert bench.load_cpu_steps(str(rows)).step_time(1, 256) == 0.05
    assert bench.load_cpu_steps(str(mapping)).step_time(8, 256) == 0.12
