"""Opus on the WebSocket (PROTOCOL.md v1 additions): packet framing, the server's
framer, and whole utterances decoded by the Python client."""

from __future__ import annotations

import numpy as np
import pytest

from clients import RealtimeClient
from clients.opus import DECODER_RATE, OpusDecoder
from protocol import (
    DEFAULT_OFFER,
    OPUS_FORMAT,
    Done,
    ErrorCode,
    Offer,
    ProtocolError,
    Started,
    decode_client,
    decode_server,
    encode,
)
from protocol.packets import pack_packets, unpack_packets
from realtime.audio.framer import SOURCE_RATE
from realtime.audio.opus import OpusFramer, available

pytestmark = pytest.mark.skipif(not available(), reason="PyAV with libopus is not installed")

OPUS_OFFER = Offer(formats=(*DEFAULT_OFFER.formats, OPUS_FORMAT),
                   sample_rates=DEFAULT_OFFER.sample_rates, voices=(), max_text_chars=5000)


def sine(seconds: float, freq: float = 440.0, rate: int = SOURCE_RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.4 * np.sin(2 * np.pi * freq * t)).astype(np.float32)


# -- packet framing ------------------------------------------------------------------------


def test_packets_round_trip_and_malformed_payloads_are_refused():
    packets = [b"\x01", b"x" * 300, bytes(range(256)) * 3]
    payload = pack_packets(packets)
    assert payload[:2] == b"\x01\x00" and len(payload) == sum(len(p) + 2 for p in packets)
    assert unpack_packets(payload) == packets
    for bad in (payload[:-1], b"\x05", b"\x00\x00", b"\x03\x00ab"):
        with pytest.raises(ValueError):
            unpack_packets(bad)
    with pytest.raises(ValueError):
        pack_packets([b""])


# -- protocol ------------------------------------------------------------------------------


def test_opus_speak_is_validated_against_the_offer_and_opus_rates():
    ok = decode_client('{"type":"speak","id":"a","text":"hi","format":"opus","sample_rate":16000}',
                       OPUS_OFFER)
    assert ok.format == "opus" and ok.sample_rate == 16000
    # a server that does not list opus refuses it
    with pytest.raises(ProtocolError) as refused:
        decode_client('{"type":"speak","id":"a","text":"hi","format":"opus"}', DEFAULT_OFFER)
    assert refused.value.code is ErrorCode.UNSUPPORTED and refused.value.field == "format"
    # an offered rate Opus cannot code is unsupported, with or without an offer
    for offer in (OPUS_OFFER, None):
        with pytest.raises(ProtocolError) as bad_rate:
            decode_client('{"type":"speak","id":"a","text":"hi","format":"opus",'
                          '"sample_rate":22050}', offer)
        assert bad_rate.value.code is ErrorCode.UNSUPPORTED
        assert bad_rate.value.field == "sample_rate"


def test_started_carries_pre_skip_only_for_opus():
    opus = Started("a", 1, "interactive", "opus", 24000, pre_skip=312)
    assert decode_server(encode(opus)) == opus
    pcm = Started("b", 2, "interactive", "pcm_s16le", 24000)
    assert b"pre_skip" not in encode(pcm)
    assert decode_server(encode(pcm)).pre_skip is None


# -- the server's framer ---------------------------------------------------------------------


@pytest.mark.parametrize(("frame_ms", "packets"), [(10, 1), (20, 1), (30, 2), (100, 5)])
def test_frame_ms_rounds_up_to_whole_packets(frame_ms, packets):
    framer = OpusFramer(24000, frame_ms)
    assert framer.frame_ms == packets * 20 and framer.pre_skip > 0
    payloads = framer.push(sine(1.0))
    assert payloads and all(len(unpack_packets(p)) == packets for p in payloads)


