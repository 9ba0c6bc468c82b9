"""``python -m realtime normalize``: one segment a line, as the model will read it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import ROOT

from realtime.normalize_command import spoken_lines


@pytest.fixture(scope="module")
def normalizer():
    from realtime.engine.text.spoken import TextNormalizer

    return TextNormalizer()


def normalize(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "realtime", "normalize", *args], cwd=ROOT,
                          env=env, input=None if stdin is None else stdin.encode(),
                          capture_output=True, timeout=300, check=False)


def test_text_from_the_command_line_one_segment_a_line(normalizer):
    text = ("It costs $5. Привет мир. 1. Open the app.\n2. Tap start. 12:00. "
            "我有3.5元。12:00。")
    got = normalize(text)
    assert got.returncode == 0, got.stderr.decode()
    lines = got.stdout.decode().splitlines()
    assert lines == spoken_lines(normalizer, text)[0]  # the serving path, in process
    assert lines[0] == "It costs five dollars."
    assert lines[1].startswith("one") and lines[1].endswith("Open the app.")
    assert lines[2].startswith("two") and lines[2].endswith("Tap start.")
    assert lines[3].startswith("twelve") and lines[4] == "我有三点五元。"
    assert lines[5] == "十二点。"  # a sentence without letters follows its Chinese neighbour
    assert len(lines) == 6 and "unspoken: Привет мир." in got.stderr.decode()


def test_text_from_stdin_and_the_language_hint():
    got = normalize("--lang", "zh", stdin="12:00\n")
    assert got.returncode == 0, got.stderr.decode()
    assert got.stdout.decode() == "十二点\n"
    auto = normalize(stdin="12:00\n")  # TEXT absent: stdin too
    assert auto.stdout.decode().startswith("twelve")


def test_a_bad_language_is_a_usage_error():
    got = normalize("--lang", "fr", "hi")
    assert got.returncode == 2 and b"--lang" in got.stderr
