"""CPU thread settings: the OpenMP wait policy set before torch loads, intra-op threads, the CPU line."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from realtime.engine.cpu import info as cpu_info
from realtime.engine.cpu import omp_env
from realtime.engine.cpu import threads as cpu_threads


@pytest.fixture
def fresh_policy(monkeypatch):
    monkeypatch.setattr(omp_env, "source", "unset")
    monkeypatch.delenv(omp_env.WAIT_POLICY, raising=False)
    monkeypatch.delenv(omp_env.SPIN_COUNT, raising=False)


@pytest.mark.parametrize(("load", "cpus", "expected"), [
    (0.3, 2, {"GOMP_SPINCOUNT": "10000"}),
    (0.99, 2, {"GOMP_SPINCOUNT": "10000"}),
    (1.0, 2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    (2.8, 2, {"OMP_WAIT_POLICY": "PASSIVE"}),
    (3.0, 8, {"GOMP_SPINCOUNT": "10000"}),
    (None, 2, {"OMP_WAIT_POLICY": "PASSIVE"}),
])
def test_workers_spin_briefly_on_an_idle_machine_and_sleep_on_a_busy_one(load, cpus, expected):
    settings, why = omp_env.choose(load, cpus)
    assert settings == expected
    assert why.startswith("machine idle") == ("GOMP_SPINCOUNT" in expected)


@pytest.mark.parametrize(("busy", "load", "expected"), [
    (0.1, 1.8, {"GOMP_SPINCOUNT": "10000"}),  # the load average still counts work that ended
    (0.99, 1.8, {"GOMP_SPINCOUNT": "10000"}),
    (1.0, 0.1, {"OMP_WAIT_POLICY": "PASSIVE"}),  # work that began since the last minute
    (1.7, None, {"OMP_WAIT_POLICY": "PASSIVE"}),
])
def test_cpus_busy_just_now_decide_over_the_load_average(busy, load, expected):
    settings, why = omp_env.choose(load, 2, busy)
    assert settings == expected
    assert f"{busy:.2f} of 2 CPUs busy" in why
    assert why.startswith("machine idle") == ("GOMP_SPINCOUNT" in expected)


_STAT = ("cpu  {a} 0 0 {b} 0 0 0 0 0 0\n"
         "cpu0 {a0} 2 {s0} {i0} {w0} 3 4 {t0} 0 0\ncpu1 {a1} 0 0 {i1} 0 0 0 0 0 0\nintr 5 1\n")


def test_busy_cpus_from_proc_stat(tmp_path):
    path = tmp_path / "stat"
    path.write_text(_STAT.format(a=1, b=2, a0=100, s0=10, i0=1000, w0=5, t0=3, a1=50, i1=900))
    before = omp_env.cpu_ticks(str(path))
    # user, nice, system, irq, softirq and steal are busy, iowait idle; the total line skipped
    assert before == {0: (122, 1127), 1: (50, 950)}
    # cpu0: 15 of 20 ticks busy (5 of them stolen); cpu1: 0 of 10.
    path.write_text(_STAT.format(a=1, b=2, a0=110, s0=10, i0=1004, w0=6, t0=8, a1=50, i1=910))
    after = omp_env.cpu_ticks(str(path))
    assert omp_env.busy_between(before, after, {0, 1}) == pytest.approx(0.75)
    assert omp_env.busy_between(before, after, {1}) == 0.0  # only the process's own CPUs count
    assert omp_env.busy_between(before, before, {0, 1}) is None  # no tick passed: not known
    one = {0: (before[0][0] + 1, before[0][1] + 1)}
    assert omp_env.busy_between(before, one, {0}) == 1.0  # one tick is enough to know
    assert omp_env.cpu_ticks(str(tmp_path / "missing")) == {}
    assert omp_env.busy_cpus(0.01, str(tmp_path / "missing")) is None


def test_the_probe_reads_this_process_cpus(tmp_path, monkeypatch):
    path = tmp_path / "stat"
    path.write_text(_STAT.format(a=1, b=2, a0=100, s0=10, i0=1000, w0=5, t0=3, a1=50, i1=900))
    later = _STAT.format(a=1, b=2, a0=110, s0=10, i0=1000, w0=5, t0=3, a1=50, i1=910)
    monkeypatch.setattr(omp_env.time, "sleep", lambda s: path.write_text(later))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1} if pid == 0 else {0, 1})
    assert omp_env.busy_cpus(0.2, str(path)) == 0.0  # cpu0's work is another process's CPU


def test_the_reason_names_what_decided(monkeypatch):
    assert omp_env.choose(None, 2)[1] == "machine busy (load unknown): idle workers sleep"
    assert omp_env.choose(0.4, 2)[1] == "machine idle (load 0.40 on 2 CPUs): idle workers spin briefly"
    assert omp_env.choose(None, 2, 0.25)[1] == ("machine idle (0.25 of 2 CPUs busy over 0.2 s): "
                                                "idle workers spin briefly")
    assert "; 1-minute load 1.50)" in omp_env.choose(1.5, 2, 0.25)[1]


@pytest.mark.parametrize(("loads", "variable"), [((0.1, 9.0, 9.0), "GOMP_SPINCOUNT"),
                                                 ((5.0, 0.1, 0.1), "OMP_WAIT_POLICY")])
def test_without_the_probe_the_1_minute_load_decides(fresh_policy, monkeypatch, loads, variable):
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setattr(omp_env, "busy_cpus", lambda: None)  # no /proc/stat
    monkeypatch.setattr(os, "getloadavg", lambda: loads)
    monkeypatch.setattr(omp_env, "usable_cpus", lambda: 2)
    omp_env.apply_defaults()
    assert variable in os.environ and f"load {loads[0]:.2f} on 2 CPUs" in omp_env.describe()


def test_the_probe_sees_a_cpu_bound_process():
    cpus = len(os.sched_getaffinity(0))
    loop = "import time\nend = time.time() + 3\nwhile time.time() < end: pass"
    spinner = subprocess.Popen([sys.executable, "-c", loop])
    try:
        time.sleep(0.3)  # past the interpreter's start
        busy = omp_env.busy_cpus(0.5)
    finally:
        spinner.kill()
        spinner.wait()
    assert busy is not None and 0.6 <= busy <= cpus  # the spinner's CPU, whatever else runs
    settings, _ = omp_env.choose(0.0, 1, busy)  # on one CPU, that is a busy machine
    assert settings == {"OMP_WAIT_POLICY": "PASSIVE"}


@pytest.mark.parametrize(("load", "variable", "value"), [
    (5.0, "OMP_WAIT_POLICY", "PASSIVE"), (0.0, "GOMP_SPINCOUNT", "10000")])
def test_the_choice_is_set_when_torch_is_not_loaded_yet(fresh_policy, monkeypatch, load, variable, value):
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0))  # stale: the probe decides
    monkeypatch.setattr(omp_env, "busy_cpus", lambda: load)
    monkeypatch.setattr(omp_env, "usable_cpus", lambda: 2)
    omp_env.apply_defaults()
    assert os.environ[variable] == value and omp_env.source == "set"
    other = ({"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"} - {variable}).pop()
    assert other not in os.environ
    assert f"{variable}={value}" in omp_env.describe() and "set before torch loaded" in omp_env.describe()


def test_the_environment_wins(fresh_policy, monkeypatch):
    monkeypatch.setenv(omp_env.WAIT_POLICY, "ACTIVE")
    monkeypatch.delitem(sys.modules, "torch")
    omp_env.apply_defaults()
    assert os.environ[omp_env.WAIT_POLICY] == "ACTIVE" and omp_env.source == "inherited"
    assert omp_env.SPIN_COUNT not in os.environ


def test_a_spin_count_from_the_environment_wins_too(fresh_policy, monkeypatch):
    monkeypatch.setenv(omp_env.SPIN_COUNT, "500")
    monkeypatch.delitem(sys.modules, "torch")
    omp_env.apply_defaults()
    assert omp_env.source == "inherited" and omp_env.WAIT_POLICY not in os.environ
    assert omp_env.describe() == "GOMP_SPINCOUNT=500 (from the environment)"


def test_too_late_once_torch_is_loaded_and_said_so(fresh_policy):
    omp_env.apply_defaults()
    assert omp_env.WAIT_POLICY not in os.environ and omp_env.SPIN_COUNT not in os.environ
    assert omp_env.source == "late"
    assert "libgomp default" in omp_env.describe()


def test_the_server_entry_point_sets_it_before_torch():
    # `python -m realtime`'s main applies it first, before torch is loaded.
    # Which of the two it sets depends on the machine's load right now.
    code = ("import sys, os, contextlib, realtime.__main__ as m\n"
            "with contextlib.suppress(SystemExit):\n    m.main(['--no-such-flag'])\n"
            "print('torch' in sys.modules, os.environ.get('OMP_WAIT_POLICY'), "
            "os.environ.get('GOMP_SPINCOUNT'))")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=120).stdout.split()
    assert out in (["False", "PASSIVE", "None"], ["False", "None", "10000"])


def test_threads_requested_or_torch_count_capped_to_usable_cpus(monkeypatch, caplog):
    before = torch.get_num_threads()
    try:
        monkeypatch.setattr(omp_env, "usable_cpus", lambda: 3)
        torch.set_num_threads(1)  # what a host process (or a test fixture) chose stays
        assert cpu_threads.configure_threads(0) == 1 and torch.get_num_threads() == 1
        torch.set_num_threads(8)  # more than the CPUs: capped
        with caplog.at_level(logging.INFO, logger="realtime.engine.cpu.threads"):
            assert cpu_threads.configure_threads(0) == 3
        assert torch.get_num_threads() == 3 and "capped to 3 usable CPUs" in caplog.text
        assert cpu_threads.configure_threads(2) == 2 and torch.get_num_threads() == 2
        with pytest.raises(ValueError):
            cpu_threads.configure_threads(-1)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("text, cpus", [("max 100000", None), ("200000 100000", 2),
                                        ("150000 100000", 2), ("50000 100000", 1)])
def test_cgroup_cpu_quota(tmp_path, text, cpus):
    path = tmp_path / "cpu.max"
    path.write_text(text + "\n")
    assert omp_env.cpu_quota(str(path)) == cpus


def test_usable_cpus_follows_the_affinity_mask_and_the_quota(monkeypatch):
    assert omp_env.cpu_quota("/nonexistent/cpu.max") is None
    monkeypatch.setattr(omp_env, "cpu_quota", lambda: None)
    assert omp_env.usable_cpus() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(omp_env, "cpu_quota", lambda: 1)
    assert omp_env.usable_cpus() == 1


def test_cpu_line_names_kernel_level_and_limits(monkeypatch):
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    line = cpu_info.describe()
    assert f"torch kernels {torch.backends.cpu.get_cpu_capability()}" in line
    assert "limited by ONEDNN_MAX_CPU_ISA=AVX2" in line
    assert set(cpu_info.isa_flags()) <= set(cpu_info._FLAGS)


def test_importing_the_runtime_applies_nothing_the_entry_point_does(monkeypatch):
    env = {k: v for k, v in os.environ.items() if k not in (omp_env.WAIT_POLICY, omp_env.SPIN_COUNT)}
    code = ("import os, realtime.engine, realtime.server.app; "
            "print(os.environ.get('OMP_WAIT_POLICY'), os.environ.get('GOMP_SPINCOUNT'))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.split() == ["None", "None"]
    from realtime import __main__ as entry

    calls = []
    monkeypatch.setattr(omp_env, "apply_defaults", lambda: calls.append("omp"))
    with pytest.raises(SystemExit):  # argparse refuses the flag, after the policy is set
        entry.main(["--no-such-flag"])
    assert calls == ["omp"]
    assert entry.main(["normalize", "--lang", "en", "It's 5 pm."]) == 0
    assert calls == ["omp"]  # the text command runs no model: no policy, no probe


def test_beside_another_pool_torch_takes_one_thread(monkeypatch):
    monkeypatch.setattr(omp_env, "usable_cpus", lambda: 2)
    before = torch.get_num_threads()
    try:
        assert cpu_threads.configure_threads(2) == 2
        cpu_threads.leave_cores_to(2)
        assert torch.get_num_threads() == 1
        assert cpu_threads.configure_threads(2) == 2 and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(("env", "spin"), [
    ({"GOMP_SPINCOUNT": "10000"}, True), ({"OMP_WAIT_POLICY": "ACTIVE"}, True),
    ({"OMP_WAIT_POLICY": "PASSIVE"}, False), ({}, False), ({"OMP_WAIT_POLICY": "active"}, True),
    ({"OMP_WAIT_POLICY": "passive", "GOMP_SPINCOUNT": "10000"}, False)])  # libgomp ignores the case
def test_other_pools_spin_only_where_openmp_was_told_to(monkeypatch, env, spin):
    for name in (omp_env.WAIT_POLICY, omp_env.SPIN_COUNT):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert omp_env.spinning() is spin
