"""``python -m realtime normalize [--lang auto|en|zh] [TEXT]``: the text as the model reads it.

Prints one segment a line, exactly the text the model will read for it, by
the path serving takes: the server's sentence splitter, then
``TextNormalizer`` sentence by sentence with the previous sentence's
language as the hint (``realtime.server.stream.intake.read_sentences``). TEXT is read from
stdin when it is ``-`` or absent. Sentences that read as nothing (an
unsupported script, symbols only) are no segment: each is named on stderr
as ``unspoken: <sentence>``, as ``done.unspoken`` lists it; so is each run
of a spoken sentence that the model cannot say ("안녕" in "朋友们안녕").

``--lang`` is the language hint of the first sentence (``auto``: none, as
serving starts): it decides only sentences without letters of either script
("12:00", "2002-01-28"); a sentence with letters decides for itself.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from realtime.server.stream.intake import SentenceReader, read_sentences
from realtime.speech.sentences import DEFAULT_MAX_CHARS, split_sentences


def spoken_lines(reader: SentenceReader, text: str, lang: str | None = None
                 ) -> tuple[list[str], list[str]]:
    """(segments as the model reads them, what was not spoken), in order."""
    readings, _ = read_sentences(reader, split_sentences(text, max_chars=DEFAULT_MAX_CHARS), lang)
    spoken = [r.spoken.text for r in readings if not r.unspoken]
    return spoken, [run for r in readings for run in ((r.text,) if r.unspoken else r.spoken.unvoiced)]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chattts-realtime normalize",
        description="Print TEXT as the model will read it, one segment a line "
                    "(the server's splitter, then its normalizer).")
    parser.add_argument("--lang", choices=("auto", "en", "zh"), default="auto",
                        help="language of a first sentence without letters of either "
                             "script (later ones follow their neighbours) [auto]")
    parser.add_argument("text", nargs="?", default="-", metavar="TEXT",
                        help="the text; '-' or absent: read stdin")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format="%(levelname)s %(name)s: %(message)s")
    if args.text == "-":
        text = sys.stdin.buffer.read().decode("utf-8", errors="replace")
    else:
        text = args.text
    from realtime.engine.text.spoken import TextNormalizer  # imports torch: seconds

    spoken, unspoken = spoken_lines(TextNormalizer(), text, None if args.lang == "auto" else args.lang)
    out = sys.stdout.buffer
    for line in spoken:
        out.write(line.encode("utf-8") + b"\n")
    out.flush()
    for sentence in unspoken:
        sys.stderr.buffer.write(f"unspoken: {sentence}\n".encode())
    sys.stderr.flush()
    return 0
