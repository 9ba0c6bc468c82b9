"""The browser demo page (clients/web/) in Debian's chromium, driven by Playwright,
against a real server running the tiny-random model on CPU.

Skipped when chromium is missing, except under CI (env CI set), where that fails.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--autoplay-policy=no-user-gesture-required", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run"]
WAIT_MS = 90_000


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"chromium not found at {CHROMIUM} (required under CI)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, model_server):
    ctx = browser.new_context()
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(f"{model_server.http}/?token=ignored-by-open-server")
    pg.wait_for_function("window.demo && window.demo.status === 'ready'", timeout=WAIT_MS)
    yield pg
    ctx.close()
    assert errors == [], errors


def demo(pg, key):
    return pg.evaluate(f"window.demo.{key}")


def speak_until_played(pg) -> dict:
    """Press Speak; wait for done and for every received sample to be played."""
    pg.click("#speak")
    pg.wait_for_function("window.demo.status === 'done'", timeout=WAIT_MS)
    pg.wait_for_function(
        "window.demo.samplesPlayed >= window.demo.samplesReceived && window.demo.bufferedSamples === 0",
        timeout=WAIT_MS)
    return pg.evaluate("window.demo")


def test_auto_format_is_opus_through_webcodecs(page):
    assert demo(page, "codec") == "opus", "Chromium has WebCodecs' Opus decoder"
    assert page.evaluate("document.querySelector('#format').value") == "auto"
    page.fill("#text", "Opus in the browser. Two sentences.")
    state = speak_until_played(page)
    assert state["format"] == "opus" and state["framesReceived"] >= 1
    assert state["samplesPlayed"] == state["samplesReceived"] > 0
    # decoded audio: what the server encoded (audio_ms), plus at most 40 ms of padding
    # per segment (two here), less the pre-skip that was dropped
    rate = state["sampleRate"]
    expected = state["audioMs"] * rate / 1000
    assert expected - rate * 0.01 <= state["samplesReceived"] <= expected + 2 * rate * 0.04


def test_pcm_when_chosen(page):
    page.select_option("#format", "pcm_s16le")
    page.fill("#text", "Plain PCM.")
    page.click("#speak")
    page.wait_for_function("window.demo.status === 'done'", timeout=WAIT_MS)
    state = page.evaluate("window.demo")
    assert state["format"] == "pcm_s16le"
    assert state["samplesReceived"] == round(state["audioMs"] * state["sampleRate"] / 1000)


def test_speak_plays_all_audio(page):
    assert page.locator("#weights-warning").is_visible()
    assert "tiny-random" in page.locator("#weights-warning").inner_text()
    assert page.evaluate("document.querySelectorAll('#voice option').length") >= 1
    page.fill("#text", "Hello from the browser.")
    page.fill("#seed", "3")
    state = speak_until_played(page)
    assert state["framesReceived"] >= 1
    assert state["audioClock"] > 0, "the AudioContext clock never advanced"
    frame_samples = state["sampleRate"] * 100 // 1000  # default frame_ms = 100
    expected = state["audioMs"] * state["sampleRate"] / 1000
    assert abs(state["samplesPlayed"] - expected) <= frame_samples
    assert state["samplesPlayed"] == state["samplesReceived"]
    assert state["firstAudioMs"] > 0
    assert page.locator("#first-audio").inner_text().endswith("ms")
    assert page.locator("#rtf").inner_text() not in ("–", "…")


def test_stop_cancels(page):
    page.fill("#text", "This sentence will be interrupted. " * 3)
    page.select_option("#chunking", "token")
    page.click("#speak")
    page.wait_for_function("window.demo.framesReceived >= 1", timeout=WAIT_MS)
    uid = demo(page, "utteranceId")
    page.click("#stop")
    page.wait_for_function(f"window.demo.cancelledIds.includes('{uid}')", timeout=WAIT_MS)
    frames = demo(page, "framesReceived")
    page.wait_for_timeout(500)
    assert demo(page, "framesReceived") == frames, "audio kept arriving after cancelled"
    assert demo(page, "framesAfterCancel") == 0
    assert demo(page, "status") == "cancelled"
    assert demo(page, "bufferedSamples") == 0


def record_speaks(page) -> None:
    page.evaluate("""() => {
        window.sentSpeaks = [];
        const send = WebSocket.prototype.send;
        WebSocket.prototype.send = function (data) {
            if (typeof data === "string" && JSON.parse(data).type === "speak") {
                window.sentSpeaks.push(JSON.parse(data));
            }
            return send.call(this, data);
        };
    }""")


def test_speed_control_sends_the_level_and_voices_list_openai_names(page):
    options = page.evaluate("[...document.querySelectorAll('#voice option')].map(o => o.value)")
    assert "alloy" in options and "cedar" in options
    record_speaks(page)
    page.fill("#speed", "2")
    page.dispatch_event("#speed", "input")
    assert page.locator("#speed-value").inner_text() == "2"
    page.fill("#text", "Slowly now.")
    page.click("#speak")
    page.wait_for_function("window.demo.status === 'done'", timeout=WAIT_MS)
    sent = page.evaluate("window.sentSpeaks")
    assert len(sent) == 1 and sent[0]["params"]["speed"] == 2


def test_refine_control_sends_the_prompt_and_shows_what_the_model_read(page):
    record_speaks(page)
    page.select_option("#refine", "[oral_2][laugh_0][break_6]")
    page.fill("#text", "Hello world.")
    page.click("#speak")
    page.wait_for_function("window.demo.status === 'done'", timeout=WAIT_MS * 2)
    sent = page.evaluate("window.sentSpeaks")
    assert len(sent) == 1 and sent[0]["params"]["refine"] == "[oral_2][laugh_0][break_6]"
    spoken = demo(page, "spoken")
    assert spoken and spoken[0] and spoken[0] != "Hello world."  # the refined text


ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", Path(__file__).parent / "artifacts"))


def test_words_are_highlighted_as_they_play(page):
    """Word timings on (the default): each word of the transcript lights up while its
    audio plays, in order; a screenshot mid-utterance is kept as a test artefact."""
    assert page.is_checked("#timestamps")
    page.fill("#text", "Highlight every word as it plays. Then the second sentence follows.")
    page.click("#speak")
    # Mid-utterance: a few words lit, one of them playing now.
    page.wait_for_function("window.demo.currentWord !== null && window.demo.highlights.length"
                           " >= Math.min(3, window.demo.words.length)", timeout=WAIT_MS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "browser_word_highlight.png"
    page.screenshot(path=str(shot), full_page=True)
    highlighted = page.locator("#transcript .word.current, #transcript .word.played").count()
    assert highlighted >= 1 and page.locator("#transcript .word.current").count() == 1
    pg_state = speak_wait_played(page)
    words, highlights = pg_state["words"], pg_state["highlights"]
    assert words and len(highlights) == len(words), "every word lit up once"
    assert [h["index"] for h in highlights] == sorted(h["index"] for h in highlights)
    starts = [w["start_ms"] for w in words]
    assert starts == sorted(starts)
    # Lit when its audio played: not before its start, and within the player's report
    # interval (40 ms) plus a few animation frames after it.
    lags = [h["at_ms"] - words[h["index"]]["start_ms"] for h in highlights]
    assert min(lags) >= 0 and sorted(lags)[len(lags) // 2] < 150, lags
    assert page.locator("#transcript .word.played").count() == len(words)
    assert pg_state["spoken"], "each segment's text as read is shown"
    assert shot.stat().st_size > 10_000


def test_unspoken_sentences_are_shown(page):
    page.fill("#text", "This one is spoken. ☃☃☃")
    state = speak_until_played(page)
    assert state["unspoken"], "the server lists the symbols-only sentence in done.unspoken"
    assert "☃☃☃" in page.locator("#unspoken").inner_text()
    assert page.locator("#unspoken").is_visible()


def speak_wait_played(pg) -> dict:
    """After Speak was pressed: wait for done and for all its audio to be played."""
    pg.wait_for_function("window.demo.status === 'done'", timeout=WAIT_MS)
    pg.wait_for_function(
        "window.demo.samplesPlayed >= window.demo.samplesReceived && window.demo.bufferedSamples === 0",
        timeout=WAIT_MS)
    pg.wait_for_timeout(100)  # a few animation frames: the last word's highlight ends
    return pg.evaluate("window.demo")


def test_the_page_keeps_its_socket_alive_and_reconnects_after_an_idle_close(browser):
    from clients_fixtures import start_server

    # 2 s: the page checks every 500 ms and pings after 40% of the timeout, so a ping
    # comes every 0.8-1.0 s; at 0.8 s a loaded 2-core machine (the browser, the server
    # and pytest) once delayed one past the timeout.
    server = start_server(["--weights", "tone", "--tone-step-ms", "5", "--idle-timeout", "2"])
    ctx = browser.new_context()
    try:
        pg = ctx.new_page()
        pg.goto(f"{server.http}/")
        pg.wait_for_function("window.demo && window.demo.status === 'ready'", timeout=WAIT_MS)
        pg.wait_for_timeout(5000)  # two and a half timeouts: pings hold the socket open
        assert demo(pg, "status") == "ready" and demo(pg, "connections") == 1
        assert demo(pg, "pings") >= 2
        pg.evaluate("window.demo.hello.limits.idle_timeout_s = 0")  # stop pinging
        pg.wait_for_function("window.demo.status === 'closed'", timeout=10_000)
        assert "idle" in pg.locator("#conn").inner_text()
        pg.fill("#text", "Back after an idle close.")
        state = speak_until_played(pg)  # Speak connects again first
        assert state["connections"] == 2 and state["framesReceived"] >= 1
    finally:
        ctx.close()
        server.process.terminate()
        server.process.wait(10)


def test_a_voice_from_an_uploaded_recording_is_selected_and_spoken(page, tmp_path):
    import wave

    import numpy as np
    rate = 16000
    t = np.arange(int(rate * 3.5)) / rate
    samples = (0.3 * np.sin(2 * np.pi * 200 * t) * 32767).astype("<i2")
    path = tmp_path / "me.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.tobytes())
    page.click(".voice-sample summary")
    page.fill("#voice-transcript", "This is how I sound.")
    page.fill("#voice-name", "browser-me")
    page.set_input_files("#voice-file", str(path))
    page.wait_for_function("window.voiceUpload.status === 'ready'", timeout=WAIT_MS)
    voice = page.evaluate("window.voiceUpload.voice")
    assert voice.startswith("sample:") and voice.endswith(":This is how I sound.")
    assert page.evaluate("window.voiceUpload.name") == "browser-me"
    assert page.evaluate("document.querySelector('#voice').value") == voice
    page.fill("#text", "Spoken in my own voice.")
    state = speak_until_played(page)
    assert state["samplesPlayed"] > 0 and state["errors"] == []
    # A file that is not audio: the server's reason, shown, and the menu unchanged.
    bad = tmp_path / "notes.wav"
    bad.write_bytes(b"not audio at all" * 100)
    page.set_input_files("#voice-file", str(bad))
    page.wait_for_function("window.voiceUpload.status === 'error'", timeout=WAIT_MS)
    assert "not a readable audio file" in page.locator("#voice-status").inner_text()
    assert page.evaluate("document.querySelector('#voice').value") == voice
