"""protocol/ and scheduler/ stay pure: no asyncio, websockets, uvloop or torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE_PACKAGES = ("protocol", "scheduler")
FORBIDDEN = {"asyncio", "websockets", "uvloop", "torch"}


def imported_roots(tree: ast.AST) -> set[str]:
    """Top-level package names a module imports, statically or by name."""
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
        elif (isinstance(node, ast.Call) and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
              and getattr(node.func, "attr", getattr(node.func, "id", None))
              in ("import_module", "__import__")):
            roots.add(node.args[0].value.split(".")[0])
    return roots


def pure_sources() -> list[Path]:
    return sorted(path for package in PURE_PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_the_walk_finds_the_protocol_modules():
    names = {path.name for path in pure_sources()}
    assert {"codec.py", "frames.py", "pcm.py", "messages.py"} <= names


@pytest.mark.parametrize("path", pure_sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_module_imports_nothing_forbidden(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    assert not imported_roots(tree) & FORBIDDEN


def test_the_checker_sees_every_import_form():
    source = ("import asyncio.events\nfrom torch import nn\nimport os, websockets as ws\n"
              "importlib.import_module('uvloop')\nfrom . import sibling\n")
    assert imported_roots(ast.parse(source)) == {"asyncio", "torch", "os", "websockets",
                                                 "uvloop"}


def test_importing_protocol_loads_none_of_them():
    code = ("import sys, protocol, protocol.schema; "
            f"print(sorted(m for m in {sorted(FORBIDDEN)!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"
