"""Importing ChatTTS without a working torchaudio.

ChatTTS 0.2.5, vocos and encodec import torchaudio at module level, but the
speech path this server runs (GPT -> Decoder -> Vocos ISTFT) never calls it:
only the mel front ends for *encoding* audio (voice cloning, vocos feature
extraction) do. The torchaudio on the package index is built for one exact
torch and CUDA; beside any other torch (the CPU build in tests, a different
CUDA build on a server) its extension fails to load and ``import ChatTTS``
fails with it.

So the project installs those three packages with ``--no-deps`` and, when a
real torchaudio cannot be imported, this module registers a small pure-PyTorch
stand-in that provides exactly the names they import: ``transforms.MelSpectrogram``
and ``transforms.Spectrogram`` (torchaudio's defaults: HTK mel scale, no filter
norm, Hann window, reflect padding), and ``functional.functional._hz_to_mel`` /
``_mel_to_hz``. File I/O and resampling raise a clear error. A real torchaudio,
where one loads, is always preferred.

Import this module before ChatTTS or vocos: ``import realtime.engine.compat``.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import logging
import math
import sys
import types

import torch

from realtime.engine.model.chattts_import import bare_packages

log = logging.getLogger(__name__)

SHIM_MARKER = "__chattts_realtime_shim__"


def _hz_to_mel(freq: float, mel_scale: str = "htk") -> float:
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    # Slaney: linear below 1 kHz, logarithmic above.
    f_sp = 200.0 / 3
    mels = freq / f_sp
    min_log_hz, logstep = 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    if freq >= min_log_hz:
        mels = min_log_mel + math.log(freq / min_log_hz) / logstep
    return mels


def _mel_to_hz(mels: torch.Tensor, mel_scale: str = "htk") -> torch.Tensor:
    if mel_scale == "htk":
        return 700.0 * (10.0 ** (mels / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    freqs = f_sp * mels
    min_log_hz, logstep = 1000.0, math.log(6.4) / 27.0
    min_log_mel = min_log_hz / f_sp
    log_t = mels >= min_log_mel
    freqs[log_t] = min_log_hz * torch.exp(logstep * (mels[log_t] - min_log_mel))
    return freqs


def melscale_fbanks(n_freqs: int, f_min: float, f_max: float, n_mels: int,
                    sample_rate: int, norm: str | None = None,
                    mel_scale: str = "htk") -> torch.Tensor:
    """Triangular mel filters, ``[n_freqs, n_mels]``, as torchaudio builds them."""
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_min, m_max = _hz_to_mel(f_min, mel_scale), _hz_to_mel(f_max, mel_scale)
    f_pts = _mel_to_hz(torch.linspace(m_min, m_max, n_mels + 2), mel_scale)
    f_diff = f_pts[1:] - f_pts[:-1]  # [n_mels + 1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)  # [n_freqs, n_mels + 2]
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    fb = torch.clamp(torch.min(down, up), min=0.0)
    if norm == "slaney":
        enorm = 2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])
        fb = fb * enorm.unsqueeze(0)
    return fb


class Spectrogram(torch.nn.Module):
    """``|STFT|**power`` over the last dimension, torchaudio's semantics."""

    window: torch.Tensor  # a buffer

    def __init__(self, n_fft: int = 400, win_length: int | None = None,
                 hop_length: int | None = None, pad: int = 0,
                 window_fn=torch.hann_window, power: float | None = 2.0,
                 normalized: bool = False, wkwargs: dict | None = None,
                 center: bool = True, pad_mode: str = "reflect",
                 onesided: bool = True, return_complex: bool | None = None):
        super().__init__()
        self.n_fft = n_fft
        self.win_length = win_length or n_fft
        self.hop_length = hop_length or self.win_length // 2
        self.register_buffer("window", window_fn(self.win_length, **(wkwargs or {})))
        self.pad, self.power, self.normalized = pad, power, normalized
        self.center, self.pad_mode, self.onesided = center, pad_mode, onesided

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        if self.pad > 0:
            waveform = torch.nn.functional.pad(waveform, (self.pad, self.pad))
        shape = waveform.shape
        x = waveform.reshape(-1, shape[-1])
        spec = torch.stft(x, self.n_fft, self.hop_length, self.win_length,
                          self.window, center=self.center, pad_mode=self.pad_mode,
                          normalized=False, onesided=self.onesided,
                          return_complex=True)
        if self.normalized:
            spec = spec / self.window.pow(2.0).sum().sqrt()
        spec = spec.reshape(shape[:-1] + spec.shape[-2:])
        if self.power is None:
            return spec
        return spec.abs().pow(self.power)


