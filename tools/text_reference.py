"""Our readings beside WeTextProcessing's, case by case: the measurement behind
docs/text.md's library choice.

Runs every case of tests/test_speech_{en,zh}.py through our normalizer and
through WeTextProcessing's English and Chinese TN grammars, and prints, per
language, how many readings agree exactly (spaces and punctuation ignored),
each side's median and p99 per sentence, WeTextProcessing's load time, and
the cases where they differ. WeTextProcessing is no dependency of the
project (it needs pynini, ~700 MB installed); put it on the path first:

    pip install --target /tmp/wetext wetextprocessing==1.2.0
    PYTHONPATH=/tmp/wetext:. python tools/text_reference.py

Thread: a single thread (a command-line tool).
"""

from __future__ import annotations

import importlib.util
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_LOOSE = re.compile(r"[\s,.，。、!?！？'\-]+")


def _cases(lang: str) -> list[tuple[str, str]]:
    path = ROOT / "tests" / f"test_speech_{lang}.py"
    spec = importlib.util.spec_from_file_location(f"cases_{lang}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


def _timed(fn, texts: list[str]) -> tuple[list[str], list[float]]:
    outs, ms = [], []
    for text in texts:
        t0 = time.perf_counter()
        outs.append(fn(text))
        ms.append((time.perf_counter() - t0) * 1000)
    return outs, ms


def _p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from realtime.speech.normalize import normalize
    try:
        t0 = time.perf_counter()
        from tn.chinese.normalizer import Normalizer as ZhNormalizer
        from tn.english.normalizer import Normalizer as EnNormalizer
        theirs = {"zh": ZhNormalizer(), "en": EnNormalizer()}
        load_s = time.perf_counter() - t0
    except ImportError:
        print("WeTextProcessing is not importable; see this file's docstring", file=sys.stderr)
        return 2
    print(f"WeTextProcessing load (both grammars): {load_s:.2f} s")
    for lang in ("en", "zh"):
        cases = _cases(lang)
        texts = [text for text, _ in cases]
        ours, our_ms = _timed(normalize, texts)
        wetext, their_ms = _timed(theirs[lang].normalize, texts)
        same = [i for i, (a, b) in enumerate(zip(ours, wetext, strict=True))
                if _LOOSE.sub("", a).lower() == _LOOSE.sub("", b).lower()]
        print(f"\n{lang}: {len(same)}/{len(cases)} readings agree; per sentence, ours median "
              f"{statistics.median(our_ms):.3f} ms p99 {_p99(our_ms):.3f} ms, WeTextProcessing median "
              f"{statistics.median(their_ms):.2f} ms p99 {_p99(their_ms):.2f} ms")
        for i, text in enumerate(texts):
            if i not in same:
                print(f"  {text!r}\n    ours:   {ours[i]!r}\n    wetext: {wetext[i]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
