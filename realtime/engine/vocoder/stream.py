"""Streaming vocoder: GPT hidden states -> ChatTTS Decoder -> Vocos -> 24 kHz audio.

ChatTTS turns the GPT's last hidden states (``[T, 768]``, one per GPT step)
into mel with its Decoder (a DVAE decoder: the 768 channels of a step are
split into two 384-channel mel-rate frames, then 12 ConvNeXt blocks, kernel 7,
dilation 2) and the mel into audio with Vocos (8 ConvNeXt blocks, kernel 7,
then an ISTFT with n_fft 1024, hop 256, centred). One GPT step is therefore
2 mel frames and 512 samples.

Length. Upstream's ISTFT is centred and ends at the last frame's centre, so ``T``
steps give ``512 * T - 256`` samples (none for ``T == 0``; ``audio_samples(T)``).
``one_shot`` returns exactly upstream's samples (upstream's non-stream path
then drops every sample with ``|x| <= 1e-5``; we never do), and a stream's
concatenated output always has exactly the one-shot length.

Receptive field. Every layer is a stride-1 convolution, so the field follows
from the kernels: Decoder +-75 mel frames (conv_in 2, blocks 12 x 6, out_conv
1), Vocos +-27 (embed 3, blocks 8 x 3), ISTFT +-2: a sample depends on the
hidden states of the steps within +-52 of its own (``receptive_radius_steps``).
Measured on full-size random weights (Decoder layer scales in [0.05, 0.5], not
1e-6, so every block matters as in a trained model; ``python -m bench vocoder
--field``): perturbing one step changes audio from 52 steps before to 52 after
it (the exact support, as the formula says); the change stays above -60 dB of its peak only
within about +-12 steps and above -100 dB within about +-17 steps. The real
checkpoint's profile differs, so the default left context keeps nearly the
whole field and the crossfade covers what a short lookahead misses.

Streaming. To make the audio of steps ``[a, b)`` final once steps up to
``b + lookahead`` exist, the stream runs Decoder + Vocos over
``[a - left_context, b + lookahead)`` and keeps the samples of ``[a, b)``. It
also keeps the next ``crossfade_samples`` of that window (computed with a
little less right context) and linearly crossfades them into the start of the
next chunk, so where the lookahead is shorter than the receptive field the two
estimates meet without a step. With ``lookahead_steps`` and
``left_context_steps`` >= 53 the windows see everything one-shot sees and the
stream equals one-shot to float rounding. Chunks start at ``min_chunk_steps``
(first audio after ``min_chunk_steps + lookahead_steps`` steps) and grow by
``chunk_growth`` (2 by default: they double) after every emission up to
``max_chunk_steps``, so the left-context overhead is amortized and the total
work stays linear in the utterance length: for a 20 s utterance pushed one
step at a time the defaults run 1,855 steps through the models where
upstream's re-decode every 24 steps runs 19,657.

Growth and real time. A listener starts playing at the first chunk. Chunk
``k`` ends at step ``E_k``; with the model making ``s`` times real time's
codes the next chunk comes in time only while ``E_{k+1} <= E_1 + s * E_k``:
growth ``g`` needs ``s >= g`` until chunks reach their largest. A GPU is 2x
real time, a CPU less, hence ``CPU_CHUNK_GROWTH``; slower still, a chunk goes
out early, smaller, where waiting would run the listener dry, and one that
follows another's audio waits and grows while the listener holds enough
(``vocoder.listener``). The seams are the same crossfades.

Fidelity with the defaults (tiny random models of the real depth, 300 steps,
tests/test_runtime_vocoder.py): SNR against one-shot 58 dB (lookahead 4:
34 dB, 16: 117 dB); across every seam the step between adjacent samples
differs from one-shot's by at most 4e-4 of a peak near 0.1.

Thread: a vocoder and its streams are used from the model thread only.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from realtime.engine.api import SAMPLES_PER_STEP
from realtime.engine.vocoder.listener import Listener

log = logging.getLogger(__name__)

FRAMES_PER_STEP = 2
# The chunk growth the CPU runtime builds its vocoder with (module docstring):
# in time from 1.5x real time on, where doubling needs 2x.
CPU_CHUNK_GROWTH = 1.5


class VocoderBody(Protocol):
    """The Decoder, Vocos's backbone and its head projection run elsewhere
    (``ort.vocoder``): ``hidden [1, D, S]``, ``mask [1, 1, 2S]`` ->
    ``[1, 2S, n_fft + 2]``; ``render`` is ``render_on_device`` through it."""

    def __call__(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...

    def render(self, vocoder: StreamingVocoder, hidden: torch.Tensor) -> torch.Tensor: ...


def audio_samples(steps: int) -> int:
    """Samples that ``steps`` GPT steps decode to (upstream's centred ISTFT)."""
    return max(0, SAMPLES_PER_STEP * steps - SAMPLES_PER_STEP // 2)


def _conv_radius(module: torch.nn.Module) -> int:
    """Sum of the one-sided reach (frames) of every Conv1d in ``module``,
    which is the receptive radius of a chain of stride-1 convolutions."""
    radius = 0
    for conv in module.modules():
        if isinstance(conv, torch.nn.Conv1d):
            radius += conv.dilation[0] * (conv.kernel_size[0] - 1) // 2
    return radius


def receptive_radius_steps(decoder, vocos) -> int:
    """How many GPT steps either side of its own a sample can depend on.

    Derived from the modules' kernels: the Decoder's decode path
    (``decoder.decoder`` and ``decoder.out_conv``), Vocos's backbone, and the
    ISTFT window (``n_fft / 2`` samples either side of a sample).
    """
    frames = _conv_radius(decoder.decoder) + _conv_radius(decoder.out_conv)
    frames += _conv_radius(vocos.backbone)
    istft = vocos.head.istft
    hop = istft.hop_length
    # A sample at position p (in frames) sees frames strictly within
    # n_fft / (2 hop) of p, then each of those sees +-frames mel frames.
    reach = istft.win_length // (2 * hop) + frames
    # Samples of step s sit at p in [2s, 2s + 2): the farthest frames are
    # 2s - reach + 1 and 2s + 2 + reach - 1.
    left = math.ceil((reach - 1) / FRAMES_PER_STEP)
    right = (reach + 1) // FRAMES_PER_STEP
    return max(left, right)


class StreamingVocoder:
    """Decoder + Vocos, one-shot or streamed with overlap.

    ``decoder``: ChatTTS's ``DVAE`` built as the Decoder (no VQ layer; its
    ``coef`` buffer set); ``vocos``: a ``vocos.Vocos``. They stay on whatever
    device and dtype they are on; audio always comes back as float32 numpy on
    the CPU. ``lookahead_steps``: right context a chunk waits for;
    ``left_context_steps``: steps re-run before each chunk;
    ``crossfade_samples``: overlap between consecutive chunks;
    ``min_chunk_steps`` / ``max_chunk_steps``: first and largest chunk;
    ``chunk_growth``: each chunk's size over the one before (at least one
    step more, up to the largest); ``clock``: seconds, for listeners' leads.

    ``calls`` and ``steps_rendered`` count model calls and the steps they ran
    over (for cost accounting).
    """

    def __init__(self, decoder, vocos, lookahead_steps: int = 8,
                 left_context_steps: int = 51, crossfade_samples: int = 256,
                 min_chunk_steps: int = 4, max_chunk_steps: int = 64, chunk_growth: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        if lookahead_steps < 0 or left_context_steps < 0 or crossfade_samples < 0:
            raise ValueError("lookahead, left context and crossfade must be >= 0")
        if not chunk_growth > 1.0:
            raise ValueError("chunk_growth must be > 1")
        if not 1 <= min_chunk_steps <= max_chunk_steps:
            raise ValueError("need 1 <= min_chunk_steps <= max_chunk_steps")
        self.decoder = decoder
        self.vocos = vocos
        self.lookahead_steps = lookahead_steps
        self.left_context_steps = left_context_steps
        self.crossfade_samples = crossfade_samples
        self.min_chunk_steps = min_chunk_steps
        self.max_chunk_steps = max_chunk_steps
        self.chunk_growth = chunk_growth
        self.clock = clock
        # Decode steps from a stream's first code to its first audio (the scheduler's).
        self.first_audio_steps = min_chunk_steps + lookahead_steps
        self.calls = 0
        self.steps_rendered = 0
        # Packed calls' rows padded to these step counts (CUDA: few shapes, warmed;
        # vocoder_batch.PACKED_STEPS); empty: each call its own length.
        self.pad_steps: tuple[int, ...] = ()
        # Another engine's Decoder + backbone + head projection (``ort.vocoder``):
        # every render then takes ``vocoder_batch``'s packed path through it.
        self.body: VocoderBody | None = None
        first = next(decoder.parameters())
        self._dec_device, self._dec_dtype = first.device, first.dtype
        first = next(vocos.parameters())
        self._voc_device, self._voc_dtype = first.device, first.dtype

    def start(self, after: Callable[[], float | None] | None = None, frame_s: float = 0.0) -> VocoderStream:
        """A new, empty stream for one segment. ``after``: its audio plays
        after another's, which runs out at the listener at ``after()`` (the
        ``clock``'s time, as known when called; None: not known yet);
        ``frame_s``: the listener gets it in frames of that length."""
        return VocoderStream(self, after, frame_s)

    def next_chunk(self, chunk: int) -> int:
        """The chunk after one of ``chunk`` steps."""
        return min(max(chunk + 1, round(self.chunk_growth * chunk)), self.max_chunk_steps)

    def segment_window_steps(self, codes: int) -> int:
        """Steps the models run over for a segment of ``codes`` steps pushed
        one at a time and then finished: every chunk's window (its left
        context, the chunk, the lookahead it waited for) and the last one to
        the end. Short segments pay the most per step: their chunks are still
        small when they end (a 3 s sentence on the CPU's growth: 2.5 steps
        rendered per step, against 1.9 once chunks are at their largest)."""
        lookahead = max(self.lookahead_steps, 1)
        start, chunk, total = 0, self.min_chunk_steps, 0
        while codes and start + chunk + lookahead <= codes:
            total += min(start, self.left_context_steps) + chunk + lookahead
            start += chunk
            chunk = self.next_chunk(chunk)
        return total + (min(start, self.left_context_steps) + codes - start if codes else 0)

    def one_shot(self, hidden: torch.Tensor) -> np.ndarray:
        """``hidden [T, D]`` -> ``audio_samples(T)`` float32 samples, decoded in
        one call exactly as upstream's ``Chat._decode_to_wavs`` does."""
        _check_hidden(hidden)
        if hidden.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        return self.render(hidden)

    def render(self, hidden: torch.Tensor) -> np.ndarray:
        """Decoder + Vocos over ``hidden [t, D]`` (t >= 1) in one call.

        Sample ``i`` of the result is at ``i`` samples after the start of the
        first step; the result has ``audio_samples(t)`` samples.
        """
        return self.render_on_device(hidden).to(device="cpu").numpy()

    @torch.inference_mode()
    def render_on_device(self, hidden: torch.Tensor) -> torch.Tensor:
        """``render`` without the copy back: float32 samples on the vocoder's device."""
        if self.body is not None:
            return self.body.render(self, hidden)
        self.calls += 1
        self.steps_rendered += hidden.shape[0]
        # [t, D] -> [1, D, t], as upstream batches hidden states.
        x = hidden.to(device=self._dec_device, dtype=self._dec_dtype)
        x = x.transpose(0, 1).unsqueeze(0).contiguous()
        mel = self.decoder(x)  # [1, 100, 2t]
        mel = mel.to(device=self._voc_device, dtype=self._voc_dtype)
        if self._voc_dtype == torch.float32:
            wav = self.vocos.decode(mel)  # [1, 512t - 256]
        else:
            wav = self._decode_low_precision(mel)
        return wav[0].float()

    def _decode_low_precision(self, mel: torch.Tensor) -> torch.Tensor:
        # The ISTFT needs a float32 complex spectrum; run the backbone and the
        # head's projection in the model dtype, the rest in float32.
        head = self.vocos.head
        x = head.out(self.vocos.backbone(mel)).float().transpose(1, 2)
        mag, phase = x.chunk(2, dim=1)
        spec = torch.clip(torch.exp(mag), max=1e2) * torch.exp(1j * phase)
        istft = head.istft
        return torch.istft(spec, istft.n_fft, istft.hop_length, istft.win_length,
                           istft.window.float(), center=True)


def _check_hidden(hidden: torch.Tensor) -> None:
    if not isinstance(hidden, torch.Tensor) or hidden.dim() != 2:
        raise ValueError("hidden must be a [steps, dim] tensor")


@dataclass(frozen=True)
class Window:
    """Steps ``[first, first + len(hidden))`` of a stream to run through the
    models, of which the audio of steps ``[start_step, end_step)`` becomes
    final (``end_step`` ``None``: to the end of the stream, which closes it).
    ``hidden [t, D]`` stays valid until the window is completed."""

    hidden: torch.Tensor
    first: int
    start_step: int
    end_step: int | None


class VocoderStream:
    """The audio of one segment, emitted as its hidden states arrive.

    ``push`` takes the next steps' hidden states ``[t, D]`` (copied) and
    returns the audio that became final (float32, possibly empty); ``finish``
    all the rest: ``audio_samples(T)`` samples in all for ``T`` steps
    (``emitted_samples`` so far). A push after ``finish`` raises
    ``RuntimeError``; a tensor that is not 2-D, ``ValueError``.

    Batched use (``realtime.engine.vocoder.batch``) splits ``push`` and
    ``finish`` in two: ``append`` the steps, ask which ``windows`` are due
    (nothing changes until they are completed: a window left for a later step
    is asked for again, grown), render them with other streams' windows, then
    ``complete`` each in order: the windows, and audio, ``push``/``finish`` give.
    """

    def __init__(self, vocoder: StreamingVocoder, after: Callable[[], float | None] | None = None,
                 frame_s: float = 0.0):
        self._vocoder = vocoder
        self.listener = Listener(vocoder.clock, after, frame_s)
        self._parts: list[torch.Tensor] = []  # hidden states of steps [_base, _steps)
        self._base = 0
        self._steps = 0
        self._final_steps = 0  # audio before _final_steps * 512 has been emitted
        self._tail = np.zeros(0, dtype=np.float32)  # previous estimate after that point
        self._next_chunk = vocoder.min_chunk_steps
        self._finished = False
        self.emitted_samples = 0

    @property
    def steps(self) -> int:
        """Steps pushed so far."""
        return self._steps

    def push(self, hidden: torch.Tensor) -> np.ndarray:
        self.append(hidden)
        return self._render_and_complete(self.windows(final=False))

    def finish(self) -> np.ndarray:
        """Everything not emitted yet; the stream is closed afterwards."""
        if self._finished or self._steps == 0:
            self.close()
            return np.zeros(0, dtype=np.float32)
        return self._render_and_complete([self._window(self._final_steps, None)])

    def append(self, hidden: torch.Tensor) -> None:
        """Add the next steps' hidden states (copied) without rendering."""
        if self._finished:
            raise RuntimeError("push after finish")
        _check_hidden(hidden)
        if hidden.shape[0]:
            # A copy: callers pass views of buffers they reuse.
            self._parts.append(hidden.detach().clone())
            self._steps += hidden.shape[0]
            self.listener.pushed(hidden.shape[0])

    def windows(self, final: bool) -> list[Window]:
        """The windows due now, in completion order: the next chunk if one is
        due, and with ``final`` the rest of the stream after it. Changes
        nothing but the listener's note of the ask (``complete`` does)."""
        out: list[Window] = []
        start = self._final_steps
        # Final audio must stay inside the one-shot length (which ends half a
        # step early), so at least one step of lookahead is always kept.
        end = self._steps - max(self._vocoder.lookahead_steps, 1)
        codes, steps = end - start, self._steps - max(0, start - self._vocoder.left_context_steps)
        if codes >= self._next_chunk:
            due = not self.listener.holds(codes, self._vocoder.max_chunk_steps)
        else:
            due = codes >= self._vocoder.min_chunk_steps and self.listener.hurries(codes, steps)
        if not self._finished:
            self.listener.asked(steps if due else None)
            if due:
                out.append(self._window(start, end))
                start = end
        if final and not self._finished and self._steps:
            out.append(self._window(start, None))
        return out

    def complete(self, window: Window, audio: np.ndarray) -> np.ndarray:
        """Take ``audio`` (``render(window.hidden)``'s samples) as the window's
        render: crossfade, advance, return the audio that became final."""
        vocoder = self._vocoder
        first, start_step, end_step = window.first, window.start_step, window.end_step
        if start_step != self._final_steps or self._finished:
            raise RuntimeError("windows must be completed once each, in order")
        log.debug("vocoded from step %d to %s over a %d-step window",
                  start_step, "end" if end_step is None else end_step, window.hidden.shape[0])
        lo = (start_step - first) * SAMPLES_PER_STEP
        hi = len(audio) if end_step is None else (end_step - first) * SAMPLES_PER_STEP
        out = audio[lo:hi].copy()
        n = min(len(self._tail), len(out))
        if n:
            ramp = np.arange(1, n + 1, dtype=np.float32) / np.float32(n + 1)
            out[:n] = self._tail[:n] * (1.0 - ramp) + out[:n] * ramp
        if end_step is not None:
            self._tail = audio[hi:hi + vocoder.crossfade_samples].copy()
            self._final_steps = end_step
            self._next_chunk = vocoder.next_chunk(self._next_chunk)
            self._forget_before(end_step - vocoder.left_context_steps)
        else:
            self._tail = np.zeros(0, dtype=np.float32)
            self._parts = []
            self._finished = True
        self.emitted_samples += len(out)
        self.listener.heard(len(out), last=end_step is None)
        return out

    def close(self) -> None:
        """Close the stream without rendering (one that had no steps)."""
        self._finished = True

    def _render_and_complete(self, windows: list[Window]) -> np.ndarray:
        outs = [self.complete(w, self._vocoder.render(w.hidden)) for w in windows]
        return np.concatenate(outs) if outs else np.zeros(0, dtype=np.float32)

    def _window(self, start_step: int, end_step: int | None) -> Window:
        """The window rendering steps ``[start_step, end_step)`` (``None``: to
        the end of the stream) with the left context before them."""
        first = max(0, start_step - self._vocoder.left_context_steps)
        if len(self._parts) > 1:
            self._parts = [torch.cat(self._parts, dim=0)]
        return Window(self._parts[0][first - self._base:], first, start_step, end_step)

    def _forget_before(self, step: int) -> None:
        # Keeps memory bounded by left context + one chunk + lookahead.
        if step > self._base and self._parts:
            self._parts = [self._parts[0][step - self._base:]]
            self._base = step
