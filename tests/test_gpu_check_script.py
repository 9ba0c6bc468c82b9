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
