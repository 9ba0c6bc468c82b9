"""The house rules of docs/architecture.md, checked: floors, no import circles,
nothing unshipped imported by shipped code, small files, runnable benches."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ("protocol", "scheduler", "realtime", "clients")
UNSHIPPED = {"bench", "tools", "tests", "pytest", "hypothesis", "psutil", "conftest"}
# What each floor may import from the project (its own package is always
# allowed). Inside realtime/, from the bottom: speech (text, pure) and audio
# (samples to bytes, pure), the engine (the model: text in, samples out; it
# knows no wire, so the server resolves the wire's voice strings into the
# engine's typed voices), the server; the package's entry points (__main__, normalize_command) on top.
FLOORS = {
    "protocol": set(),
    "scheduler": set(),
    "realtime.speech": set(),
    "realtime.audio": {"protocol"},
    "realtime.engine": {"scheduler", "realtime.speech"},
    "realtime.server": {"protocol", "scheduler", "realtime.speech", "realtime.audio", "realtime.engine"},
    "realtime": {"protocol", "scheduler", "realtime"},
    "clients": {"protocol"},
}
# No folder of realtime/ holds more flat files than this: past it, a floor
# splits into rooms (server/http, server/stream, ...).
MAX_FLAT_FILES = 22
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_imports(path: Path) -> set[str]:
    """Every module ``path`` names in an import, wherever the statement sits:
    module level, inside functions, under ``if TYPE_CHECKING:``, in ``try``.
    A deferred or type-only import is still a dependency (a circle broken by
    deferring is a circle). ``from p import m`` of a submodule ``m`` names
    ``p.m`` (a package's own submodule import is no circle through its
    ``__init__``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                base = ROOT / sub.replace(".", "/")
                is_module = base.with_suffix(".py").exists() or (base / "__init__.py").exists()
                found.add(sub if is_module else node.module)
    return found


def shipped_modules() -> dict[str, Path]:
    return {module_name(p): p for package in SHIPPED for p in (ROOT / package).rglob("*.py")}


def project_imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Each module's imports of other project modules (names resolved to modules)."""
    graph = {}
    for name, path in modules.items():
        targets = set()
        for imported in all_imports(path):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def test_the_walk_sees_the_packages():
    modules = shipped_modules()
    assert {"protocol.stream", "scheduler.book", "realtime.server.app", "clients.client"} <= set(modules)
    graph = project_imports(modules)
    assert "realtime.server.stream.session" in graph["realtime.server.app"]
    # deferred imports count: the server imports torch's runner builder inside a function
    assert any(m.startswith("realtime.engine") for m in graph["realtime.server.app"])


def test_every_folder_of_realtime_says_what_its_floor_is_and_stays_small():
    for folder in [ROOT / "realtime", *(p for p in (ROOT / "realtime").rglob("*")
                                        if p.is_dir() and p.name != "__pycache__")]:
        flat = list(folder.glob("*.py"))
        assert len(flat) <= MAX_FLAT_FILES, (folder, len(flat))
        if folder != ROOT / "realtime" and flat:
            init = folder / "__init__.py"
            assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), folder


def test_the_audio_floor_and_the_engine_agree_on_the_models_rate():
    from realtime.audio.framer import SOURCE_RATE
    from realtime.engine.api import SAMPLE_RATE
    assert SOURCE_RATE == SAMPLE_RATE == 24000


def test_the_walk_counts_deferred_and_type_only_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a.b\n"
                      "def f():\n    import c\n    from d import e\n", encoding="utf-8")
    assert {"a.b", "c", "d"} <= all_imports(module)


def test_no_import_circle():
    graph = project_imports(shipped_modules())
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                walk(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            walk(node, [node])


def _floor(module: str) -> str:
    return next(f for f in sorted(FLOORS, key=len, reverse=True)
                if module == f or module.startswith(f + "."))


def test_each_floor_imports_only_what_is_below_it():
    problems = []
    for name, targets in project_imports(shipped_modules()).items():
        floor = _floor(name)
        allowed = FLOORS[floor] | {floor}
        for target in targets:
            if not any(target == a or target.startswith(a + ".") for a in allowed):
                problems.append(f"{name} imports {target}")
    assert not problems, problems


def test_shipped_code_imports_nothing_unshipped():
    problems = [f"{name} imports {imp}" for name, path in shipped_modules().items()
                for imp in all_imports(path) if imp.split(".")[0] in UNSHIPPED]
    assert not problems, problems


@pytest.mark.parametrize("package", ["realtime", "scheduler", "protocol"])
def test_files_stay_readable_in_one_sitting(package):
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / package).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, long


def test_every_bench_starts_in_a_fresh_interpreter():
    # Each in its own process: an import-order mistake (ChatTTS before the
    # torchaudio stand-in) only shows in a fresh interpreter.
    from bench.__main__ import BENCHES

    procs = {name: subprocess.Popen([sys.executable, "-m", "bench", name, "--help"], cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
             for name in BENCHES}
    failed = {}
    for name, proc in procs.items():
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0 or b"usage" not in out:
            failed[name] = out.decode(errors="replace")[-800:]
    assert not failed, failed


def test_the_benches_import_nothing_of_tools():
    # tools/ (the GPU check, mutation testing) stands on bench/'s harness; the
    # reverse would make the two one tangle again.
    problems = [f"{path.relative_to(ROOT)} imports {imp}" for path in sorted((ROOT / "bench").rglob("*.py"))
                for imp in all_imports(path) if imp.split(".")[0] == "tools"]
    assert not problems, problems
