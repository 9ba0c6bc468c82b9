"""``int8_vnni``: our own AVX-512 VNNI int8 kernel for the decoder's few-row products.

Why: at 1-8 rows a decode step's int8 products should stream a quarter of
fp32's bytes, but fbgemm's ``linear_dynamic`` runs there at about half the
bytes per second of fp32's ``torch.mm`` (Intel Xeon family 6 model 167, 2
threads: its kernels are built for larger row counts). A 16-output block per
``vpdpbusd`` (``cpu.vnni_source``) streams the weight once, in order. Each
input row gets its own scale, so unlike fbgemm (one scale per call) a row's
result does not depend on its batch mates.

The kernel is C++ compiled once per machine with the system's ``g++`` (about
2 s) into ``kernel_dir()``, keyed by the source, the compiler and its flags,
written atomically, and loaded with ``ctypes``; its OpenMP loop joins torch's
own libgomp team (the same ``libgomp.so.1`` already loaded). Offered only
where the CPU has AVX-512 VNNI, torch's kernels are not capped below AVX-512
(``ATEN_CPU_CAPABILITY``, the AVX2 emulation), a compiler is found and a
product checks out against fp32: elsewhere ``available()`` says why and the
int8 family keeps its other forms. A candidate like the others: measured per
shape and row class and judged by whole steps (``cpu.plan_trial``).

Thread: built under a lock at first use; called from the model thread
(``ctypes`` releases the GIL during the call).
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading

import torch

from realtime.runtime.cpu import form_state, isa
from realtime.runtime.cpu.vnni_source import SOURCE

log = logging.getLogger(__name__)

FLAGS = ("-O3", "-std=c++17", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512vnni",
         "-fopenmp", "-shared", "-fPIC")
NEEDS = ("avx512f", "avx512bw", "avx512vl", "avx512_vnni")
ENV_DIR = "REALTIME_TTS_KERNEL_DIR"  # where the compiled kernel is kept (default: the cache)
_lock = threading.RLock()  # the check builds a form inside available()
_lib: ctypes.CDLL | None = None
_reason: str | None = None  # why the kernel is not available, once known
_tried = False
_cache_dir: str | None = None  # the server's --cache-dir (use_cache_dir)


def isa_unavailable(cpu_flags=None, env=None) -> str | None:
    """None where the CPU has what the kernel needs and torch's kernels run
    AVX-512 (so an AVX2-emulated run is not offered what an AVX2 machine
    lacks), else why not. Pure in (flags, environment)."""
    cpu_flags = isa.flags() if cpu_flags is None else set(cpu_flags)
    missing = [f for f in NEEDS if f not in cpu_flags]
    if missing:
        return f"this CPU lacks {', '.join(missing)}"
    capped = isa._aten_capped(os.environ if env is None else env)
    return f"torch's kernels are limited by {capped}" if capped else None


def compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")


def use_cache_dir(path: str | None) -> None:
    """Keep the kernel under the server's ``--cache-dir`` (its ``kernels/``);
    None or '' leaves the default. Takes effect if the kernel is not built yet."""
    global _cache_dir
    _cache_dir = path or None


def kernel_dir() -> str:
    """``$REALTIME_TTS_KERNEL_DIR``, else ``kernels/`` of the server's cache
    directory (``use_cache_dir``) or of the prepared cache's default."""
    from realtime.runtime.prepared_cache import default_cache_dir
    return os.environ.get(ENV_DIR) or os.path.join(_cache_dir or default_cache_dir(), "kernels")


def _version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.splitlines()[0] if out.stdout else cxx


def kernel_path(cxx: str, directory: str) -> str:
    """Where the kernel of this source, compiler and flags lives in ``directory``."""
    key = hashlib.sha256("\0".join((SOURCE, _version(cxx), *FLAGS)).encode()).hexdigest()[:16]
    return os.path.join(directory, f"vnni-{key}.so")


