"""``python -m realtime [serve] [flags]`` and the ``chattts-realtime`` script.

The first SIGTERM/SIGINT drains (see ``Server.drain``); a second one forces
the process out at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence

from realtime.config import ConfigError, ServerConfig, load_config
from realtime.logs import setup_logging

log = logging.getLogger("realtime")

EXIT_STARTUP_FAILED = 2


async def serve_until_signalled(config: ServerConfig) -> int:
    """Run the server until a signal drains it; return the exit status."""
    from realtime.server import Server

    server = Server(config)
    await server.start()
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    signals = {"count": 0}

    def on_signal(signum: int) -> None:
        signals["count"] += 1
        if signals["count"] == 1:
            log.info("%s: draining (send it again to exit at once)", signal.Signals(signum).name)
            stop.set()
        else:
            log.warning("second signal: exiting now")
            os._exit(1)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)

    ready = asyncio.ensure_future(server.wait_ready())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({ready, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if ready.done() and ready.exception() is not None:
        log.error("start-up failed: %s", server.startup_error)
        stopping.cancel()
        await server.close()
        return EXIT_STARTUP_FAILED
    await stopping
    await server.drain()
    if not ready.done():
        ready.cancel()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        _, config = load_config(argv)
    except ConfigError as exc:
        print(f"chattts-realtime: {exc}", file=sys.stderr)
        return EXIT_STARTUP_FAILED
    setup_logging(config.log_level, config.log_json)
    log.info("configuration: %s", config.summary())
    try:
        import uvloop
    except ImportError:  # pragma: no cover - Windows
        return asyncio.run(serve_until_signalled(config))
    return uvloop.run(serve_until_signalled(config))


if __name__ == "__main__":
    sys.exit(main())
