"""The torchaudio stand-in: ChatTTS imports, and the mel front end is right."""

import math

import numpy as np
import torch

import realtime.engine.compat as compat


def test_chattts_and_vocos_import_with_the_stand_in():
    compat.ensure_torchaudio()
    import ChatTTS  # noqa: F401
    import vocos  # noqa: F401
    from ChatTTS.model.dvae import DVAE  # noqa: F401


def test_mel_spectrogram_matches_a_direct_computation():
    sr, n_fft, hop, n_mels = 24000, 1024, 256, 100
    torch.manual_seed(0)
    wave = torch.randn(1, sr // 2)
    mel = compat.MelSpectrogram(sample_rate=sr, n_fft=n_fft, hop_length=hop,
                                n_mels=n_mels, center=True, power=1)(wave)
    # Reference: numpy rfft of reflect-padded Hann frames, HTK triangles.
    x = np.pad(wave[0].numpy(), n_fft // 2, mode="reflect")
    window = np.hanning(n_fft + 1)[:-1]  # periodic Hann, as torch.hann_window
    frames = np.stack([x[i:i + n_fft] * window for i in range(0, len(x) - n_fft + 1, hop)])
    mag = np.abs(np.fft.rfft(frames, axis=1))  # [frames, freqs]

    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    freqs = np.linspace(0, sr // 2, n_fft // 2 + 1)
    pts = 700.0 * (10 ** (np.linspace(hz_to_mel(0), hz_to_mel(sr / 2), n_mels + 2) / 2595.0) - 1)
    fb = np.zeros((len(freqs), n_mels))
    for m in range(n_mels):
        lo, mid, hi = pts[m], pts[m + 1], pts[m + 2]
        fb[:, m] = np.maximum(0, np.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)))
    expected = (mag @ fb).T
    assert mel.shape == (1, n_mels, frames.shape[0])
    np.testing.assert_allclose(mel[0].numpy(), expected, rtol=1e-3, atol=1e-3)


def test_mel_scale_helpers_invert_each_other():
    for scale in ("htk", "slaney"):
        for hz in (0.0, 440.0, 1000.0, 8000.0):
            mel = compat._hz_to_mel(hz, scale)
            back = compat._mel_to_hz(torch.tensor([mel]), scale).item()
            assert math.isclose(back, hz, rel_tol=1e-4, abs_tol=1e-3)


def test_file_io_fails_with_a_clear_message():
    import torchaudio
    if not getattr(torchaudio, compat.SHIM_MARKER, False):
        return  # a real torchaudio is installed; nothing of the stand-in to check
    try:
        torchaudio.load("x.wav")
    except RuntimeError as exc:
        assert "stand-in" in str(exc)
    else:
        raise AssertionError("torchaudio.load should fail in the stand-in")
