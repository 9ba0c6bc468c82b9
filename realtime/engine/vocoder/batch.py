"""Many vocoder windows in one Decoder + Vocos call, and how many per step.

Packing. The windows due at a step (streams' chunks, one-shot finishes) have
different lengths. Instead of padding them to one length, ``render_packed``
lays them end to end along time in a single row, separated by a few zero
steps, and runs the models once over the row, multiplying every layer's
output by a frame mask that is 1 inside a window and 0 in the gaps. Every
layer is a stride-1 convolution or works per frame, so a layer's output
inside a window reads at most ``reach`` frames beyond its edge; with gaps of
at least the largest single layer's reach (6 frames: kernel 7, dilation 2),
which the mask keeps at exactly zero before every convolution, the edge of a
window sees zeros exactly as the convolution's own zero padding does when
the window runs alone. The ISTFT is done here too (``masked_istft``): frames
outside a window add nothing and are left out of the window-envelope
normalization, as they are absent when the window runs alone. So every
window's audio equals its lone render within float rounding (the tests
measure it), there is no padding waste, and the whole step costs one call
and one device->host copy of the packed audio.

Bounding. A burst of finishing one-shot jobs must not stall the model
thread: ``take_within`` picks the leading units (one job's windows) that fit
a budget of steps per call (always at least one), and the runner leaves the
rest for the next steps.

Thread: the model thread (as the vocoder).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from realtime.engine.vocoder.stream import (
    FRAMES_PER_STEP,
    SAMPLES_PER_STEP,
    StreamingVocoder,
    VocoderStream,
    Window,
    audio_samples,
)

log = logging.getLogger(__name__)

# On the CPU the head and inverse FFT run in pieces of this many frames
# (they stay in cache; one GPU kernel each runs them whole).
CPU_PIECE_FRAMES = 512
# Hidden steps through the models per step at most (more only when one unit
# alone is larger): about 44 s of audio, a few ms of a GPU's time at bf16.
STEPS_PER_CALL = 2048
# On a CPU a full-size hidden step costs about 1 ms of Decoder+Vocos (2 cores,
# fp32), and packing saves nothing there (matrix-bound): about one longest
# stream window per step keeps a burst from stalling interactive steps.
STEPS_PER_CALL_CPU = 128
# On CUDA a packed call's row is padded with zero steps (masked like the
# gaps, so every window's audio is unchanged) to the first of these that
# holds it: the convolutions and FFTs then see a few shapes, planned and
# warmed at start-up (``vocoder_overlap.AudioDelivery.warm``), not a new one
# almost every call.
# Longer rows (one unit alone over the budget) run at their own length.
PACKED_STEPS = (64, 128, 256, 512, 1024, 1536, 2048, 3072, 4096)


@dataclass
class Due:
    """One job's windows due at a step: a stream's (``stream`` set; they are
    completed through it) or a finished one-shot's single window. ``final``:
    the job's last audio, after which it ends (``windows`` may then be empty:
    nothing was left to render)."""

    job_id: int
    windows: list[Window]
    stream: VocoderStream | None
    final: bool


@dataclass
class Vocoded:
    """What a step's vocoding gave: audio per job (running streams only when
    some became final; ending jobs always, possibly empty), failed jobs with
    a message, and the jobs whose last audio is out (``final`` units)."""

    audio: dict[int, np.ndarray] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    ended: list[int] = field(default_factory=list)


@dataclass
class VocoderCall:
    """A step's vocoding between choosing and completing: the units it
    renders (in order) and the result so far (the units that had nothing
    left to render are already ended in it)."""

    units: list[Due]
    result: Vocoded


def vocode_step(vocoder: StreamingVocoder, due: Sequence[Due], steps_per_call: int,
                fatal: Callable[[BaseException], bool]) -> Vocoded:
    """Render what ``due`` asks in one packed call (``choose_units``) and
    complete it (``complete_units``). A failing call is retried unit by
    unit so a failure fails its job only; an exception for which ``fatal``
    is true (a lost device) propagates."""
    call = choose_units(vocoder, due, steps_per_call)
    return complete_units(call, render_units(vocoder, call.units, call.result, fatal))


def choose_units(vocoder: StreamingVocoder, due: Sequence[Due], steps_per_call: int) -> VocoderCall:
    """What one call renders of ``due``: streams first (the most audio
    behind first: they are being listened to), then the rest in the given
    order, as many units as ``steps_per_call`` takes; the others are left
    for a later step (ask again: their windows only grow). Units with
    nothing left to render end here (their streams closed)."""
    result = Vocoded()
    units = [u for u in due if u.windows]
    for unit in due:
        if not unit.windows and unit.final:  # nothing left to render
            if unit.stream is not None:
                unit.stream.close()
            result.audio[unit.job_id] = np.zeros(0, dtype=np.float32)
            result.ended.append(unit.job_id)
    streams = sorted((u for u in units if u.stream is not None),
                     key=lambda u: u.windows[0].start_step - u.stream.steps)  # type: ignore[union-attr]
    units = streams + [u for u in units if u.stream is None]
    gap = gap_steps(vocoder) if units else 0
    sizes = [sum(w.hidden.shape[0] + gap for w in u.windows) for u in units]
    return VocoderCall(units[:take_within(sizes, steps_per_call)], result)


def complete_units(call: VocoderCall, rendered: Sequence[list[np.ndarray] | None]) -> Vocoded:
    """``call``'s result with each unit's window audio (``rendered``, in
    unit order; ``None``: the unit failed) completed through its stream."""
    result = call.result
    for unit, parts in zip(call.units, rendered):
        if parts is None:
            continue
        if unit.stream is not None:
            parts = [unit.stream.complete(w, a) for w, a in zip(unit.windows, parts)]
        parts = [p for p in parts if len(p)]
        if parts or unit.final:
            chunk = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
            result.audio[unit.job_id] = chunk.astype(np.float32, copy=False)
        if unit.final:
            result.ended.append(unit.job_id)
    return result


def render_units(vocoder: StreamingVocoder, units: list[Due], result: Vocoded,
                  fatal: Callable[[BaseException], bool]) -> list[list[np.ndarray] | None]:
    """Each unit's window audio (``None`` for a failed unit, recorded in
    ``result.failed``)."""
    if not units:
        return []
    try:
        audio = render_packed(vocoder, [w.hidden for u in units for w in u.windows])
    except Exception as exc:
        if fatal(exc):
            raise
        if len(units) > 1:
            log.warning("a packed vocoder call of %d jobs failed (%s: %s); rendering them "
                        "one by one", len(units), type(exc).__name__, exc)
            return [render_units(vocoder, [u], result, fatal)[0] for u in units]
        log.exception("vocoder failed for job %s", units[0].job_id)
        result.failed[units[0].job_id] = f"vocoder failed: {type(exc).__name__}: {exc}"
        return [None]
    out: list[list[np.ndarray] | None] = []
    for unit in units:
        out.append(audio[:len(unit.windows)])
        audio = audio[len(unit.windows):]
    return out


def take_within(sizes: Sequence[int], budget: int) -> int:
    """How many leading units (of ``sizes`` steps each) one call takes: as
    many as fit in ``budget`` in order, and at least one when there is any."""
    total, n = 0, 0
    for size in sizes:
        if n and total + size > budget:
            break
        total += size
        n += 1
    return n


def gap_steps(vocoder: StreamingVocoder) -> int:
    """Zero steps between packed windows: the largest reach (in frames) of a
    single convolution of either model, or of the ISTFT's overlap."""
    reach = 0
    for model in (vocoder.decoder, vocoder.vocos):
        for conv in model.modules():
            if isinstance(conv, torch.nn.Conv1d):
                reach = max(reach, conv.dilation[0] * (conv.kernel_size[0] - 1) // 2)
    istft = vocoder.vocos.head.istft
    if istft.win_length != istft.n_fft or istft.n_fft % istft.hop_length:
        raise ValueError("the packed ISTFT needs win_length == n_fft, a multiple of hop")
    reach = max(reach, istft.n_fft // istft.hop_length)
    return math.ceil(reach / FRAMES_PER_STEP)


def render_packed(vocoder: StreamingVocoder, hiddens: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """The audio of each ``hidden [t_i, D]`` (t_i >= 1), as ``vocoder.render``
    gives it alone, from one call over all of them. A single window runs
    through ``vocoder.render`` itself (bit-identical to upstream's decode)."""
    if not hiddens:
        return []
    audio, spans = packed_on_device(vocoder, hiddens)
    host = audio.to(device="cpu").numpy()  # the one copy back
    return split_audio(host, spans)


Spans = list[tuple[int, int]]  # (first sample, sample count) of each window in a packed row


def packed_on_device(vocoder: StreamingVocoder,
                     hiddens: Sequence[torch.Tensor]) -> tuple[torch.Tensor, Spans]:
    """``render_packed`` before its copy back: the packed row's float32
    samples on the vocoder's device and each window's span in it
    (``hiddens`` non-empty)."""
    if len(hiddens) == 1 and not vocoder.pad_steps and vocoder.body is None:
        return vocoder.render_on_device(hiddens[0]), [(0, audio_samples(hiddens[0].shape[0]))]
    with torch.inference_mode():
        return _render_packed(vocoder, hiddens)


def split_audio(host: np.ndarray, spans: Spans) -> list[np.ndarray]:
    """Each window's samples of a packed row on the host, as arrays of their own."""
    return [host[a:a + n].copy() for a, n in spans]


def _render_packed(vocoder: StreamingVocoder, hiddens: Sequence[torch.Tensor]) -> tuple[torch.Tensor, Spans]:
    dec, voc = vocoder.decoder, vocoder.vocos
    dec_device, dec_dtype = vocoder._dec_device, vocoder._dec_dtype
    gap = gap_steps(vocoder)
    lengths = [h.shape[0] for h in hiddens]
    vocoder.calls += 1
    vocoder.steps_rendered += sum(lengths)
    zeros = hiddens[0].new_zeros(gap, hiddens[0].shape[1])
    pieces, starts, at = [], [], 0
    for h in hiddens:
        pieces += [h, zeros]
        starts.append(at)
        at += h.shape[0] + gap
    # x: [S, D], the windows end to end with `gap` zero steps after each,
    # then zero steps up to the padded size (pad_steps).
    pad = padded_steps(at - gap, vocoder.pad_steps) - (at - gap)
    pieces[-1] = zeros.new_zeros(pad, zeros.shape[1])
    x = torch.cat(pieces).to(device=dec_device, dtype=dec_dtype)
    ones = x.new_ones(FRAMES_PER_STEP * max(lengths))
    off = x.new_zeros(FRAMES_PER_STEP * gap)
    marks = []
    for t in lengths:
        marks += [ones[:FRAMES_PER_STEP * t], off]
    marks[-1] = x.new_zeros(FRAMES_PER_STEP * pad)
    mask = torch.cat(marks).view(1, 1, -1)  # [1, 1, 2S]: 1 inside a window
    if vocoder.body is not None:  # another engine's Decoder, backbone and head projection
        projected = vocoder.body(x.transpose(0, 1).unsqueeze(0), mask)  # [1, 2S, n_fft + 2]
        audio = _audio(voc.head, projected, mask.view(-1).float(), False, projected=True)
    else:
        mel = _decoder_masked(dec, x.transpose(0, 1).unsqueeze(0), mask)  # [1, 100, 2S]
        mel = mel.to(device=vocoder._voc_device, dtype=vocoder._voc_dtype)
        mask = mask.to(device=mel.device, dtype=mel.dtype)
        feats = _backbone_masked(voc.backbone, mel, mask)  # [1, 2S, C]
        audio = _audio(voc.head, feats, mask.view(-1).float(), vocoder._voc_dtype != torch.float32)
    # audio: [(2S - 1) * 256]
    return audio.float(), [(a * SAMPLES_PER_STEP, audio_samples(t)) for a, t in zip(starts, lengths)]


def padded_steps(steps: int, sizes: Sequence[int]) -> int:
    """The first of ``sizes`` that holds ``steps``; ``steps`` itself when none does."""
    return next((size for size in sizes if size >= steps), steps)


def _decoder_masked(dvae, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """ChatTTS ``DVAE.forward`` (decode, no VQ) with every layer's output
    masked (in place: each is a fresh tensor): ``x [1, D, S]`` -> mel
    ``[1, 100, 2S]``."""
    b, d, s = x.shape
    # [1, D, S] -> [1, D/2, 2S]: a step's two halves become two frames.
    y = x.view(b, 2, d // 2, s).permute(0, 2, 3, 1).flatten(2)
    body = dvae.decoder
    for layer in body.conv_in:
        y = layer(y).mul_(mask)
    for block in body.decoder_block:
        y = block(y).mul_(mask)
    y = body.conv_out(y).mul_(mask)
    return dvae.out_conv(y).mul_(dvae.coef).mul_(mask)


def _backbone_masked(backbone, mel: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``VocosBackbone.forward`` (no AdaLN) with masked layer outputs:
    ``mel [1, 100, F]`` -> ``[1, F, C]``."""
    y = backbone.embed(mel).mul_(mask)
    y = backbone.norm(y.transpose(1, 2)).transpose(1, 2).mul_(mask)
    for block in backbone.convnext:
        y = block(y).mul_(mask)
    return backbone.final_layer_norm(y.transpose(1, 2))


def _audio(head, feats: torch.Tensor, frames: torch.Tensor, low_precision: bool,
           projected: bool = False) -> torch.Tensor:
    """The head and the ISTFT over ``feats [1, F, C]`` (``projected``: the
    head's projection already applied, [1, F, n_fft + 2]). On the CPU in pieces
    of ``CPU_PIECE_FRAMES`` frames up to the overlap-add: the per-frame
    spectra are the largest tensors of the call, and a piece of them stays
    in cache through exp, polar, the inverse FFT and the window."""
    istft = head.istft
    count = feats.shape[1]
    piece = CPU_PIECE_FRAMES if feats.device.type == "cpu" else count
    window = istft.window.float()
    # ifft: [1, F, n_fft], each frame's windowed inverse FFT.
    ifft = torch.empty(1, count, istft.n_fft, device=feats.device, dtype=torch.float32)
    for a in range(0, count, piece):
        spec = _spectrum(head, feats[:, a:a + piece], frames[a:a + piece], low_precision, projected)
        torch.fft.irfft(spec, istft.n_fft, dim=2, norm="backward", out=ifft[:, a:a + piece])
        ifft[:, a:a + piece].mul_(window)
    return masked_istft(ifft, frames, istft)


def _spectrum(head, feats: torch.Tensor, frames: torch.Tensor, low_precision: bool,
              projected: bool = False) -> torch.Tensor:
    """``ISTFTHead``'s complex spectrum, frames first: ``[1, F, n_fft/2 + 1]``,
    as ``StreamingVocoder.render`` computes it (in float32 for low
    precision), zero outside the windows (``frames [F]``: 1 inside).

    ``torch.polar(mag, p)`` is ``mag * cos(p) + i mag * sin(p)``, the very
    values of vocos's ``mag * (cos(p) + 1j * sin(p))`` (the imaginary zero
    of the promoted ``mag`` adds exact zeros) in one pass instead of five."""
    x = feats.clone() if projected else head.out(feats)  # [1, F, n_fft + 2], this call's own
    inside = frames[:, None]
    if low_precision:
        mag, phase = x.float().chunk(2, dim=2)
        return (torch.clip(torch.exp(mag), max=1e2) * inside) * torch.exp(1j * phase)
    mag, p = x.chunk(2, dim=2)
    # In place: x is this call's own; big temporaries cost more than the math.
    return torch.polar(mag.exp_().clamp_(max=1e2).mul_(inside), p)


def masked_istft(ifft: torch.Tensor, frames: torch.Tensor, istft) -> torch.Tensor:
    """The rest of ``torch.istft(center=True)`` after each frame's windowed
    inverse FFT ``ifft [1, F, n_fft]``, where only the frames with
    ``frames [F] == 1`` exist (``ifft`` must be zero at the others): they
    add no signal, and no window envelope, which is what ``torch.istft``
    divides by (samples covered by no frame come out 0). Returns the
    ``(F - 1) * hop`` centred samples, as ``torch.istft`` does."""
    n_fft, hop = istft.n_fft, istft.hop_length
    window = istft.window.float()
    count = ifft.shape[1]
    size = (count - 1) * hop + n_fft
    # Overlap-add as torch.istft does it (the backward of unfolding into frames).
    signal = torch.ops.aten.unfold_backward(ifft, [1, size], 1, n_fft, hop)[0]
    # The envelope: each existing frame adds window^2 over its n_fft samples,
    # i.e. hop-long quarters of it (n_fft = r * hop) at frames f .. f + r - 1.
    r = n_fft // hop
    quarters = window.square().view(r, hop)
    envelope = frames.new_zeros(count + r - 1, hop)
    for k in range(r):
        envelope[k:k + count] += frames[:, None] * quarters[k]
    envelope = envelope.view(-1)  # [size]
    half = n_fft // 2
    signal, envelope = signal[half:size - half], envelope[half:size - half]
    return signal / torch.where(envelope > 1e-11, envelope, torch.ones_like(envelope))