class MelScale(torch.nn.Module):
    fb: torch.Tensor  # a buffer: [n_stft, n_mels]

    def __init__(self, n_mels: int = 128, sample_rate: int = 16000, f_min: float = 0.0,
                 f_max: float | None = None, n_stft: int = 201,
                 norm: str | None = None, mel_scale: str = "htk"):
        super().__init__()
        fb = melscale_fbanks(n_stft, f_min, f_max or sample_rate / 2, n_mels,
                             sample_rate, norm, mel_scale)
        self.register_buffer("fb", fb)

    def forward(self, specgram: torch.Tensor) -> torch.Tensor:
        # specgram: [..., freq, time] -> [..., n_mels, time]
        return torch.matmul(specgram.transpose(-1, -2), self.fb).transpose(-1, -2)


class MelSpectrogram(torch.nn.Module):
    def __init__(self, sample_rate: int = 16000, n_fft: int = 400,
                 win_length: int | None = None, hop_length: int | None = None,
                 f_min: float = 0.0, f_max: float | None = None, pad: int = 0,
                 n_mels: int = 128, window_fn=torch.hann_window, power: float = 2.0,
                 normalized: bool = False, wkwargs: dict | None = None,
                 center: bool = True, pad_mode: str = "reflect", onesided: bool | None = None,
                 norm: str | None = None, mel_scale: str = "htk"):
        super().__init__()
        self.spectrogram = Spectrogram(n_fft, win_length, hop_length, pad, window_fn,
                                       power, normalized, wkwargs, center, pad_mode, True)
        self.mel_scale = MelScale(n_mels, sample_rate, f_min, f_max, n_fft // 2 + 1,
                                  norm, mel_scale)

    def forward(self, waveform: torch.Tensor) -> torch.Tensor:
        return self.mel_scale(self.spectrogram(waveform))


def _unavailable(name: str):
    def fail(*args, **kwargs):
        raise RuntimeError(
            f"torchaudio.{name} is not available: this process uses the "
            "chattts-realtime torchaudio stand-in (see docs/install.md)")
    return fail


def _module(name: str, **attributes: object) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in attributes.items():
        setattr(module, key, value)
    return module


def _build_shim() -> types.ModuleType:
    mel = dict(_hz_to_mel=_hz_to_mel, _mel_to_hz=_mel_to_hz, melscale_fbanks=melscale_fbanks)
    inner = _module("torchaudio.functional.functional", **mel)
    functional = _module("torchaudio.functional", functional=inner,
                         resample=_unavailable("functional.resample"), **mel)
    transforms = _module("torchaudio.transforms", MelSpectrogram=MelSpectrogram,
                         Spectrogram=Spectrogram, MelScale=MelScale,
                         Resample=_unavailable("transforms.Resample"))
    root = _module(
        "torchaudio", __version__="0.0.0+chattts-realtime-shim", transforms=transforms,
        functional=functional, load=_unavailable("load"), save=_unavailable("save"),
        sox_effects=types.SimpleNamespace(apply_effects_tensor=_unavailable("sox_effects")))
    setattr(root, SHIM_MARKER, True)
    # A spec lets importlib.util.find_spec() answer (transformers probes for
    # torchaudio that way); no distribution metadata exists, so it reports
    # torchaudio as not installed and never relies on it.
    for mod in (root, transforms, functional, inner):
        mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, None)
    sys.modules.update({
        "torchaudio": root,
        "torchaudio.transforms": transforms,
        "torchaudio.functional": functional,
        "torchaudio.functional.functional": inner,
    })
    return root


def ensure_torchaudio() -> bool:
    """Make ``import torchaudio`` work. Returns True when the real one loaded."""
    existing = sys.modules.get("torchaudio")
    if existing is not None:
        return not getattr(existing, SHIM_MARKER, False)
    try:
        importlib.import_module("torchaudio")
        importlib.import_module("torchaudio.transforms")
        return True
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError from the extension, RuntimeError
        for name in [n for n in sys.modules if n == "torchaudio" or n.startswith("torchaudio.")]:
            del sys.modules[name]
        log.info("torchaudio unavailable (%s: %s); using the pure-PyTorch stand-in",
                 type(exc).__name__, exc)
        _build_shim()
        return False


def check_install() -> None:
    """Fail loudly when the installed stack cannot run the model (used by make)."""
    real = ensure_torchaudio()
    import transformers
    import vocos  # noqa: F401
    from ChatTTS import Chat  # noqa: F401  (the import itself is the check: the whole package)

    major = int(transformers.__version__.split(".")[0])
    if major >= 5:
        raise SystemExit(f"transformers {transformers.__version__} is not supported: "
                         "install transformers<5 (see docs/install.md)")
    log.info("torch %s, transformers %s, torchaudio %s", torch.__version__,
             transformers.__version__, "real" if real else "stand-in")


ensure_torchaudio()
# ChatTTS's own __init__ imports all of upstream's pipeline: defer it (chattts_import.py).
bare_packages()
