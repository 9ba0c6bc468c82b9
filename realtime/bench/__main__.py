"""Dispatch: ``python -m realtime.bench`` or ``... runtime`` runs the runtime
benchmark, ``... server`` the server benchmark; other arguments pass through."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    target = "runtime"
    if args and not args[0].startswith("-"):
        target = args.pop(0)
    if target == "runtime":
        from realtime.bench.runtime import main as run
    elif target == "server":
        from realtime.bench.server import main as run
    else:
        print(f"unknown benchmark {target!r}: runtime or server", file=sys.stderr)
        return 2
    return run(args) or 0


if __name__ == "__main__":
    sys.exit(main())
