"""`python -m examples.livekit_example -o out.wav`: the LiveKit Agents plugin speaking a
scripted LLM reply through the realtime server, no LiveKit server needed.

The reply is pushed token by token into `ChatTTSRealtimeTTS.stream()`, as an agent's
LLM output would be, and the audio frames that come back are written to a WAV.
`--interrupt-after S` closes the stream S seconds after the first audio, as an agent
does when the user barges in (the plugin then cancels the utterance).

In a real agent the plugin is simply the session's TTS:

    from clients.livekit_tts import ChatTTSRealtimeTTS
    session = AgentSession(stt=..., llm=..., vad=...,
                           tts=ChatTTSRealtimeTTS(url="ws://127.0.0.1:8765/v1/stream"))
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from dataclasses import dataclass, field

from livekit.agents.types import USERDATA_TIMED_TRANSCRIPT

from clients.livekit_tts import ChatTTSRealtimeTTS
from clients.utterance import Utterance
from clients.wav import write_wav
from examples.llm_script import example_parser, llm_tokens

log = logging.getLogger(__name__)


@dataclass
class Turn:
    """What one streamed turn produced."""

    tts: ChatTTSRealtimeTTS
    pcm: bytearray = field(default_factory=bytearray)
    frames: int = 0
    segment_ids: set[str] = field(default_factory=set)
    # The aligned transcript that came with the audio frames (TimedStrings).
    transcript: list[str] = field(default_factory=list)
    utterances: list[Utterance] = field(default_factory=list)  # the stream opened
    first_audio_s: float | None = None
    interrupted: bool = False

    @property
    def seconds(self) -> float:
        return len(self.pcm) / 2 / self.tts.sample_rate


async def speak_turn(tts: ChatTTSRealtimeTTS, text: str, token_delay_s: float = 0.01,
                     interrupt_after_s: float | None = None, realtime: bool = False) -> Turn:
    """Stream `text` as LLM tokens through `tts.stream()` and collect the audio.
    `realtime`: take each frame as a player would, one frame's duration apart (the
    frames, and the transcript that comes with them, then arrive at playback pace)."""
    turn = Turn(tts)
    stream = tts.stream()
    started = time.monotonic()

    async def feed() -> None:
        for token in llm_tokens(text):
            stream.push_text(token)
            await asyncio.sleep(token_delay_s)
        stream.end_input()

    feeder = asyncio.create_task(feed())
    try:
        async for audio in stream:
            if turn.first_audio_s is None:
                turn.first_audio_s = time.monotonic() - started
            turn.pcm += audio.frame.data.tobytes()
            turn.frames += 1
            turn.segment_ids.add(audio.segment_id)
            turn.transcript += audio.frame.userdata.get(USERDATA_TIMED_TRANSCRIPT, [])
            if realtime:
                await asyncio.sleep(audio.frame.duration)
            if (interrupt_after_s is not None
                    and time.monotonic() - started - turn.first_audio_s >= interrupt_after_s):
                turn.interrupted = True
                break
    finally:
        feeder.cancel()
        await stream.aclose()
        turn.utterances = list(stream.utterances)
    return turn


async def main_async(args: argparse.Namespace) -> int:
    tts = ChatTTSRealtimeTTS(url=args.url, token=args.token, voice=args.voice)
    try:
        turn = await speak_turn(tts, args.text, args.token_delay_ms / 1000, args.interrupt_after)
    finally:
        await tts.aclose()
    write_wav(args.output, bytes(turn.pcm), tts.sample_rate)
    print(f"{turn.seconds:.2f} s of audio in {turn.frames} frames, first audio after "
          f"{(turn.first_audio_s or 0) * 1000:.0f} ms{' (interrupted)' if turn.interrupted else ''}"
          f" -> {args.output}")
    print(f"transcript heard: {''.join(turn.transcript)!r}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = example_parser("python -m examples.livekit_example", __doc__ or "", 10.0)
    p.add_argument("--voice", default=None)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
