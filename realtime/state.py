"""What the server is, as clients, probes and sessions see it.

``ServiceState`` holds the lifecycle (warming up, ready, draining, failed to
start) and what the loaded model offers (the ``hello`` every connection gets,
the ``Offer`` that validates client messages, the voices). The server writes
it; HTTP routes and sessions read it.

Thread: event loop only.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import Hello, Offer


@dataclass
class ServiceState:
    ready: bool = False  # the model is loaded and warm
    draining: bool = False  # shutting down: no new connections or utterances
    # Why the server cannot serve: the type of the exception that failed the
    # start-up or broke the device (no paths, no text: /readyz shows it).
    failure: str | None = None
    hello: Hello | None = None
    offer: Offer | None = None

    @property
    def accepting(self) -> bool:
        """Whether new streams and utterances are welcome."""
        return self.ready and not self.draining and self.failure is None

    @property
    def voices(self) -> tuple[str, ...]:
        return self.hello.voices if self.hello is not None else ()

    @property
    def weights(self) -> str | None:
        return self.hello.model.weights if self.hello is not None else None

    @property
    def device(self) -> str | None:
        return self.hello.model.device if self.hello is not None else None

    def serve(self, hello: Hello, offer: Offer) -> None:
        """The model is warm: from now on, ``hello`` greets every connection."""
        self.hello, self.offer, self.ready = hello, offer, True
