"""Write received audio to a WAV file (stdlib `wave`), converting any wire format to s16."""

from __future__ import annotations

import wave
from pathlib import Path

import numpy as np

from protocol.pcm import decode_samples, encode_samples


def to_s16(pcm: bytes, fmt: str) -> bytes:
    """Wire-format bytes -> 16-bit little-endian PCM bytes."""
    if fmt == "pcm_s16le":
        return pcm
    return encode_samples(decode_samples(pcm, fmt), "pcm_s16le")


def write_wav(path: str | Path, pcm_s16: bytes, sample_rate: int) -> None:
    """Write mono 16-bit PCM to `path`."""
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(sample_rate)
        out.writeframes(pcm_s16)


def read_wav(path: str | Path) -> tuple[np.ndarray, int]:
    """Read a mono 16-bit WAV: (float32 samples, sample rate). For tests and tools."""
    with wave.open(str(path), "rb") as src:
        rate = src.getframerate()
        data = src.readframes(src.getnframes())
    return decode_samples(data, "pcm_s16le"), rate
