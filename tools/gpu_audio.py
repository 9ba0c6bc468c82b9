"""The GPU check's audio-path sections: the vocoder overlapped or not, and
the vocoder's linears in TF32 or bf16 against fp32.

``overlap(runner, ...)``: per stream count N, N distinct streaming jobs in
one decode batch at ``kv_len`` positions run with the runner's audio
delivered at once (``off``) and one step later on the vocoder's own stream
(``on``, ``realtime/engine/vocoder/overlap.py``), in alternating rounds on
the same jobs. Steps are timed back to back as serving runs them (no device
synchronization inside the window: each step's EOS read waits for the model
stream, and with the overlap the vocoder's work runs beside the next
decode), so the step p50/p99 are what streams see. Each job's whole audio
must agree in both modes: the same number of samples and an SNR against the
synchronous audio of at least ``SAME_AUDIO_SNR_DB`` (``audio_snr_db_min``;
``audio_identical`` says whether it was bit for bit): the same windows, one
step apart, but kernels on another stream or in another packing may sum in
another order, while a wrong or shifted window scores near 0 dB. A third mode, ``deferred``,
adds the EOS flags read one step later (``realtime/engine/eos_read.py``,
CUDA's serving default) to the overlap: its p50/p99 and
``deferred_p99_gain_ms`` (against ``on``, whose EOS read blocks) say what
launching step k+1 while step k's flags cross is worth, and its audio must
be the same too (``deferred_audio_identical``: every job ends at the same
step, so the batches are the same). The runner's modes are restored and
the runner left empty.

``vocoder_precision(assets, device, ...)``: the same hidden-state windows
through the vocoder with its block linears in each precision the device
offers (``realtime/engine/vocoder/precision.py``: fp32, tf32 on CUDA only,
bf16), padded as serving pads them: per precision the SNR of each window
against fp32 (min and median) and the time of one packed call of
``STEPS_PER_CALL`` hidden steps (median of ``repeats``). The windows are
random hidden states (the GPT's are not at hand here), so the SNRs say how
much the rounding changes the audio, not how it sounds.

Thread: the caller's (the model thread rules).
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from realtime.engine.vocoder.batch import PACKED_STEPS, STEPS_PER_CALL, gap_steps, render_packed
from realtime.engine.vocoder.precision import vocoder_precision_for, with_precision
from realtime.engine.vocoder.stream import StreamingVocoder
from tools.gpu_sections import CheckError, add_jobs, finish_all, left_in, step, sync
from tools.gpu_streams import BucketDriver

WINDOW_STEPS = (8, 24, 76, 140)  # a stream's chunks with their context, a one-shot's length
SAME_AUDIO_SNR_DB = 30.0  # rounding's differences stay far above; a wrong window far below


MODES = {"off": (False, False), "on": (True, False), "deferred": (True, True)}  # (overlap, EOS deferred)


def _round(runner, n: int, kv_len: int, warm: int, measured: int, mode: str) -> tuple[np.ndarray, dict]:
    """One round: step times (ms) over the window and every job's whole audio."""
    runner.reset()
    runner.audio.delivery.delayed, runner.eos.deferred = MODES[mode]
    driver = BucketDriver(runner, kv_len)
    ids = add_jobs(driver, n, warm + measured + 1, streaming=True, first=7000)
    for _ in range(warm):
        step(driver)
    sync(runner.device)
    marks = [time.perf_counter()]
    for _ in range(measured):
        step(driver)
        marks.append(time.perf_counter())
    finish_all(driver, 4 * (warm + measured) + 50)
    if left_in(runner) or runner.audio.delivery.pending or runner.eos.pending:
        raise CheckError(f"{left_in(runner)} jobs left in the runner after {n} streams")
    audio = {j: np.concatenate(driver.audio[j]) if driver.audio[j] else np.zeros(0) for j in ids}
    return np.diff(marks) * 1e3, audio


