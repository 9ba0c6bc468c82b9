"""How often our readings agree with the public TN references, per category.

Reads the published test data of two libraries we do not control, from
checkouts given on the command line (nothing of theirs is kept in this
repository), runs every written form through our normalizer and prints,
per category, how many readings agree, then each disagreement:

- English: NeMo text processing's
  ``tests/nemo_text_processing/en/data_text_normalization/test_cases_<category>.txt``
  (``written~spoken`` a line);
- Chinese: WeTextProcessing's ``tn/chinese/test/data/<category>.txt``
  (``written => spoken`` a line), read with the hint "zh";
- English again: WeTextProcessing's ``tn/english/test/data/<category>.txt``
  (its conventions differ from NeMo's and ours on purpose in places: "negative
  twelve", "the fifth of january", "twelve point oh five dollars").

A reading agrees when the two are the same words: case, spaces,
punctuation and the word "and" are ignored (NeMo writes "one hundred and
twenty", "AM", "o'clock"; we write "one hundred twenty", "a m", "oclock"
after upstream's clean-up; WeTextProcessing writes half-width punctuation).
Ours is what the model reads (``TextNormalizer.spoken``, as
``python -m realtime normalize`` prints it).

    python -m tools.text_agreement --nemo NEMO_CHECKOUT --wetext WETEXT_CHECKOUT [--show]

Thread: a single thread (a command-line tool).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path

NEMO_DATA = "tests/nemo_text_processing/en/data_text_normalization"
NEMO_CATEGORIES = ("cardinal", "decimal", "money", "measure", "date", "time", "range", "telephone",
                   "electronic", "ordinal", "fraction", "address", "serial", "roman", "whitelist")
WETEXT_DATA = "tn/chinese/test/data"
WETEXT_CATEGORIES = ("number", "cardinal", "char", "date", "fraction", "math", "measure", "money",
                     "sport", "time", "whitelist", "normalizer")
# WeTextProcessing's processing options, not readings: 儿化 and filler removal,
# traditional to simplified, <oov> tags. Reported apart, not in the total.
WETEXT_OPTIONS = ("postprocessor", "preprocessor", "normalizer_tag_oov")
WETEXT_EN_DATA = "tn/english/test/data"
WETEXT_EN_CATEGORIES = ("cardinal", "date", "decimal", "electronic", "fraction", "measure", "money",
                        "normalizer", "ordinal", "range", "roman", "telephone", "time", "whitelist", "word")

_AND = re.compile(r"(?<![^\W\d_])and(?![^\W\d_])", re.IGNORECASE)
_LOOSE = re.compile(r"[\W_]+")


def same_words(ours: str, theirs: str) -> bool:
    return _loose(ours) == _loose(theirs)


def _loose(text: str) -> str:
    return _LOOSE.sub("", _AND.sub(" ", text.replace("'", ""))).lower()


def cases(path: Path, separator: str) -> Iterator[tuple[str, str]]:
    for line in path.read_text(encoding="utf-8").splitlines():
        written, sep, spoken = line.partition(separator)
        if sep and written.strip():
            yield written.strip(), spoken.strip()


def _measure(read, root: Path, data: str, categories: tuple[str, ...], pattern: str, separator: str,
             lang: str, show: bool) -> tuple[int, int]:
    """(agreed, total) over ``categories``; ``read(text, lang)`` is our reading."""
    agreed = total = 0
    for category in categories:
        path = root / data / pattern.format(category)
        if not path.exists():
            print(f"  {category}: no file {path}", file=sys.stderr)
            continue
        rows = list(cases(path, separator))
        ours = [read(w, lang) for w, _ in rows]
        misses = [(w, s, o) for (w, s), o in zip(rows, ours, strict=True) if not same_words(o, s)]
        agreed += len(rows) - len(misses)
        total += len(rows)
        print(f"  {category:<12} {len(rows) - len(misses):>3} / {len(rows):<3}"
              f" {100 * (len(rows) - len(misses)) / max(1, len(rows)):5.1f}%")
        if show:
            for written, theirs, ours in misses:
                print(f"      {written!r}\n        theirs: {theirs}\n        ours:   {ours}")
    return agreed, total


def _report(name: str, agreed: int, total: int) -> None:
    print(f"  {name:<12} {agreed:>3} / {total:<3} {100 * agreed / max(1, total):5.1f}%\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.text_agreement",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--nemo", type=Path, help="a NeMo-text-processing checkout")
    parser.add_argument("--wetext", type=Path, help="a WeTextProcessing checkout")
    parser.add_argument("--show", action="store_true", help="print every disagreement")
    args = parser.parse_args(argv)
    from realtime.engine.text.spoken import TextNormalizer  # imports ChatTTS: seconds

    normalizer = TextNormalizer()

    def read(text: str, lang: str) -> str:
        return normalizer.spoken(text, lang).text

    if args.nemo:
        print("English, against NeMo text processing's test data:")
        agreed, total = _measure(read, args.nemo, NEMO_DATA, NEMO_CATEGORIES, "test_cases_{}.txt", "~", "en",
                                 args.show)
        _report("all", agreed, total)
    if args.wetext:
        print("Chinese, against WeTextProcessing's test data:")
        agreed, total = _measure(read, args.wetext, WETEXT_DATA, WETEXT_CATEGORIES, "{}.txt", " => ", "zh",
                                 args.show)
        _report("all", agreed, total)
        print("  processing options (not readings, not in the total):")
        _measure(read, args.wetext, WETEXT_DATA, WETEXT_OPTIONS, "{}.txt", " => ", "zh", args.show)
        print("\nEnglish, against WeTextProcessing's English test data:")
        agreed, total = _measure(read, args.wetext, WETEXT_EN_DATA, WETEXT_EN_CATEGORIES, "{}.txt", " => ",
                                 "en", args.show)
        _report("all", agreed, total)
    if not (args.nemo or args.wetext):
        parser.error("give --nemo and/or --wetext")
    return 0


if __name__ == "__main__":
    sys.exit(main())
