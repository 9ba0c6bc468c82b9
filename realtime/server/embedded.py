"""Run a Server on its own event loop in a background thread.

For tests and benches that need a server living longer than one event loop
(a pytest session sharing one tiny-random model) or beside a client that
owns the main loop. The server is a normal ``Server`` listening on 127.0.0.1.

    with ServerThread(ServerConfig(port=0, weights="tone")) as st:
        url = st.url  # ws://127.0.0.1:PORT/v1/stream

Thread: ``start``/``stop`` from any one thread; ``call`` runs a coroutine
function on the server's loop and returns its result.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from realtime.engine.api import Runner
from realtime.server.app import Server
from realtime.server.config import ServerConfig
from realtime.server.lifecycle import run

T = TypeVar("T")


class ServerThread:
    def __init__(self, config: ServerConfig, runner_factory: Callable[[], Runner] | None = None,
                 **server_kwargs: Any) -> None:
        self.config = config
        self._runner_factory = runner_factory
        self._server_kwargs = server_kwargs
        self.server: Server | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._started: Future[None] = Future()
        self._stop: asyncio.Event | None = None

    def start(self, timeout: float = 120.0) -> ServerThread:
        """Start and wait until the model is ready; raises its start-up error."""
        self._thread = threading.Thread(target=self._main, name="server-loop", daemon=True)
        self._thread.start()
        self._started.result(timeout)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self.loop is not None and self._stop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.port

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v1/stream"

    def call(self, fn: Callable[[], Coroutine[Any, Any, T]], timeout: float = 30.0) -> T:
        """Run ``fn()`` on the server's loop (e.g. to drain it) and wait."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(fn(), self.loop).result(timeout)

    def _main(self) -> None:
        run(self._serve())

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        try:
            self.server = Server(self.config, self._runner_factory, **self._server_kwargs)
            await self.server.start()
            await self.server.wait_ready()
        except BaseException as exc:  # noqa: BLE001 - handed to the thread waiting in start()
            self._started.set_exception(exc)
            if self.server is not None:
                await self.server.close()
            return
        self._started.set_result(None)
        await self._stop.wait()
        await self.server.close()