def _build(cxx: str, directory: str) -> str:
    """The compiled kernel's path (compiled now unless already there)."""
    path = kernel_path(cxx, directory)
    if os.path.exists(path):
        return path
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        src, out = os.path.join(tmp, "vnni.cpp"), os.path.join(tmp, "vnni.so")
        with open(src, "w", encoding="utf-8") as f:
            f.write(SOURCE)
        run = subprocess.run([cxx, *FLAGS, "-o", out, src], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            raise RuntimeError(f"{cxx} failed: {run.stderr.strip()[-400:]}")
        os.replace(out, path)  # atomic: a concurrent start sees all of it or nothing
    log.info("int8_vnni: kernel compiled into %s", path)
    return path


def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    if lib.vnni_abi() != 2:
        raise RuntimeError(f"{path}: unexpected kernel ABI")
    ptr, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.vnni_linear.argtypes = [ptr, i64, i64, i64, i64, ptr, ptr, ptr, ptr, ctypes.c_int]
    lib.vnni_linear.restype = None
    lib.f32_linear.argtypes = [ptr, i64, i64, i64, i64, ptr, ptr, ctypes.c_int]
    lib.f32_linear.restype = None
    return lib


def _load_or_rebuild(cxx: str, directory: str) -> ctypes.CDLL:
    """The kernel loaded; a file that does not load (torn, foreign) is built again."""
    path = _build(cxx, directory)
    try:
        return _load(path)
    except (OSError, AttributeError, RuntimeError) as exc:
        log.warning("int8_vnni: %s does not load (%s): building it again", path, exc)
        os.remove(path)
        return _load(_build(cxx, directory))


def available() -> str | None:
    """None once the kernel is built, loaded and checked here; else why not
    (the ISA limits read afresh, the build decided once per process)."""
    global _lib, _reason, _tried
    limited = isa_unavailable()
    if limited is not None:
        return limited
    with _lock:
        if _tried:
            return _reason
        _tried = True
        _reason = isa_unavailable()
        cxx = compiler() if _reason is None else None
        if _reason is None and cxx is None:
            _reason = "no C++ compiler (g++) to build the kernel"
        if _reason is None and cxx is not None:
            try:
                _lib = _load_or_rebuild(cxx, kernel_dir())
                _reason = _check()
            except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
                _reason = f"kernel not built: {exc}"
        if _reason is not None:
            _lib = None
            log.info("int8: int8_vnni not a candidate (%s)", _reason)
        return _reason


def _check() -> str | None:
    """A product against fp32's: None when within int8 rounding."""
    gen = torch.Generator().manual_seed(0)
    w, x = torch.randn(48, 64, generator=gen), torch.randn(9, 64, generator=gen)
    want = x @ w.t()
    rel = float((Int8Vnni(w)(x) - want).norm() / want.norm())
    if rel >= 0.02:
        return f"its int8 product is off by {rel:.3f} relative"
    fp32 = float((F32Avx512(w[:40])(x) - want[:, :40]).abs().max())
    return None if fp32 < 1e-4 else f"its fp32 product is off by {fp32:.2g}"


def _product(kernel, x: torch.Tensor, shape: tuple[int, int], *weights: torch.Tensor) -> torch.Tensor:
    """``kernel``(x, its row stride, M, K, N, *weights, y, threads) into a new
    y [M, N] for a weight of ``shape`` (N, K)."""
    n, k = shape
    if x.dim() != 2 or x.shape[1] != k:
        raise ValueError(f"input {tuple(x.shape)} does not fit a {n}x{k} weight")
    if x.dtype != torch.float32 or x.stride(-1) != 1:
        x = x.float().contiguous()
    m = x.shape[0]
    out = torch.empty(m, n)
    if m:
        kernel(x.data_ptr(), x.stride(0), m, k, n, *(w.data_ptr() for w in weights),
               out.data_ptr(), torch.get_num_threads())
    return out


def pack(q: torch.Tensor) -> torch.Tensor:
    """int8 [N, K] -> the kernel's [N / 16, K / 4, 16, 4] blocks."""
    n, k = q.shape
    return q.view(n // 16, 16, k // 4, 4).permute(0, 2, 1, 3).contiguous()


class Int8Vnni:
    """``int8_vnni``: per-channel symmetric 8-bit weights in the kernel's
    blocks; inputs quantized per row inside the kernel. Any row count;
    ``rows`` is unused. N and K must be multiples of 16."""

    backend = "int8_vnni"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        if weight.dim() != 2 or weight.device.type != "cpu":
            raise ValueError(f"need a 2-D CPU matrix, got {tuple(weight.shape)} on {weight.device}")
        n, k = self._fits(tuple(weight.shape))
        w = weight.detach().float()
        scale = (w.abs().amax(dim=1) / 127).clamp_min(1e-12)
        q = torch.round(w / scale[:, None]).clamp_(-127, 127).to(torch.int8)
        self._adopt(pack(q), (q.sum(1, dtype=torch.int32) * 128).contiguous(), scale.contiguous())

    @staticmethod
    def _fits(shape: tuple[int, ...]) -> tuple[int, int]:
        n, k = shape
        if n % 16 or k % 16:
            raise ValueError(f"int8_vnni needs sizes in multiples of 16, got {n}x{k}")
        reason = available()
        if reason is not None:
            raise RuntimeError(f"int8_vnni is not available here: {reason}")
        return n, k

    def _adopt(self, w: torch.Tensor, comp: torch.Tensor, scale: torch.Tensor) -> None:
        self._w, self._comp, self._scale = w, comp, scale
        blocks, quads, _, _ = w.shape  # [N / 16, K / 4, 16, 4]
        self._shape = (blocks * 16, quads * 4)
        self.nbytes = self._w.numel() + self._shape[0] * 8

    @classmethod
    def state_form(cls) -> str:
        """What ``state()`` holds (``cpu.form_state``)."""
        return "int8 per-channel [-127, 127] as [N/16, K/4, 16, 4]; comp int32 [N]; scale fp32 [N]"

    def state(self) -> dict[str, torch.Tensor]:
        return {"w": self._w, "comp": self._comp, "scale": self._scale}

    @classmethod
    def from_state(cls, state, shape: tuple[int, int], rows: int = 0) -> Int8Vnni:
        n, k = cls._fits(shape)
        t = form_state.check(state, {"w": ((n // 16, k // 4, 16, 4), torch.int8),
                                     "comp": ((n,), torch.int32), "scale": ((n,), torch.float32)})
        form = cls.__new__(cls)
        form._adopt(t["w"], t["comp"], t["scale"])
        return form

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        assert _lib is not None
        out = _product(_lib.vnni_linear, x, self._shape, self._w, self._comp, self._scale)
        return out if bias is None else out.add_(bias)


class F32Avx512:
    """``avx512`` (fp32): the weight [N, K] in the kernel's blocks of 16
    outputs, [ceil(N / 16), K, 16] (the last zero-padded), multiplied with
    AVX-512 FMAs (``f32_linear``): plain fp32 products and sums, within fp32
    rounding of the other backends (only the order of the sums differs).
    Any row count; ``rows`` is unused. Offered where the kernel library is
    (``available()``)."""

    backend = "avx512"
    any_rows = True

    def __init__(self, weight: torch.Tensor, rows: int = 0):
        if weight.dim() != 2 or weight.dtype != torch.float32 or weight.device.type != "cpu":
            raise ValueError(f"need a 2-D fp32 CPU matrix, got {tuple(weight.shape)} "
                             f"{weight.dtype} on {weight.device}")
        reason = available()
        if reason is not None:
            raise RuntimeError(f"the avx512 kernel is not available here: {reason}")
        n, k = weight.shape
        padded = torch.nn.functional.pad(weight.detach(), (0, 0, 0, -n % 16))
        self._w = padded.reshape(-1, 16, k).permute(0, 2, 1).contiguous()
        self._shape = (n, k)
        self.nbytes = self._w.numel() * 4

    def __call__(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        assert _lib is not None
        out = _product(_lib.f32_linear, x, self._shape, self._w)
        return out if bias is None else out.add_(bias)
