"""Mutation testing, one module group at a time: ``make mutate`` (or
``python -m tools.mutate [TARGET ...] [--max-children N]``).

For each target, a copy of the working tree goes to ``.mutate/TARGET/``
(ignored by git), a ``[tool.mutmut]`` section naming the target's files and
its fast test subset is appended to that copy's ``pyproject.toml``, and
mutmut runs there: it mutates only those files, first runs the subset once to
learn which tests reach which function, then runs each mutant against those
tests (``-x``: the first failure kills it). Log calls are left alone. torch
runs on one thread: forked test processes hang in an OpenMP pool started
before the fork. ``REALTIME_MUTATION`` is set there: property tests draw a
fifth of their examples (tests/mutation_budget.py), since the slowest reruns
once per surviving mutant. pytest's own timeout is off there: mutmut times
each mutant out itself (from the first pass's durations), and on a loaded
machine the first pass alone ran past 300 s.

At the end each target's counts and surviving mutants are written to
``.mutate/TARGET.json`` and ``.mutate/TARGET-survivors.txt`` (with
``mutmut show`` diffs; ``--report`` writes them again from a run already
there, one cut short too; ``--resume`` goes on with one cut short, mutmut
keeping every verdict it recorded); docs/testing.md records the scores and
explains each survivor. Not part of CI: it takes tens of minutes per target on two cores.

Thread: a command-line tool.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".mutate"

# target -> (files to mutate, fast tests that cover them)
TARGETS: dict[str, tuple[list[str], list[str]]] = {
    "sampling": (["realtime/engine/sampling.py"], ["tests/test_runtime_sampling.py"]),
    "vocoder": (["realtime/engine/vocoder/stream.py"], ["tests/test_runtime_vocoder.py"]),
    "runner": (["realtime/engine/runner.py"],
               ["tests/test_runtime_runner.py", "tests/test_runtime_decoder.py",
                "tests/test_runtime_runner_audio.py", "tests/test_runtime_capture.py",
                "tests/test_runtime_budgets.py"]),
    "model": (["realtime/engine/model/gpt.py", "realtime/engine/model/matrix.py"],
              ["tests/test_runtime_model.py", "tests/test_runtime_decoder.py",
               "tests/test_runtime_capture.py", "tests/test_runtime_runner.py"]),
    "graphs": (["realtime/engine/cuda/graphs.py"],
               ["tests/test_runtime_capture.py", "tests/test_runtime_gpu.py"]),
    "worker": (["realtime/server/work/worker.py"], ["tests/test_worker.py"]),
    # The ONNX Runtime CPU engine: its graph, row map, KV binding, model and the engine choice.
    "ort": (["realtime/engine/ort/*", "realtime/engine/cpu/engine.py"],
            ["tests/test_ort_rows.py", "tests/test_ort_decoder.py", "tests/test_ort_graph.py",
             "tests/test_cpu_engine.py"]),
    "utterance": (["realtime/server/stream/utterance.py"],
                  ["tests/test_server_session.py", "tests/test_server_errors.py",
                   "tests/test_server_backpressure.py"]),
    "scheduler": (["scheduler/*"],
                  ["tests/test_scheduler_core.py", "tests/test_scheduler_cost.py",
                   "tests/test_scheduler_machine.py", "tests/test_scheduler_playout.py",
                   "tests/test_scheduler_ranking.py", "tests/test_scheduler_edges.py",
                   "tests/test_scheduler_capacity.py", "tests/test_scheduler_refine.py",
                   "tests/test_scheduler_details.py", "tests/test_scheduler_strict.py",
                   "tests/test_scheduler_stream_ends.py", "tests/test_scheduler_batching.py",
                   "tests/test_scheduler_fill.py", "tests/test_scheduler_invariants.py",
                   "tests/test_scheduler_load.py"]),
    # The thresholds alone, with the tests that pin them at their edges: a run
    # that fits where the whole scheduler's does not (docs/testing.md).
    "scheduler-config": (["scheduler/config.py"],
                         ["tests/test_scheduler_edges.py", "tests/test_scheduler_core.py"]),
    "pcm": (["protocol/pcm.py"], ["tests/test_protocol_pcm.py", "tests/test_protocol_pcm_tables.py"]),
    # The wait policy chosen before torch loads (the probe of the CPUs, the fallback load).
    "wait-policy": (["realtime/engine/cpu/omp_env.py"], ["tests/test_runtime_threads.py"]),
    "speech": (["realtime/speech/en/context.py", "realtime/speech/en/dates.py",
                "realtime/speech/en/shorthand.py", "realtime/speech/en/fractions.py",
                "realtime/speech/en/names.py", "realtime/speech/en/contractions.py",
                "realtime/speech/en/symbols.py", "realtime/speech/en/references.py",
                "realtime/speech/en/goods.py"],
               ["tests/test_speech_en_context.py", "tests/test_speech_en.py",
                "tests/test_speech_en_edges.py", "tests/test_speech_en_categories.py",
                "tests/test_speech_en_everyday.py", "tests/test_speech_en_word_beside.py",
                "tests/test_speech_en_newswire.py", "tests/test_speech_en_maths.py",
                "tests/test_speech_en_registers.py"]),
    "speech-categories": (["realtime/speech/en/web.py", "realtime/speech/en/ids.py",
                           "realtime/speech/en/address.py", "realtime/speech/en/money.py"],
                          ["tests/test_speech_en_categories.py", "tests/test_speech_en_identifiers.py",
                           "tests/test_speech_en.py", "tests/test_speech_en_context.py",
                           "tests/test_speech_en_edges.py", "tests/test_speech_en_everyday.py",
                           "tests/test_speech_en_word_beside.py", "tests/test_speech_en_newswire.py",
                           "tests/test_speech_en_registers.py", "tests/test_speech_en_maths.py"]),
    # The streamed text's sentence splitter: where a sentence ends, and that it waits for
    # the look-ahead it needs (the chunking tests).
    "sentences": (["realtime/speech/sentences.py"], ["tests/test_text.py", "tests/test_speech_en_everyday.py",
                                                    "tests/test_speech_hostile.py"]),
    "words": (["realtime/server/stream/word_timing.py", "realtime/speech/timing.py",
               "realtime/speech/word_layout.py", "protocol/words.py"],
              ["tests/test_speech_timing.py", "tests/test_word_timer.py", "tests/test_word_timer_rate.py",
               "tests/test_word_plan_cache.py", "tests/test_words_json.py", "tests/test_protocol_words.py",
               "tests/test_word_delivery.py"]),
}

_STATUS = re.compile(r"^\s*(\S+): (.+)$")
# Log calls are not behaviour: their first line is not mutated (a message
# spread over more lines still is, and those survivors count as equivalent).
LOG_CALL = r"\blog\.(debug|info|warning|error|exception)\("


def _copy_tree(dest: Path) -> None:
    """The working tree as git sees it (tracked and new files, not ignored ones)."""
    if dest.exists():
        shutil.rmtree(dest)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                           check=True, capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _configure(dest: Path, files: list[str], tests: list[str]) -> None:
    section = f"""