def overlap(runner, counts, kv_len: int, warm: int, measured: int, rounds: int) -> dict:
    """Step p50/p99 with the overlap off and on (module docstring)."""
    before = runner.audio.delivery.delayed, runner.eos.deferred
    out: dict = {"kv_len": kv_len, "measured_steps": measured, "rounds": rounds,
                 "default_on": before[0], "default_eos_deferred": before[1]}
    try:
        for n in counts:
            if n > runner.max_slots or n > max(runner.batch_sizes):
                out[f"streams_{n}"] = {"skipped": "more than the runner's slots or largest batch"}
                continue
            times: dict[str, list[np.ndarray]] = {mode: [] for mode in MODES}
            audio: dict[str, dict] = {}
            for _ in range(rounds):
                for mode in MODES:
                    ms, audio[mode] = _round(runner, n, kv_len, warm, measured, mode)
                    times[mode].append(ms)
            row: dict = {"streams": n}
            for name in MODES:
                ms = np.concatenate(times[name])
                row[f"{name}_step_ms_p50"] = float(np.percentile(ms, 50))
                row[f"{name}_step_ms_p99"] = float(np.percentile(ms, 99))
            row["p99_gain_ms"] = row["off_step_ms_p99"] - row["on_step_ms_p99"]
            row["deferred_p99_gain_ms"] = row["on_step_ms_p99"] - row["deferred_step_ms_p99"]
            for name, key in (("on", "audio"), ("deferred", "deferred_audio")):
                row[f"{key}_identical"] = all(np.array_equal(audio["off"][j], audio[name][j])
                                              for j in audio["off"])
                row[f"{key}_snr_db_min"] = min(same_audio_snr_db(audio["off"][j], audio[name][j])
                                               for j in audio["off"])
            if row["audio_snr_db_min"] < SAME_AUDIO_SNR_DB:
                row["error"] = "the overlapped runner's audio differs from the synchronous one's"
            elif row["deferred_audio_snr_db_min"] < SAME_AUDIO_SNR_DB:
                row["error"] = "the deferred EOS read's audio differs from the blocking read's"
            out[f"streams_{n}"] = row
    finally:
        runner.reset()
        runner.audio.delivery.delayed, runner.eos.deferred = before
    return out


def same_audio_snr_db(ref: np.ndarray, got: np.ndarray) -> float:
    """SNR of ``got`` against ``ref`` in dB: inf when equal, -inf when the
    lengths differ (a window lost or added is never rounding)."""
    ref, got = np.asarray(ref, dtype=np.float64), np.asarray(got, dtype=np.float64)
    if ref.shape != got.shape:
        return -float("inf")
    noise = float(np.sum((ref - got) ** 2))
    if noise == 0.0:
        return float("inf")
    return 10.0 * float(np.log10(max(float(np.sum(ref ** 2)), 1e-30) / noise))


def _windows(dim: int, device: torch.device) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(11)
    return [torch.randn(t, dim, generator=gen).to(device) for t in WINDOW_STEPS]


def _packed_ms(vocoder: StreamingVocoder, dim: int, device: torch.device, repeats: int) -> float:
    """One packed call filling the per-step budget, median of ``repeats``."""
    gap = gap_steps(vocoder)
    rows = [torch.zeros(STEPS_PER_CALL // 4 - gap, dim, device=device)] * 4
    render_packed(vocoder, rows)  # plans, kernels
    times = []
    for _ in range(repeats):
        sync(device.type)
        start = time.perf_counter()
        render_packed(vocoder, rows)
        sync(device.type)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def vocoder_precision(assets, device: str, repeats: int) -> dict:
    """SNR against fp32 and packed-call time per precision (module docstring)."""
    dev = torch.device(device)
    decoder, vocos = assets.decoder.to(dev).eval(), assets.vocos.to(dev).eval()
    dim = decoder.decoder.conv_in[0].in_channels * 2
    hs = _windows(dim, dev)
    names = ("fp32", "tf32", "bf16") if device == "cuda" else ("fp32", "bf16")
    out: dict = {"window_steps": list(WINDOW_STEPS), "packed_call_steps": STEPS_PER_CALL,
                 "snr_note": "random hidden states: rounding's effect, not a listening test"}
    ref: list[np.ndarray] = []
    for name in names:
        vocoder = StreamingVocoder(*with_precision(decoder, vocos, vocoder_precision_for(name, dev)))
        if device == "cuda":
            vocoder.pad_steps = PACKED_STEPS
        audio = render_packed(vocoder, hs)
        ref = ref or audio
        snrs = [_snr_db(r, a) for r, a in zip(ref, audio)]
        out[name] = {"packed_call_ms": _packed_ms(vocoder, dim, dev, repeats)}
        if name != "fp32":
            out[name].update(snr_db_min=min(snrs), snr_db_median=statistics.median(snrs))
    return out


def _snr_db(ref: np.ndarray, out: np.ndarray) -> float:
    noise = float(np.sum((ref.astype(np.float64) - out) ** 2))
    return float(10 * np.log10(float(np.sum(ref.astype(np.float64) ** 2)) / max(noise, 1e-30)))
