"""`python -m examples.pipecat_example -o out.wav`: a Pipecat pipeline speaking a scripted
LLM reply through the realtime server.

The pipeline is [ChatTTSRealtimeTTSService -> AudioCollector -> the assistant's context
aggregator]. A scripted "LLM" pushes
one assistant turn token by token (LLMFullResponseStartFrame, LLMTextFrame...,
LLMFullResponseEndFrame), as a language model's stream would arrive, and the collected
TTSAudioRawFrames are written to a WAV. `--interrupt-after S` sends an
InterruptionFrame S seconds after the first audio (barge-in); the assistant's message in
the conversation context then holds only the words spoken (printed on stderr).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time

from pipecat.frames.frames import (
    EndFrame,
    Frame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    TTSAudioRawFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.workers.runner import WorkerRunner

from clients.pipecat_tts import ChatTTSRealtimeTTSService
from clients.wav import write_wav
from examples.llm_script import example_parser, llm_tokens
from protocol import DEFAULT_SAMPLE_RATE

log = logging.getLogger(__name__)

class AudioCollector(FrameProcessor):
    """Pipeline sink: keeps TTS audio and counts the TTS start/stop frames it sees.

    `realtime`: plays the audio as an output transport would, one frame's duration per
    frame, so frames behind it (the words' text frames) pass at the pace of playback and
    an interruption drops what has not played yet.
    """

    def __init__(self, realtime: bool = False) -> None:
        super().__init__()
        self.realtime = realtime
        self.audio: list[TTSAudioRawFrame] = []
        self.started = 0
        self.stopped = 0
        self.first_audio_at: float | None = None
        self.frames_after_interruption = 0
        self.interrupted = False
        self.first_audio = asyncio.Event()
        self.audio_at_interruption: float | None = None  # seconds of audio before it
        self.tts: ChatTTSRealtimeTTSService | None = None  # set by run_pipeline
        self.context: LLMContext | None = None  # set by run_pipeline

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InterruptionFrame):
            self.interrupted = True
            self.audio_at_interruption = len(self.pcm) / 2 / self.sample_rate
        elif isinstance(frame, TTSAudioRawFrame):
            if self.interrupted:
                self.frames_after_interruption += 1
            if self.first_audio_at is None:
                self.first_audio_at = time.monotonic()
                self.first_audio.set()
            if self.realtime:
                await asyncio.sleep(len(frame.audio) / 2 / frame.sample_rate)
            self.audio.append(frame)
        elif isinstance(frame, TTSStartedFrame):
            self.started += 1
        elif isinstance(frame, TTSStoppedFrame):
            self.stopped += 1
        await self.push_frame(frame, direction)

    @property
    def pcm(self) -> bytes:
        return b"".join(f.audio for f in self.audio)

    @property
    def sample_rate(self) -> int:
        return self.audio[0].sample_rate if self.audio else DEFAULT_SAMPLE_RATE

    @property
    def assistant_message(self) -> str | None:
        """The text of the context's last assistant message (None: there is none)."""
        messages = self.context.get_messages() if self.context is not None else []
        for message in reversed(messages):
            if isinstance(message, dict) and message.get("role") == "assistant":
                content = message.get("content")
                return content if isinstance(content, str) else str(content)
        return None


async def speak_turn(worker: PipelineWorker, text: str, token_delay_s: float) -> None:
    """Queue one assistant turn into the pipeline, token by token."""
    await worker.queue_frame(LLMFullResponseStartFrame())
    for token in llm_tokens(text):
        await worker.queue_frame(LLMTextFrame(token))
        await asyncio.sleep(token_delay_s)
    await worker.queue_frame(LLMFullResponseEndFrame())


async def run_pipeline(url: str, token: str | None, text: str | list[str], *,
                       token_delay_s: float = 0.02, interrupt_after_s: float | None = None,
                       settle_s: float = 0.5, pause_s: float = 0.0, realtime: bool = False,
                       **tts_kwargs) -> AudioCollector:
    """Run [TTS -> collector -> assistant aggregator] on scripted turns (one text, or a
    list of them `pause_s` apart); returns the collector.

    Without an interruption the pipeline ends once the turn's audio has played out
    (EndFrame waits for the audio contexts). With `interrupt_after_s`, the user "barges
    in" that long after the first audio: the LLM stream stops and an InterruptionFrame
    is queued; `settle_s` later the pipeline ends. `realtime`: the collector plays the
    audio in real time (see AudioCollector).
    """
    tts = ChatTTSRealtimeTTSService(url=url, token=token, **tts_kwargs)
    collector = AudioCollector(realtime)
    context = LLMContext()
    assistant = LLMContextAggregatorPair(context).assistant()
    worker = PipelineWorker(Pipeline([tts, collector, assistant]),
                            params=PipelineParams(audio_out_sample_rate=DEFAULT_SAMPLE_RATE),
                            enable_rtvi=False, cancel_on_idle_timeout=False)
    runner = WorkerRunner(handle_sigint=False)
    await runner.add_workers(worker)

    async def script() -> None:
        *earlier, last = [text] if isinstance(text, str) else text
        for reply in earlier:
            await speak_turn(worker, reply, token_delay_s)
            await asyncio.sleep(pause_s)
        turn = asyncio.create_task(speak_turn(worker, last, token_delay_s))
        if interrupt_after_s is not None:
            await asyncio.wait_for(collector.first_audio.wait(), 60)
            await asyncio.sleep(interrupt_after_s)
            turn.cancel()  # the LLM stops talking too
            await asyncio.gather(turn, return_exceptions=True)
            # Let the tokens it already queued reach the TTS: a system frame jumps
            # the queue, and text behind it would open a new turn of its own.
            await asyncio.sleep(0.1)
            await worker.queue_frame(InterruptionFrame())
            await asyncio.sleep(settle_s)
        else:
            await turn
        await worker.queue_frame(EndFrame())

    await asyncio.gather(runner.run(), script())
    collector.tts, collector.context = tts, context  # for inspection by callers
    return collector


def main(argv: list[str] | None = None) -> int:
    p = example_parser("python -m examples.pipecat_example", __doc__.splitlines()[0], 20.0)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    t0 = time.monotonic()
    collector = asyncio.run(run_pipeline(args.url, args.token, args.text,
                                         token_delay_s=args.token_delay_ms / 1000.0,
                                         interrupt_after_s=args.interrupt_after))
    if not collector.audio:
        print("error: no audio came back", file=sys.stderr)
        return 1
    write_wav(args.output, collector.pcm, collector.sample_rate)
    seconds = len(collector.pcm) / 2 / collector.sample_rate
    first = collector.first_audio_at or t0  # audio came, so this is set
    print(f"{len(collector.audio)} frames, {seconds:.2f} s of audio, first audio "
          f"{1000 * (first - t0):.0f} ms after start -> {args.output}", file=sys.stderr)
    print(f"assistant message: {collector.assistant_message!r}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
