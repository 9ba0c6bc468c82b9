"""tools/gpu_check.sh on the CPU, with a stand-in for the GPU machine's python:
the report is always left, names the step that failed, and pip never runs
against an index (nor at all when no wheels were carried)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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
  "-m pip "*) touch "$STUB_LOG.installed"; exit 0 ;;
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
                    STUB_CHECK="pass", LIMIT="30")
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


def test_packages_already_there_are_not_reinstalled(tmp_path):
    (tmp_path / "calls.log.installed").touch()
    rc, report, calls = _run(tmp_path, wheels=True)
    assert rc == 0 and not _pip_calls(calls)


def test_a_check_that_dies_before_writing_still_leaves_a_report(tmp_path):
    rc, report, _ = _run(tmp_path, wheels=True, STUB_CHECK="crash")
    assert rc == 139
    assert report["complete"] is False
    assert report["script"]["failed_step"] == "check"
    assert report["script"]["exit_status"] == 139
    assert "Segmentation fault" in report["script"]["log_tail"]


@pytest.mark.timeout(60)
def test_a_check_killed_at_the_limit_keeps_what_it_measured(tmp_path):
    rc, report, _ = _run(tmp_path, wheels=True, STUB_CHECK="hang", LIMIT="1")
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
    assert list(report)[:8] == ["complete", "running", "device", "torch", "python", "seconds",
                                "sdpa_kernels", "server"]
    for name in ("assets",) + gpu_check.SECTIONS:
        assert "error" not in report[name] and "skipped" not in report[name], name
    assert report["sdpa_kernels"]["decode"]["backend"] != "other"
    server = report["server"]
    assert server["cold_start_s"] > 0 and "ready in" in server["server_log_tail"]
    for n in (1, 2):
        row = server[f"interactive_{n}"]
        # Every utterance ended (spoken or refused), the background lane full all along.
        assert row["unfinished"] == 0 and row["admitted"] >= 1
        assert row["ttfa_p99_ms"] >= row["ttfa_p50_ms"] > 0
        assert all(q > 0 for q in row["background_queued"]), row
    assert not server["background"]["errors"]  # how many ended depends on the machine's load
    serving = report["serving"]
    assert serving["decode_step_ms"] and serving["cold_start_s"] >= serving["warmup_s"] > 0
    streams = report["streams"]["kv_256"]
    assert streams["max_realtime_streams"] == 4  # the CPU's limit is 10 s
    assert streams["streams_4"]["plan_shape"] == [4, 256] and streams["streams_4"]["audio_kept"] >= 0.9
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
    assert lap["audio_identical"] is True and lap["on_step_ms_p99"] >= lap["on_step_ms_p50"] > 0
    assert lap["deferred_audio_identical"] is True and lap["deferred_step_ms_p50"] > 0
    precision = report["vocoder_precision"]
    assert "tf32" not in precision and precision["bf16"]["snr_db_min"] >= 40  # tf32: CUDA only
    fid = report["fidelity"]
    assert fid["steps"] == 12 and fid["precision"] == "bf16"
    assert len(fid.get("hidden_rel_err_by_step", [])) == fid["steps_compared"]
    graphs = report["graphs"]["batch_2"]
    assert graphs["jobs_with_identical_codes"] == "2/2" and graphs["graph_shape"] == [2, 128]
