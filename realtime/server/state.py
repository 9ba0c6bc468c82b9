"""What the server is, as clients, probes and sessions see it.

``ServiceState`` holds the lifecycle (warming up, ready, draining, failed to
start) and what the loaded model offers (the ``hello`` every connection gets,
the ``Offer`` that validates client messages, the voices). The server writes
it; HTTP routes and sessions read it.

Thread: event loop only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol import Hello, Offer
from realtime.server.voices.samples import SampleVoices


@dataclass
class ServiceState:
    ready: bool = False  # the model is loaded and warm
    draining: bool = False  # shutting down: no new connections or utterances
    # Why the server cannot serve: the type of the exception that failed the
    # start-up or broke the device (no paths, no text: /readyz shows it).
    failure: str | None = None
    hello: Hello | None = None
    offer: Offer | None = None
    samples: SampleVoices = field(default_factory=SampleVoices)
    _model_voices: tuple[str, ...] = ()  # the runner's own named voices
    # Warm-up pieces left for idle time once ready (the worker's count; /readyz).
    warming: Callable[[], int] = lambda: 0

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
        self._model_voices = hello.voices

    @property
    def model_voices(self) -> tuple[str, ...]:
        """The runner's own named voices (an upload may not take their names)."""
        return self._model_voices

    def name_voice(self, name: str, voice: str) -> None:
        """An upload named a voice: from now on ``hello.voices`` (new
        connections), the ``Offer`` (every message) and ``/v1/voices`` list it."""
        self.samples.add(name, voice)
        if self.hello is None or self.offer is None:
            return
        names = self._model_voices + tuple(n for n in self.samples.names if n not in self._model_voices)
        self.hello = dataclasses.replace(self.hello, voices=names)
        self.offer = dataclasses.replace(self.offer, voices=names)
