"""realtime.server.stream.intake: sentences read in order off the loop, the neighbour hint,
unspeakable sentences reported, and the server's text thread."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import orjson
import pytest
from conftest import async_http_get

from protocol import Done, Segment, Speak
from protocol.frames import unpack_frame
from realtime.audio.formats import framer_for
from realtime.engine.api import RequestError
from realtime.engine.tone import ToneRunner
from realtime.server.app import Server
from realtime.server.config import ServerConfig
from realtime.server.stream.intake import (
    InlineText,
    Plain,
    PlainReader,
    SentenceIntake,
    TextThread,
    read_sentences,
)
from realtime.server.stream.segment_request import segment_request
from realtime.server.stream.utterance import ServerUtterance
from realtime.server.work.handoff import UpdateKind, WorkerUpdate
from realtime.speech.script import is_cjk


class ScriptReader:
    """Reads a sentence as written, deciding its language like the real
    normalizer: by its letters, else the hint. Records every call's thread;
    "BOOM" raises, "LONG" is refused; "ЖЖ" (Cyrillic) and symbols read as nothing."""

    def __init__(self, delay: float = 0.0) -> None:
        self.calls: list[tuple[str, str | None, str]] = []  # (sentence, hint, thread)
        self.warmed_on: str | None = None
        self.delay = delay

    def warm_up(self) -> None:
        self.warmed_on = threading.current_thread().name

    def spoken(self, sentence: str, lang: str | None = None) -> Plain:
        self.calls.append((sentence, lang, threading.current_thread().name))
        time.sleep(self.delay)
        if "BOOM" in sentence:
            raise ZeroDivisionError("a reader bug")
        if "LONG" in sentence:
            raise RequestError("too long to normalize")
        if any(is_cjk(ch) for ch in sentence):
            chosen = "zh"
        elif any(ch.isascii() and ch.isalpha() for ch in sentence):
            chosen = "en"
        else:
            chosen = lang or "en"
        text = "" if "Ж" in sentence or not any(ch.isalnum() for ch in sentence) else sentence.strip()
        return Plain(text, chosen, ((sentence, text),))


@pytest.fixture
async def text_thread():
    """``await text_thread(reader)``: a started TextThread, closed after the test."""
    threads: list[TextThread] = []

    async def start(reader) -> TextThread:
        thread = TextThread(lambda: reader)
        threads.append(thread)
        await thread.start()
        return thread

    yield start
    for thread in threads:
        thread.close()


def test_the_previous_sentence_language_is_the_hint():
    reader = ScriptReader()
    readings, last = read_sentences(reader, ["你好。", "12:00。", "Hello.", "12:00."], None)
    assert [hint for _, hint, _ in reader.calls] == [None, "zh", "zh", "en"]
    assert [r.spoken.lang for r in readings] == ["zh", "zh", "en", "en"]
    assert last == "en"


def test_a_reader_failure_makes_the_sentence_unspoken_not_an_exception():
    readings, _ = read_sentences(ScriptReader(), ["One.", "BOOM here.", "LONG one.", "Two."], "en")
    assert [r.unspoken for r in readings] == [False, True, True, False]
    assert [r.text for r in readings] == ["One.", "BOOM here.", "LONG one.", "Two."]


def test_sound_tags_alone_go_to_the_model_as_they_are():
    class Strict(ScriptReader):
        def spoken(self, sentence, lang=None):
            return Plain("", lang or "en", ((sentence, ""),))  # as TextNormalizer reads "[laugh]"

    readings, _ = read_sentences(Strict(), ["[laugh]", " [uv_break] [laugh] ", "[Ptts]", "!!!"], None)
    assert [r.spoken.text for r in readings] == ["[laugh]", "[uv_break] [laugh]", "", ""]


def test_plain_reader_reads_as_written_and_punctuation_as_nothing():
    reader = PlainReader()
    assert reader.spoken(" Hi there. ").text == "Hi there."
    assert reader.spoken("... !!!").text == ""
    assert reader.spoken("12:00.", "zh").lang == "zh"


def _intake(reader, delivered, speak_text: str = "") -> SentenceIntake:
    return SentenceIntake(segment_request(Speak("u", speak_text)), reader,
                          lambda said, owe: delivered.append(said), 150)


def test_intake_numbers_sentences_and_keeps_the_unspoken_apart():
    delivered: list = []
    intake = _intake(InlineText(ScriptReader()), delivered)
    intake.take("Hello. ЖЖЖ. 12:00. ", final=False)
    intake.take("你好。ЖЖ。Bye", final=True)
    said = [[(n, r.text) for n, r in batch] for batch in delivered]
    assert said == [[(0, "Hello."), (2, "12:00.")], [(3, "你好。"), (5, "Bye")]]
    intake.not_spoken(2, "12:00.")  # the model made nothing of it after all
    assert intake.unspoken == ("ЖЖЖ.", "12:00.", "ЖЖ。")
    request = intake.request(delivered[1][0][1])
    assert request.normalized and request.text == "你好。" and request.lang == "zh"
    assert not intake.pending


async def test_the_text_thread_reads_in_order_off_the_loop(text_thread):
    reader = ScriptReader(delay=0.002)
    thread = await text_thread(reader)
    assert reader.warmed_on is not None and reader.warmed_on.startswith("text")
    delivered: list = []
    intake = _intake(thread, delivered)
    for i in range(20):
        intake.take(f"Sentence {i}. ", final=False)
    intake.take("12:00.", final=True)
    assert intake.reading > 0 and intake.pending  # still on the text thread
    while intake.reading:
        await asyncio.sleep(0.005)
    texts = [r.text for batch in delivered for _, r in batch]
    assert texts == [f"Sentence {i}." for i in range(20)] + ["12:00."]
    assert {name for _, _, name in reader.calls} == {reader.warmed_on}
    assert reader.warmed_on != threading.current_thread().name
    assert reader.calls[-1][1] == "en"  # the last sentence's hint: its neighbour


async def test_a_closed_intake_drops_readings_still_to_come(text_thread):
    reader = ScriptReader(delay=0.01)
    thread = await text_thread(reader)
    delivered: list = []
    intake = _intake(thread, delivered)
    intake.take("One. Two.", final=True)
    intake.close()
    while intake.reading:
        await asyncio.sleep(0.005)
    assert delivered == []


class _Link:
    def __init__(self) -> None:
        self.sent: list = []
        self.submissions: list = []
        self._ids = iter(range(1, 1000))

    def send_message(self, message, owner=None):
        self.sent.append(message)

    def audio_out(self, speak):
        return framer_for(speak.format, speak.sample_rate, speak.frame_ms)

    def send_audio(self, utterance, header, payload):
        self.sent.append(header + payload)

    def submit(self, submission):
        self.submissions.append(submission)

    def cancel(self, job_ids, sink=None):
        pass

    def purge(self, utterance):
        pass

    def utterance_ended(self, utterance, outcome, code):
        pass

    def new_job_id(self):
        return next(self._ids)


def _utterance(link: _Link, speak: Speak, text) -> ServerUtterance:
    return ServerUtterance(speak, 1, link, link, time.monotonic(), default_deadline_ms=10_000,
                           max_text_chars=1000, text=text)


def _speak_through(utterance: ServerUtterance, link: _Link) -> None:
    """Admit the utterance and give each submitted segment a second of audio."""
    utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.ADMITTED))
    for sub in link.submissions:
        for work in sub.segments:
            audio = np.full(24000, 0.1, np.float32)
            utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.AUDIO, work.job_id,
                                                    audio=audio))
            utterance.on_worker_update(WorkerUpdate(utterance, UpdateKind.FINISHED, work.job_id))


def test_utterance_sends_spoken_and_lists_unspoken_in_done():
    class Upper(ScriptReader):
        def spoken(self, sentence, lang=None):
            got = super().spoken(sentence, lang)
            return Plain(got.text.upper(), got.lang, got.pieces)

    link = _Link()
    speak = Speak("u", "Hello there. ЖЖЖ. Bye now. ...")
    utterance = _utterance(link, speak, InlineText(Upper()))
    utterance.begin()
    assert [w.request.text for w in link.submissions[0].segments] == ["HELLO THERE.", "BYE NOW."]
    assert all(w.request.normalized for w in link.submissions[0].segments)
    _speak_through(utterance, link)
    segments = [m for m in link.sent if isinstance(m, Segment)]
    assert [(s.text, s.spoken) for s in segments] == [("Hello there.", "HELLO THERE."),
                                                     ("Bye now.", "BYE NOW.")]
    done = link.sent[-1]
    assert isinstance(done, Done) and done.unspoken == ("ЖЖЖ.", "...")
    frames = [unpack_frame(f)[0] for f in link.sent if isinstance(f, bytes)]
    assert frames[-1].utterance_end


async def test_first_submission_waits_for_the_speak_sentences(text_thread):
    reader = ScriptReader(delay=0.05)
    thread = await text_thread(reader)
    link = _Link()
    speak = Speak("u", "One here. ЖЖ.")
    utterance = _utterance(link, speak, thread)
    utterance.begin()
    assert link.submissions == []  # the sentences are still being read
    while utterance.intake.reading:
        await asyncio.sleep(0.01)
    assert len(link.submissions) == 1 and link.submissions[0].first
    assert [w.request.text for w in link.submissions[0].segments] == ["One here."]
    _speak_through(utterance, link)
    assert link.sent[-1].unspoken == ("ЖЖ.",)


async def test_readyz_waits_for_the_text_thread_warm_up_and_reads_happen_there():
    release = threading.Event()
    reader = ScriptReader()

    def make_reader():
        release.wait(10)
        reader.warm_up()
        return reader

    server = Server(ServerConfig(port=0, weights="tone"), lambda: ToneRunner(),
                    reader_factory_=make_reader)
    await server.start()
    try:
        await asyncio.sleep(0.2)
        status, _, body = await async_http_get(server.port, "/readyz")
        assert status == 503 and orjson.loads(body)["warm"] is False
        release.set()
        await asyncio.wait_for(server.wait_ready(), 30)
        status, _, _ = await async_http_get(server.port, "/readyz")
        assert status == 200
    finally:
        release.set()
        await server.close()
    assert reader.warmed_on is not None and reader.warmed_on.startswith("text")


@pytest.mark.parametrize("bad", ["BOOM", "LONG"])
async def test_a_reader_failure_never_reaches_the_loop_or_the_model(bad, ws_connect):
    reader = ScriptReader()
    server = Server(ServerConfig(port=0, weights="tone"), lambda: ToneRunner(),
                    reader_factory_=lambda: reader)
    await server.start()
    try:
        await asyncio.wait_for(server.wait_ready(), 30)
        client = await ws_connect(server)
        t = await client.speak_and_collect("u", f"First one. {bad} sentence. Last one.")
        done = t.check_done()
        assert done.unspoken == (f"{bad} sentence.",) and done.segments == 2
        assert [s.spoken for s in t.segments] == ["First one.", "Last one."]
        threads = {name for _, _, name in reader.calls}
        assert len(threads) == 1 and threads.pop().startswith("text")
    finally:
        await server.close()


async def test_the_last_frame_is_flagged_when_later_sentences_read_as_nothing(text_thread):
    # The input ends while its last sentences are still being read; the audio
    # before them finishes meanwhile: its last frame waits for the readings,
    # so it carries the utterance-end flag (the input was final when it went).
    reader = ScriptReader(delay=0.1)
    thread = await text_thread(reader)
    link = _Link()
    utterance = _utterance(link, Speak("u", "One here. ", final=False), thread)
    utterance.begin()
    while utterance.intake.reading:
        await asyncio.sleep(0.01)
    utterance.append("ЖЖ. ...", final=True)  # read on the text thread: 0.2 s
    assert utterance.intake.reading
    _speak_through(utterance, link)
    assert not any(isinstance(m, Segment) for m in link.sent)  # waiting for the readings
    while utterance.intake.reading:
        await asyncio.sleep(0.01)
    frames = [unpack_frame(f)[0] for f in link.sent if isinstance(f, bytes)]
    assert frames[-1].utterance_end
    assert isinstance(link.sent[-1], Done) and link.sent[-1].unspoken == ("ЖЖ.", "...")
