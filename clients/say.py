"""`python -m clients.say "text" -o out.wav`: speak text through the server.

Reads the text from the argument or, with none (or "-"), from stdin. Writes a WAV with
`-o`, or raw PCM in the requested format to stdout with `--stream` (pipe it to a player,
e.g. `| aplay -f S16_LE -r 24000 -c 1`). A timing summary goes to stderr, and with it the
text as the model read it where that differs from the input (numbers, symbols) and the
sentences it could not speak. `--timestamps` also prints each word's timing as it comes.
Exit status: 0 done, 1 server error, 2 usage, 3 cancelled/connection lost.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from clients.client import DEFAULT_URL, RealtimeClient
from clients.errors import TTSError
from clients.events import Words
from clients.utterance import AudioChunk
from clients.wav import to_s16, write_wav
from protocol import RefineLevels, Segment

log = logging.getLogger(__name__)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m clients.say", description=__doc__.splitlines()[0])
    p.add_argument("text", nargs="?", default=None, help="text to speak; '-' or none: stdin")
    p.add_argument("-o", "--output", help="write a WAV file here")
    p.add_argument("--stream", action="store_true", help="write raw PCM to stdout as it arrives")
    p.add_argument("--url", default=DEFAULT_URL, help=f"server URL (default {DEFAULT_URL})")
    p.add_argument("--token", default=None, help="bearer token, if the server wants one")
    p.add_argument("--voice", default=None, help="voice name, seed:<int> or encoded speaker")
    p.add_argument("--lane", default="interactive", choices=("interactive", "background"))
    p.add_argument("--deadline-ms", type=int, default=None, help="background lane deadline")
    p.add_argument("--format", default="pcm_s16le",
                   choices=("pcm_s16le", "pcm_f32le", "pcm_mulaw"))
    p.add_argument("--rate", type=int, default=None, help="output sample rate (Hz)")
    p.add_argument("--frame-ms", type=int, default=100)
    p.add_argument("--chunking", default="sentence", choices=("sentence", "token"))
    p.add_argument("--speed", type=int, default=None, choices=range(10), metavar="0-9",
                   help="ChatTTS speed level [speed_N] (server default 5)")
    p.add_argument("--refine", nargs="?", const=True, default=None, type=refine_arg,
                   metavar="PROMPT|oral=N,laugh=N,break=N",
                   help="run ChatTTS's refine-text pass first: alone, the server's default; "
                        "levels as oral=2,laugh=0,break=6; or a prompt like [oral_2][break_6]")
    p.add_argument("--timestamps", action="store_true",
                   help="print each word's start and end (ms into the audio) on stderr")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")
    args = p.parse_args(argv)
    if not args.output and not args.stream:
        p.error("give -o FILE.wav or --stream")
    return args


def refine_arg(text: str) -> str | RefineLevels:
    """``--refine``'s value: ``oral=2,laugh=0,break=6`` (any subset) as
    levels, anything else as a refine prompt (the server validates both)."""
    if "=" not in text:
        return text
    levels: dict[str, int] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        if name.strip() not in ("oral", "laugh", "break") or not value.strip().isdigit():
            raise argparse.ArgumentTypeError(f"expected oral=N,laugh=N,break=N, got {text!r}")
        levels[name.strip()] = int(value)
    return RefineLevels(oral=levels.get("oral"), laugh=levels.get("laugh"), break_=levels.get("break"))


async def run(args: argparse.Namespace, text: str) -> int:
    out = sys.stdout.buffer if args.stream else None
    parts: list[bytes] = []
    async with RealtimeClient(args.url, token=args.token) as client:
        if client.weights_warning and not args.quiet:
            print(f"warning: {client.weights_warning}", file=sys.stderr)
        utt = await client.speak(text, voice=args.voice, lane=args.lane, format=args.format,
                                 sample_rate=args.rate, frame_ms=args.frame_ms,
                                 chunking=args.chunking, deadline_ms=args.deadline_ms,
                                 timestamps=args.timestamps, speed=args.speed,
                                 refine=args.refine)
        try:
            async for item in utt:
                if not isinstance(item, AudioChunk):
                    report(item, args.quiet)
                    continue
                if out is not None:
                    out.write(item.pcm)
                    out.flush()
                if args.output:
                    parts.append(item.pcm)
            done = await utt.result()
        except TTSError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1 if exc.code else 3
    if args.output:
        write_wav(args.output, to_s16(b"".join(parts), utt.format), utt.sample_rate)
    if not args.quiet:
        for sentence in utt.unspoken:
            print(f"not spoken (nothing to read): {sentence}", file=sys.stderr)
        t = done.timing
        first = "-" if utt.first_audio_ms is None else f"{utt.first_audio_ms:.0f}"
        server_first = "-" if t.first_audio_ms is None else f"{t.first_audio_ms:.0f}"
        rtf = "-" if t.rtf is None else f"{t.rtf:.3f}"
        print(f"first audio {first} ms (server {server_first} ms), "
              f"audio {done.audio_ms / 1000:.2f} s in {done.segments} segment(s), "
              f"total {t.total_ms:.0f} ms, RTF {rtf}, connect {client.connect_ms:.0f} ms"
              + (f" -> {args.output}" if args.output else ""), file=sys.stderr)
    return 0


def report(item: object, quiet: bool) -> None:
    """Word timings (asked for with --timestamps) and a segment's spoken text."""
    if isinstance(item, Words):
        for w in item.words:
            origin = f"  ({w.original})" if w.original is not None else ""
            print(f"{w.start_ms:9.1f} {w.end_ms:9.1f}  {w.word}{origin}", file=sys.stderr)
    elif isinstance(item, Segment) and not quiet:
        spoken = item.spoken
        if spoken is not None and spoken != item.text:
            print(f"segment {item.index} read as: {spoken}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    text = args.text if args.text not in (None, "-") else sys.stdin.read()
    if not text.strip():
        print("error: no text", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run(args, text))
    except TTSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3
    except OSError as exc:
        print(f"error: cannot reach {args.url}: {exc}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())
