"""The settled GEMM plan of this machine, kept as a small JSON file.

A plan is valid for one machine and one model build: its key holds the CPU
(``cpu.info.describe``: model, ISA flags, ISA limits in the environment, CPU
count), the torch version, the thread count, the matrix shapes and how many
of each, the row classes, the candidate backends and the mode. Any change is a
different file (rebuilt by measuring, never patched). The file records its
full key and a checksum of its document; a torn, corrupt or mismatched file is
a miss with a warning (and is replaced by the next store). Writes go to a
temporary file in the same directory, then ``os.replace`` (atomic on POSIX).
Nothing here raises on a bad cache or an unwritable directory: the worst case
is measuring again.

Thread: build time (the model thread).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence

import torch

log = logging.getLogger(__name__)

FORMAT = 1  # bump when the document's layout changes: old files then miss
KIND = "gemm-plan"


def default_dir() -> str:
    """``$XDG_CACHE_HOME/realtime-tts``, else ``~/.cache/realtime-tts``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "realtime-tts")


def key(weights: Sequence[torch.Tensor], policy, device: torch.device, dtype: torch.dtype,
        candidates: Sequence[str]) -> dict:
    """What a plan for ``weights`` under ``policy`` (a ``cpu.plan.GemmPolicy``)
    among backends ``candidates`` depends on."""
    from realtime.runtime.cpu.info import describe

    shapes: dict[str, int] = {}
    for w in weights:
        name = f"{w.shape[0]}x{w.shape[1]}"
        shapes[name] = shapes.get(name, 0) + 1
    return {"kind": KIND, "format": FORMAT, "cpu": describe(), "torch": torch.__version__,
            "threads": torch.get_num_threads(), "device": str(device),
            "dtype": str(dtype).removeprefix("torch."), "mode": policy.mode,
            "shapes": dict(sorted(shapes.items())), "batch_sizes": sorted(set(policy.batch_sizes)),
            "prefill_rows": policy.prefill_rows, "candidates": list(candidates)}


def describe_key(k: dict) -> str:
    return f"{k.get('threads')} threads, {k.get('cpu', '?')[:60]}"


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def _path(root: str, k: dict) -> str:
    digest = hashlib.sha256(_canonical(k).encode()).hexdigest()[:32]
    return os.path.join(root, f"{KIND}-{digest}.json")


def load(root: str | None, k: dict) -> dict[tuple[int, int], dict[int, str]] | None:
    """The backend per (shape, row class) stored under key ``k``, or None
    (off, absent, torn or for another key)."""
    if not root or not k:
        return None
    path = _path(root, k)
    try:
        with open(path, encoding="utf-8") as f:
            entry = json.load(f)
        body = entry["plan"]
        if entry["key"] != k or entry["sha256"] != hashlib.sha256(_canonical(body).encode()).hexdigest():
            raise ValueError("key or checksum mismatch")
        return {tuple(int(n) for n in shape.split("x")): {int(r): b for r, b in rows.items()}
                for shape, rows in body.items()}  # type: ignore[misc]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("cpu gemm plan cache: ignoring %s (%s); measuring again", path, exc)
        return None


def store(root: str | None, k: dict, plan: dict[tuple[int, int], dict[int, str]],
          verdicts: list[str]) -> None:
    """Keep ``plan`` under key ``k`` in ``root`` (atomically; errors logged)."""
    if not root or not k:
        return
    body = {f"{n}x{kk}": {str(r): b for r, b in rows.items()} for (n, kk), rows in plan.items()}
    entry = {"key": k, "plan": body, "sha256": hashlib.sha256(_canonical(body).encode()).hexdigest(),
             "verdicts": verdicts}
    path = _path(root, k)
    try:
        os.makedirs(root, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=root, prefix=".gemm-plan-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entry, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        log.info("cpu gemm plan stored in %s", path)
    except OSError as exc:
        log.warning("cpu gemm plan cache: cannot write %s (%s)", path, exc)