@pytest.mark.parametrize("rate", [8000, 16000, 24000, 48000])
def test_counters_count_audio_before_encoding_and_decoding_restores_it(rate):
    framer = OpusFramer(rate, 100)
    x = sine(0.73)
    payloads = framer.push(x[:7000]) + framer.push(x[7000:])
    tail = framer.end_segment()
    assert tail, "the segment's last frame comes from end_segment"
    want = round(len(x) * rate / SOURCE_RATE)
    assert abs(framer.samples_sent - want) <= 2  # the resampler's rounding only
    assert framer.segment_samples == framer.samples_sent
    assert framer.ms(framer.samples_sent) == pytest.approx(730, abs=0.5)
    decoder = OpusDecoder(rate, framer.pre_skip)
    decoded = np.concatenate([decoder.decode(p, segment_end=(i == len(payloads + tail) - 1))
                              for i, p in enumerate(payloads + tail)])
    # all the audio, then at most 40 ms of padding silence (20 ms + one lookahead packet)
    assert framer.samples_sent <= len(decoded) <= framer.samples_sent + rate * 40 // 1000
    # the same tone comes back: level and pitch (zero crossings) match
    body = decoded[rate // 10: framer.samples_sent - rate // 10]
    assert np.sqrt(np.mean(body ** 2)) == pytest.approx(0.4 / np.sqrt(2), rel=0.15)
    crossings = np.count_nonzero(np.diff(np.signbit(body))) / (len(body) / rate) / 2
    assert crossings == pytest.approx(440, rel=0.03)


def test_each_segment_decodes_completely_before_the_next():
    framer = OpusFramer(24000, 40)
    first = framer.push(sine(0.3)) + framer.end_segment()
    decoder = OpusDecoder(24000, framer.pre_skip)
    audio = np.concatenate([decoder.decode(p, segment_end=(p is first[-1])) for p in first])
    # 0.3 s is 15 whole packets: one silent packet more flushes the lookahead, so
    # the whole 0.3 s is out before any second segment
    assert len(audio) >= 0.3 * 24000 + 300
    assert np.sqrt(np.mean(audio[6800:7100] ** 2)) > 0.1  # the tone's last milliseconds
    assert framer.end_segment() == []  # a segment with no audio says nothing


def test_decoder_drops_pre_skip_at_48k():
    framer = OpusFramer(48000, 20)
    payloads = framer.push(sine(0.2, rate=SOURCE_RATE)) + framer.end_segment()
    plain = OpusDecoder(DECODER_RATE, 0)
    skipped = OpusDecoder(DECODER_RATE, framer.pre_skip)
    a = np.concatenate([plain.decode(p) for p in payloads])
    b = np.concatenate([skipped.decode(p) for p in payloads])
    assert len(a) - len(b) == framer.pre_skip
    np.testing.assert_array_equal(a[framer.pre_skip:], b)


# -- whole utterances ---------------------------------------------------------------------


async def test_server_offers_opus_and_streams_length_prefixed_packets(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    assert OPUS_FORMAT in client.hello.formats
    t = await client.speak_and_collect("o1", "Hello there. How are you today?", format="opus",
                                       frame_ms=50)
    assert isinstance(t.terminal, Done)
    assert t.started.format == "opus" and t.started.pre_skip > 0
    assert len(t.segments) == 2 and t.terminal.segments == 2
    packets = [unpack_packets(f.payload) for f in t.frames]
    assert all(1 <= len(p) <= 3 for p in packets)  # 50 ms -> 3 packets, a segment's last fewer
    assert sum(len(p) == 3 for p in packets) >= len(packets) - 2
    # audio_ms counts the audio before encoding: the tone runner's 512 samples per character
    texts = "".join(s.text for s in t.segments)
    assert t.terminal.audio_ms == pytest.approx(sum(s.audio_ms for s in t.segments))
    assert t.terminal.audio_ms == pytest.approx(len(texts) * 512 / 24, rel=0.2)


async def test_opus_at_a_rate_opus_lacks_is_unsupported(tone_server, ws_connect):
    client = await ws_connect(tone_server)
    await client.send({"type": "speak", "id": "r", "text": "Hi there.", "format": "opus",
                       "sample_rate": 22050})
    error = (await client.collect(["r"]))["r"].terminal
    assert error.code == "unsupported" and error.field == "sample_rate"


async def test_python_client_decodes_opus(tone_server):
    url = f"ws://127.0.0.1:{tone_server.port}/v1/stream"
    async with RealtimeClient(url) as client:
        utt = await client.speak("One sentence here. And another one.", format="opus",
                                 sample_rate=16000, frame_ms=100)
        chunks = [c async for c in utt.audio()]
        done = await utt.result()
    assert all(c.opus and c.format == "pcm_s16le" and c.sample_rate == 16000 for c in chunks)
    decoded_ms = sum(c.duration_ms for c in chunks)
    # the pre-encoding audio, plus at most 40 ms of padding per segment, less the pre-skip
    assert done.audio_ms - 10 <= decoded_ms <= done.audio_ms + 40 * done.segments
    samples = np.concatenate([c.samples for c in chunks])
    assert 0.2 < np.max(np.abs(samples)) < 0.4  # the tone runner's amplitude 0.3