[tool.mutmut]
source_paths = ["realtime", "scheduler", "protocol"]
only_mutate = {json.dumps(files)}
pytest_add_cli_args_test_selection = {json.dumps(tests)}
pytest_add_cli_args = ["-x", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--timeout=0"]
also_copy = ["tools/", "bench/", "clients/"]
use_git_change_detection = false
do_not_mutate_patterns = {json.dumps([LOG_CALL])}
"""
    with open(dest / "pyproject.toml", "a", encoding="utf-8") as f:
        f.write(section)


def _results(dest: Path, mutmut: str) -> dict[str, str]:
    out = subprocess.run([mutmut, "results", "--all", "true"], cwd=dest, capture_output=True,
                         text=True).stdout
    statuses = {}
    for line in out.splitlines():
        m = _STATUS.match(line)
        if m and "mutmut_" in m.group(1):
            statuses[m.group(1)] = m.group(2).strip()
    return statuses


def run_target(name: str, max_children: int, resume: bool = False) -> dict:
    files, tests = TARGETS[name]
    dest = WORK / name
    if resume and (dest / "mutants").is_dir():
        # mutmut lets every recorded verdict stand and runs only the mutants
        # left; the tree stays as copied when the run began.
        print(f"{name}: resuming the run in {dest}")
    else:
        _copy_tree(dest)
        _configure(dest, files, tests)
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", CI="1", REALTIME_MUTATION="1")
    start = time.monotonic()
    with open(WORK / f"{name}.log", "a" if resume else "w", encoding="utf-8") as log_file:
        subprocess.run([mutmut, "run", "--max-children", str(max_children)], cwd=dest, env=env,
                       stdout=log_file, stderr=subprocess.STDOUT, check=False)
    return report(name, (time.monotonic() - start) / 60)


def report(name: str, minutes: float | None = None) -> dict:
    """Counts and survivors of ``.mutate/NAME`` as mutmut left it (finished or not)."""
    files, tests = TARGETS[name]
    dest = WORK / name
    mutmut = str(Path(sys.executable).with_name("mutmut"))
    statuses = _results(dest, mutmut)
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    killed = counts.get("killed", 0) + counts.get("timeout", 0)
    tested = killed + counts.get("survived", 0)
    summary = dict(target=name, files=files, tests=tests, counts=counts,
                  score=round(killed / tested, 4) if tested else None,
                  minutes=None if minutes is None else round(minutes, 1))
    survivors = sorted(m for m, s in statuses.items() if s in ("survived", "no tests"))
    with open(WORK / f"{name}-survivors.txt", "w", encoding="utf-8") as f:
        for mutant in survivors:
            diff = subprocess.run([mutmut, "show", mutant], cwd=dest, capture_output=True,
                                  text=True).stdout
            f.write(f"## {mutant} ({statuses[mutant]})\n{diff}\n")
    (WORK / f"{name}.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"module groups (default: all of {', '.join(TARGETS)})")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--resume", action="store_true",
                        help="go on with a run under .mutate/ that was cut short (its tree as copied)")
    parser.add_argument("--report", action="store_true",
                        help="only write the reports of runs already under .mutate/ (one cut short too)")
    args = parser.parse_args(argv)
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown targets: {', '.join(sorted(unknown))}")
    WORK.mkdir(exist_ok=True)
    for name in args.targets or list(TARGETS):
        done = report(name) if args.report else run_target(name, args.max_children, args.resume)
        print(f"{name}: score {done['score']} {done['counts']} in {done['minutes']} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
