"""Voices from a sample on this server: the encoder's thread and the named ones.

``SampleVoices`` owns the two things every sample voice needs beyond its
string: the DVAE encoder (``runtime.encoder.SampleEncoder``) on one
dedicated thread with a bounded queue, and the named voices uploads created
(``POST /v1/voices`` with a ``name``), held by this process only, at most
``max_named`` of them (the oldest goes first). A sample voice's string
(``protocol.voices``: ``sample:<spk_smp>:<txt_smp>``) is self-contained, so
any replica with the same checkpoint speaks it; a name is only a shortcut
on the server that made it.

Why a dedicated thread: the encoder is not the model thread's (the speech
path runs the Decoder checkpoint, never the DVAE), so it is safe beside the
model thread, and an encode queued as a model-thread command would stall
every stream's next step for as long as it runs. One encode runs at a time;
``max_waiting`` more may queue; beyond that ``EncoderBusy``.

``resolve`` turns a wire voice into what the runtime takes: a typed voice
(``SeedVoice``, ``EmbeddingVoice``, ``NamedVoice``) or a ``VoiceSample``
with no speaker embedding.

Thread: event loop (the encodes run on the encoder's thread).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from protocol.voices import is_embedding, sample_of, seed_of
from realtime.engine.api import EmbeddingVoice, NamedVoice, SeedVoice, Voice, VoiceSample

if TYPE_CHECKING:
    import numpy as np

    from realtime.engine.vocoder.encoder import SampleEncoder

log = logging.getLogger(__name__)

T = TypeVar("T")
DEFAULT_VOICE = "seed:0"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def resolve(voice: str | None, named: Mapping[str, str]) -> tuple[Voice | None, VoiceSample | None]:
    """(voice, sample) for a ``SegmentRequest`` from a wire voice (already
    validated): a named upload becomes its sample; a sample voice speaks with
    no speaker embedding, as upstream does for a sample alone."""
    voice = named.get(voice, voice) if voice else DEFAULT_VOICE
    parts = sample_of(voice)
    if parts is not None:
        return None, VoiceSample(*parts)
    return runtime_voice(voice), None


def runtime_voice(voice: str) -> Voice:
    """The runtime's voice for a wire voice that is not a sample: a seed, an
    embedding, or else a name of the runtime's voice table (the runtime
    refuses one it does not have)."""
    seed = seed_of(voice)
    if seed is not None:
        return SeedVoice(seed)
    if is_embedding(voice):
        return EmbeddingVoice(voice)
    return NamedVoice(voice)


class EncoderBusy(RuntimeError):
    """Too many encodes are queued already (the client may retry)."""


class SampleVoices:
    """See the module docstring; ``encoder`` None: this server cannot encode."""

    def __init__(self, encoder: SampleEncoder | None = None, max_named: int = 64,
                 max_waiting: int = 2) -> None:
        self.encoder = encoder
        self.max_named = max_named
        self.max_waiting = max_waiting
        self.named: OrderedDict[str, str] = OrderedDict()  # oldest first
        self._busy = 0  # encodes queued or running
        self._pool: ThreadPoolExecutor | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.named)

    def add(self, name: str, voice: str) -> None:
        """Name ``voice`` (replacing an older voice of that name)."""
        self.named.pop(name, None)
        self.named[name] = voice
        while len(self.named) > self.max_named:
            dropped, _ = self.named.popitem(last=False)
            log.info("named voice %r dropped: more than %d named voices", dropped, self.max_named)

    def resolve(self, voice: str | None) -> tuple[Voice | None, VoiceSample | None]:
        return resolve(voice, self.named)

    async def encode(self, wav: np.ndarray) -> str:
        """24 kHz mono float32 -> upstream's ``spk_smp`` string, on the
        encoder's thread; raises ``EncoderBusy`` when the queue is full."""
        encoder = self.encoder
        if encoder is None:
            raise RuntimeError("these weights have no DVAE encoder")
        return await self.run(lambda: encoder.encode(wav))

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` on the encoder's thread (decoding and encoding an upload,
        say), after the encodes queued before it; ``EncoderBusy`` when
        ``max_waiting`` are queued behind the running one."""
        if self._busy > self.max_waiting:
            raise EncoderBusy(f"{self._busy} voice samples are being encoded")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="dvae-encode")
        self._busy += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._pool, work)
        finally:
            self._busy -= 1

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
