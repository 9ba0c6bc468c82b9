"""``python -m realtime [serve] [flags]`` and the ``chattts-realtime`` script.

Parses the configuration, sets up logging and runs ``Server.serve`` on the
event loop; the exit status says how it ended (``realtime.server.lifecycle``).
``python -m realtime normalize [--lang auto|en|zh] [TEXT]`` prints TEXT as
the model will read it (``realtime.normalize_command``).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from realtime.engine.cpu import omp_env
from realtime.server.config import ConfigError, load_config
from realtime.server.lifecycle import EXIT_STARTUP_FAILED, run
from realtime.server.logs import setup_logging

log = logging.getLogger("realtime")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["normalize"]:  # text only: no wait policy, no probe's 0.2 s
        from realtime.normalize_command import main as normalize

        return normalize(argv[1:])
    # Before anything loads torch: libgomp reads its wait policy once, at load
    # (realtime/engine/cpu/omp_env.py).
    omp_env.apply_defaults()
    try:
        _, config = load_config(argv)
    except ConfigError as exc:
        print(f"chattts-realtime: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILED
    setup_logging(config.log_level, config.log_json)
    log.info("configuration: %s", config.summary())
    from realtime.server.app import Server

    return run(Server(config).serve())


if __name__ == "__main__":
    sys.exit(main())
