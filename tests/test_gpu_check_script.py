"""tools/gpu_check.sh on the CPU, with a stand-in for the GPU machine's python:
the report is always left, names the step that failed, and pip never runs
against an index (nor at all when no wheels were carried)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "tools" / "gpu_check.sh"

# The machine's python, as the script sees it: every call is logged; CUDA is
# there unless STUB_NO_CUDA; the runtime's packages import once pip "installed"
# them; the check itself does what STUB_CHECK says. Anything else (the trap's
# JSON merge) goes to the real python.
STUB = r"""#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
case "$*" in
  *cuda.is_available*) [[ -z "${STUB_NO_CUDA:-}" ]] && exit 0
                       echo "AssertionError: no cuda" >&2; exit 1 ;;
  *check_install*) [[ -f "$STUB_LOG.installed" ]] && exit 0
                   echo "ModuleNotFoundError: No module named 'ChatTTS'" >&2; exit 1 ;;
  "-m pip "*) sleep "${STUB_PIP_SLEEP:-0}"; touch "$STUB_LOG.installed"; exit 0 ;;
  "-m tools.gpu_check"*)
    case "$STUB_CHECK" in
      crash) echo "Segmentation fault" >&2; exit 139 ;;
      hang) echo '{"complete": false, "running": "vocoder", "fidelity": {"steps": 200}}' \
                > "$OUT/gpu_check.json"; exec sleep 60 ;;
      pass) echo '{"complete": true}' > "$OUT/gpu_check.json"; exit 0 ;;
    esac ;;
