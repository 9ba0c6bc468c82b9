"""params.reference: "first" conditions sentences 2..n on sentence 1's audio and
text (realtime/server/stream/reference.py), "none" leaves every sentence on its own.

Unit tests drive a ``ServerUtterance`` with a fake link and a stub encoder
(what is submitted when, with which sample); the end-to-end test runs the
tiny-random server and checks the sample sentence 2 got is the DVAE encoding
of exactly the audio the client received for sentence 1.
"""

from __future__ import annotations

import asyncio
import time

import numpy as np
import pytest
from test_voice_upload import TINY

from protocol import Speak
from protocol.params import Params
from realtime.audio.formats import framer_for
from realtime.engine.api import SeedVoice, VoiceSample
from realtime.engine.vocoder.encoder import SampleEncoder, decode_codes
from realtime.server.stream.utterance import ServerUtterance
from realtime.server.voices.samples import SampleVoices
from realtime.server.work.handoff import UpdateKind, WorkerUpdate

TEXT = "The first sentence is here. A second one follows. And a third."


class _Link:
    def __init__(self) -> None:
        self.submissions: list = []
        self._ids = iter(range(1, 100))

    def send_message(self, message, owner=None) -> None: ...
    def audio_out(self, speak):
        return framer_for(speak.format, speak.sample_rate, speak.frame_ms)
    def send_audio(self, utterance, header, payload) -> None: ...
    def submit(self, submission) -> None:
        self.submissions.append(submission)
    def cancel(self, job_ids, sink=None) -> None: ...
    def purge(self, utterance) -> None: ...
    def utterance_ended(self, utterance, outcome, code) -> None: ...
    def new_job_id(self) -> int:
        return next(self._ids)

    @property
    def works(self) -> list:
        return [w for s in self.submissions for w in s.segments]


class _Encoder:
    """Stands in for ``SampleEncoder``: records the audio, returns a fixed string."""

    def __init__(self, fail: bool = False) -> None:
        self.wavs: list[np.ndarray] = []
        self.fail = fail

    def encode(self, wav: np.ndarray) -> str:
        self.wavs.append(wav)
        if self.fail:
            raise RuntimeError("encoder broke")
        return "\u4e00" * 20


def _utterance(reference: str | None, voice: str | None = None, fail: bool = False):
    link, encoder = _Link(), _Encoder(fail)
    speak = Speak("u1", TEXT, voice=voice, params=Params(reference=reference))
    utterance = ServerUtterance(speak, 1, link, link, time.monotonic(), default_deadline_ms=10_000,
                                max_text_chars=1000, samples=SampleVoices(encoder))  # type: ignore[arg-type]
    utterance.begin()
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.ADMITTED))
    return utterance, link, encoder


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_first_holds_later_sentences_until_sentence_one_is_encoded():
    utterance, link, encoder = _utterance("first")
    assert [w.request.text for w in link.works] == ["The first sentence is here."]
    first = link.works[0].job_id
    chunks = [np.full(4800, 0.1, np.float32), np.full(2400, -0.2, np.float32)]
    for chunk in chunks:
        utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.AUDIO, first, audio=chunk))
    await _settle()
    assert len(link.works) == 1  # sentence 1's audio is not complete yet
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.FINISHED, first))
    await _settle()
    later = link.works[1:]
    assert [w.request.text for w in later] == ["A second one follows.", "And a third."]
    sample = VoiceSample("\u4e00" * 20, "The first sentence is here.")
    assert all(w.request.sample == sample and w.request.voice == SeedVoice(0) for w in later)
    assert link.works[0].request.sample is None
    assert len(encoder.wavs) == 1 and np.array_equal(encoder.wavs[0], np.concatenate(chunks))


async def test_none_and_sample_voices_submit_everything_at_once():
    sample_voice = "sample:" + "\u4e00" * 20 + ":Hi there"
    for reference, voice in (("none", None), (None, None), ("first", sample_voice)):
        _, link, encoder = _utterance(reference, voice)
        assert len(link.works) == 3, (reference, voice)
        await _settle()
        assert not encoder.wavs
    # A sample voice: no speaker embedding, the sample on every sentence.
    assert all(w.request.voice is None and w.request.sample.txt_smp == "Hi there" for w in link.works)


async def test_a_silent_first_sentence_passes_the_role_on():
    utterance, link, _ = _utterance("first")
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.EMPTY, link.works[0].job_id))
    await _settle()
    assert [w.request.text for w in link.works] == ["The first sentence is here.", "A second one follows."]
    second = link.works[1].job_id
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.AUDIO, second,
                                            audio=np.ones(2400, np.float32)))
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.FINISHED, second))
    await _settle()
    assert link.works[2].request.sample.txt_smp == "A second one follows."


def _speak_first(utterance, link) -> None:
    first = link.works[0].job_id
    audio = np.ones(100, np.float32)
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.AUDIO, first, audio=audio))
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.FINISHED, first))


async def test_a_failed_encode_releases_them_unconditioned_and_a_cancel_releases_nothing():
    utterance, link, _ = _utterance("first", fail=True)
    _speak_first(utterance, link)
    await _settle()
    assert len(link.works) == 3 and all(w.request.sample is None for w in link.works)

    utterance, link, _ = _utterance("first")
    _speak_first(utterance, link)
    utterance.cancel()  # while the encode runs
    await _settle()
    assert len(link.works) == 1


@pytest.mark.parametrize("chunking", ["token", "sentence"])
async def test_sentence_two_gets_the_encoding_of_sentence_one_as_sent(server_factory, ws_connect, chunking):
    server = await server_factory(**TINY)
    runner = server.worker.runner
    requests, encoded = [], []
    prepare = runner.prepare
    runner.prepare = lambda request: (requests.append(request), prepare(request))[1]
    encode = server.state.samples.encode

    async def recording_encode(wav):
        encoded.append((wav, await encode(wav)))
        return encoded[-1][1]
    server.state.samples.encode = recording_encode
    client = await ws_connect(server)
    t = await client.speak_and_collect("r1", "Good morning to you. Here is more.", format="pcm_f32le",
                                       chunking=chunking, params={"reference": "first"}, timeout=120)
    t.check_done("pcm_f32le")
    first_audio = np.frombuffer(b"".join(f.payload for f in t.frames if f.header.segment == 0), np.float32)
    assert len(encoded) == 1 and np.array_equal(encoded[0][0], first_audio)
    spk_smp = encoded[0][1]
    assert spk_smp == SampleEncoder(runner.assets.dvae).encode(first_audio)  # upstream's encoding of it
    assert [r.sample for r in requests] == [None, VoiceSample(spk_smp, "Good morning to you.")]
    prompt = prepare(requests[1]).work.prompt
    assert prompt.codes is not None and np.array_equal(prompt.codes.T, decode_codes(spk_smp))