esac
exec "$REAL_PYTHON" "$@"
"""


def _run(tmp_path: Path, wheels: bool = False, **env) -> tuple[int, dict, list[str]]:
    stub = tmp_path / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    whl = tmp_path / "whl"
    whl.mkdir(exist_ok=True)
    if wheels:
        (whl / "ChatTTS-0.2.5-py3-none-any.whl").write_bytes(b"")
    out = tmp_path / "out"
    log = tmp_path / "calls.log"
    full_env = dict(os.environ, PYTHON=str(stub), REAL_PYTHON=sys.executable, OUT=str(out),
                    WHEELS=str(whl), GPU_SITE=str(tmp_path / "site"), STUB_LOG=str(log),
                    STUB_CHECK="pass", LIMIT="60", BUDGET_MARGIN="5")
    full_env.update(env)
    proc = subprocess.run(["bash", str(SCRIPT)], env=full_env, capture_output=True, text=True,
                          timeout=120)
    report = json.loads((out / "gpu_check.json").read_text())
    calls = log.read_text().splitlines() if log.exists() else []
    return proc.returncode, report, calls


def _pip_calls(calls: list[str]) -> list[str]:
    return [c for c in calls if c.startswith("-m pip")]


def test_without_a_cuda_torch_it_fails_at_once_and_says_so(tmp_path):
    rc, report, calls = _run(tmp_path, STUB_NO_CUDA="1")
    assert rc == 2
    assert report["complete"] is False
    assert report["script"]["failed_step"] == "cuda_torch"
    assert "no CUDA torch" in report["script"]["why"]
    assert "no cuda" in report["script"]["log_tail"]
    assert not _pip_calls(calls) and not any("tools.gpu_check" in c for c in calls)


def test_missing_packages_without_wheels_fail_before_any_pip(tmp_path):
    rc, report, calls = _run(tmp_path)
    assert rc == 3
    assert report["script"]["failed_step"] == "packages"
    assert "wheels" in report["script"]["why"]
    assert not _pip_calls(calls)


def test_carried_wheels_install_without_an_index_then_the_check_runs(tmp_path):
    rc, report, calls = _run(tmp_path, wheels=True)
    assert rc == 0 and report == {"complete": True}
    (pip,) = _pip_calls(calls)
    assert "--no-index" in pip and "--target" in pip and "ChatTTS-0.2.5-py3-none-any.whl" in pip
    assert any(c.startswith("-m tools.gpu_check") for c in calls)


def test_packages_already_there_are_used_when_no_wheels_are_carried(tmp_path):
    (tmp_path / "calls.log.installed").touch()
    rc, report, calls = _run(tmp_path)
    assert rc == 0 and not _pip_calls(calls)


def test_carried_wheels_are_installed_into_an_emptied_site_even_where_packages_import(tmp_path):
    # The check runs on exactly what the rehearsal ran: never on a warm
    # machine's leftovers.
    (tmp_path / "calls.log.installed").touch()
    stale = tmp_path / "site" / "av"
    stale.mkdir(parents=True)
    rc, report, calls = _run(tmp_path, wheels=True)
    assert rc == 0 and len(_pip_calls(calls)) == 1
    assert not stale.exists()


def test_a_check_that_dies_before_writing_still_leaves_a_report(tmp_path):
    rc, report, _ = _run(tmp_path, wheels=True, STUB_CHECK="crash")
    assert rc == 139
    assert report["complete"] is False
    assert report["script"]["failed_step"] == "check"
    assert report["script"]["exit_status"] == 139
    assert "Segmentation fault" in report["script"]["log_tail"]


def _check_seconds(tmp_path: Path) -> int:
    """The seconds the script gave the check, from its log."""
    log = (tmp_path / "out" / "gpu_check.log").read_text()
    return int(log.split(" s left for the check")[0].rsplit(": ", 1)[1])


def test_the_limit_counts_from_the_scripts_start(tmp_path):
    rc, report, calls = _run(tmp_path, wheels=True, LIMIT="60", BUDGET_MARGIN="10", STUB_PIP_SLEEP="4")
    assert rc == 0
    given = _check_seconds(tmp_path)
    # 60 s less the install's 4 s and the trap's 15 s reserve.
    assert 38 <= given <= 41
    (check,) = [c for c in calls if c.startswith("-m tools.gpu_check")]
    assert f"--budget {given - 10}" in check


def test_a_limit_spent_before_the_check_fails_without_starting_it(tmp_path):
    rc, report, calls = _run(tmp_path, wheels=True, LIMIT="18", BUDGET_MARGIN="0")
    assert rc == 124 and report["script"]["failed_step"] == "check"
    assert "left for the check" in report["script"]["why"]
    assert not any(c.startswith("-m tools.gpu_check") for c in calls)


@pytest.mark.timeout(60)
def test_a_check_killed_at_the_limit_keeps_what_it_measured(tmp_path):
    rc, report, _ = _run(tmp_path, wheels=True, STUB_CHECK="hang", LIMIT="22", BUDGET_MARGIN="0")
    assert rc == 124
    assert report["fidelity"] == {"steps": 200} and report["running"] == "vocoder"
    assert report["complete"] is False
    assert report["script"]["failed_step"] == "check"
    assert "limit" in report["script"]["why"]


@pytest.mark.timeout(420)
def test_the_script_runs_every_section_on_the_cpu(tmp_path):
    """The CI run: the real script and the check with ``--device cpu --tiny``,
    the server section included, with this machine's python (packages
    already there: no pip)."""
    out = tmp_path / "out"
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(out), ARGS="--device cpu --tiny",
               WHEELS=str(tmp_path / "no-wheels"), GPU_SITE=str(tmp_path / "site"),
               OMP_NUM_THREADS="1")
    proc = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=400)
    report = json.loads((out / "gpu_check.json").read_text())
    assert proc.returncode == 0, (report, proc.stderr[-3000:])
    from tools import gpu_check
    assert report["complete"] is True and report["running"] is None
    assert list(report)[:8] == ["complete", "running", "device", "torch", "python", "sections",
                                "skipped_by_request", "seconds"]
    assert report["sections"] == list(gpu_check.SECTIONS)
    # The mission's two figures first, the profiler probe after them.
    assert [n for n in report if n in gpu_check.SECTIONS][:3] == ["server", "streams", "sdpa_kernels"]
    for name in ("assets",) + gpu_check.SECTIONS:
        assert not {"error", "skipped", "partial"} & set(report[name]), name
    assert report["sdpa_kernels"]["decode"]["backend"] != "other"
    assert report["packages"]["ChatTTS"].startswith("0.2.5 (")
    server = report["server"]
    assert server["cold_start_s"] > 0 and server["graphs_captured"] == 0 and server["eager_fallbacks"] == []
    assert server["server_errors"] == []
    # The server's whole log beside the report, start to stop.
    log = (out / "server.log").read_text()
    assert server["log"] == str(out / "server.log") and "ready in" in log and "start-up check:" in log
    for n in (1, 2):
        row = server[f"interactive_{n}"]
        # Every utterance spoke (or was refused), the background lane full all along.
        assert row["no_first_audio"] == 0 and row["admitted"] >= 1 and row["rounds"] == 2
        assert row["ttfa_p99_ms"] >= row["ttfa_p50_ms"] > 0
        assert all(q > 0 for q in row["background_queued"]), row
    assert not server["background"]["errors"]  # how many ended depends on the machine's load
    serving = report["serving"]
    assert serving["decode_step_ms"] and serving["cold_start_s"] >= serving["warmup_s"] > 0
    streams = report["streams"]["kv_256"]
    assert streams["max_realtime_streams"] == 4  # the CPU's limit is 10 s
    assert streams["streams_4"]["plan_shape"] == [4, 256] and streams["streams_4"]["underruns"] == 0
    assert report["first_audio"]["first_audio_s"] > 0 and report["first_audio"]["cold_first_audio_s"] > 0
    tp = report["throughput"]
    # 8 codes of 512 samples less the ISTFT's half step, per job: every job ended.
    assert all(tp[k]["audio_s"] == pytest.approx(tp[k]["batch"] * (8 * 512 - 256) / 24000)
               for k in ("batch_2", "batch_4"))
    assert tp["batch_4"]["distinct_texts"] == 4
    for n in (2, 4):
        voc = report["vocoder"][f"streams_{n}"]
        assert voc["audio_s_per_step"] > 0 and voc["vocoder_calls_per_step"] > 0
    hot = report["hot_path"]["batch_4"]
    # The EOS read at least; the counts come from the CPU stand-in.
    assert hot["host_syncs_per_step"] >= 1 and hot["launches_per_step"] > 0
    assert hot["plan_shape"] == [4, 256] and hot["longest"] <= 256
    assert hot["kv_plan_shape"]["read_mib"] > hot["kv_real_rows"]["read_mib"] > 0
    lap = report["overlap"]["streams_2"]
    assert lap["audio_identical"] is True and lap["audio_snr_db_min"] == float("inf")
    assert lap["on_step_ms_p99"] >= lap["on_step_ms_p50"] > 0
    assert lap["deferred_audio_identical"] is True and lap["deferred_step_ms_p50"] > 0
    precision = report["vocoder_precision"]
    assert "tf32" not in precision and precision["bf16"]["snr_db_min"] >= 40  # tf32: CUDA only
    fid = report["fidelity"]
    assert fid["steps"] == 12 and fid["precision"] == "fp32"  # bf16: CUDA only
    assert len(fid.get("hidden_rel_err_by_step", [])) == fid["steps_compared"]
    graphs = report["graphs"]["batch_2"]
    assert graphs["jobs_with_identical_codes"] == "2/2" and graphs["graph_shape"] == [2, 128]


@pytest.mark.timeout(300)
def test_a_check_killed_inside_the_server_section_keeps_the_rounds_measured(tmp_path):
    """The report is rewritten after the server's start and after every
    round: a check killed while the section runs keeps what it measured."""
    out = tmp_path / "report.json"
    code = f"""
import dataclasses, logging
from tools import gpu_check
logging.basicConfig(level=logging.INFO)
plan = dataclasses.replace(gpu_check.CPU_SERVER, interactive=(1,), rounds=(500,), deadline_s=600.0)
gpu_check.run("cpu", True, 600.0, {str(out)!r}, sizes=dataclasses.replace(gpu_check.CPU_SMOKE, server=plan))
"""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=SCRIPT.parents[1], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        report: dict = {}
        while time.monotonic() < deadline:
            try:
                report = json.loads(out.read_text())
            except (OSError, ValueError):
                report = {}
            if report.get("server", {}).get("interactive_1", {}).get("rounds", 0) >= 2:
                break
            time.sleep(0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the check and the server it started
        proc.wait(10)
    report = json.loads(out.read_text())
    assert report["running"] == "server" and report["complete"] is False
    server = report["server"]
    assert server["partial"] is True and server["cold_start_s"] > 0
    assert server["interactive_1"]["rounds"] >= 2 and server["interactive_1"]["ttfa_p50_ms"] > 0
    assert (tmp_path / "server.log").read_text().count("start-up") > 0
