"""A per-machine cache of what start-up prepares, so a restart pays it once.

``PreparedCache(root)`` is a directory of entries, each named by a ``CacheKey``:
a kind (``"weights"``, ``"ort-backbone"``) and the parts it was prepared from (a
checkpoint's content id, precision, form, ...). Every key also
carries ``machine_parts()``: the torch version, the CPU (``cpu.info``: model,
ISA flags, ISA limits in the environment, CPU count), so a cache directory
shared by several machines or kept across an upgrade never serves what was
prepared for another. Any change of a part is a different entry: rebuilt,
never patched.

Three entry forms:

- ``load_json(key)`` / ``store_json(key, obj)``: one JSON document (a measured
  plan, a content hash);
- ``load_tensors(key)`` / ``store_tensors(key, tensors)``: named CPU tensors
  (``torch.save``'s format), memory-mapped on load (processes on one host
  share the pages through the page cache);
- ``load_dir(key)`` / ``store_dir(key, fill)``: a directory of files (an
  ONNX graph and its weights), with a manifest of their sizes and xxh3-64;
  written in a temporary directory and renamed into place.

Writes go to a temporary file in the same directory, are fsynced and renamed
over the entry (atomic on POSIX), so a reader sees the old entry or the new
one, never half of one, and two processes storing the same key at once both
leave a whole entry. Each entry records its full key and a checksum
(JSON: sha256 of the document; tensors: xxh3-64 of each tensor's bytes,
checked on load); a torn, truncated or corrupt entry, or one whose key does
not match, is a miss with a warning, removed so it is rebuilt. Why a data
checksum though the rename is atomic: a torn write cannot reach the entry's
name, but a file changed later (a disk, an edit) would otherwise give wrong
weights silently; xxh3 over the decoder's 760 MB costs ~0.2 s at load 10 on a
2-core Xeon where zlib's CRC-32 took ~0.5 s (and copying the mapped pages into
anonymous memory ~2 s), so the check stays. Nothing here raises on a
bad cache: the worst case is the cold start. I/O errors (a read-only or full
disk) are logged and the entry is skipped.

``PreparedCache(None)`` (``--cache-dir ''``) is off: every load misses,
stores do nothing.

``checkpoint_id(asset_dir)`` names a checkpoint by content: a hash of its
files, itself cached by (path, size, mtime) so it is computed once per file
version.

Thread: any; entries are independent files.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import pickle
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

FORMAT = 1  # bump when an entry's layout changes: old entries then miss
KEEP_PER_KIND = 4  # older entries of one kind are removed past this many
KEEP = {"weights": 2}  # kinds whose entries are large (the decoder's 760 MB): fewer kept
_HASH_CHUNK = 8 * 2**20
MANIFEST = "manifest.json"  # a directory entry's key and file sums


def default_cache_dir() -> str:
    """``$XDG_CACHE_HOME/realtime-tts``, else ``~/.cache/realtime-tts``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "realtime-tts")


def machine_parts() -> dict[str, str]:
    """What makes a prepared form valid only on machines like this one."""
    import torch

    from realtime.engine.cpu.info import describe

    return {"torch": torch.__version__, "cpu": describe()}


@dataclass(frozen=True)
class CacheKey:
    """``kind`` (a file-name-safe word) and the parts an entry was made from;
    ``machine_parts()`` is added on creation."""

    kind: str
    parts: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, kind: str, **parts: Any) -> CacheKey:
        if not kind.replace("-", "").isalnum():
            raise ValueError(f"cache kind must be a word, got {kind!r}")
        return cls(kind, {**machine_parts(), **parts, "format": FORMAT})

    @property
    def canonical(self) -> str:
        return json.dumps(self.parts, sort_keys=True, separators=(",", ":"), default=str)

    @property
    def name(self) -> str:
        return f"{self.kind}-{hashlib.sha256(self.canonical.encode()).hexdigest()[:32]}"


class PreparedCache:
    """Entries under ``root`` (created on first store); ``root`` None or "": off."""

    def __init__(self, root: str | os.PathLike[str] | None):
        self.root = os.fspath(root) if root else None

    @property
    def enabled(self) -> bool:
        return self.root is not None

    def path(self, key: CacheKey, suffix: str) -> str:
        assert self.root is not None
        return os.path.join(self.root, key.name + suffix)

    # --- JSON ---------------------------------------------------------------------

    def load_json(self, key: CacheKey) -> Any | None:
        """The document stored under ``key``, or None (absent, off, or bad:
        a bad entry is removed with a warning)."""
        if self.root is None:
            return None
        path = self.path(key, ".json")
        try:
            with open(path, "rb") as f:
                raw = f.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.warning("prepared cache: cannot read %s (%s)", path, exc)
            return None
        try:
            entry = json.loads(raw)
            body = json.dumps(entry["payload"], sort_keys=True, separators=(",", ":"))
            sound = (entry["key"] == key.canonical
                     and entry["sha256"] == hashlib.sha256(body.encode()).hexdigest())
        except (ValueError, KeyError, TypeError):
            sound = False
        if not sound:
            self._discard(path, "torn or corrupt")
            return None
        return entry["payload"]

    def store_json(self, key: CacheKey, obj: Any) -> bool:
        """Store ``obj`` (JSON-serializable) under ``key``; False when off or on
        an I/O error (logged)."""
        body = json.dumps(obj, sort_keys=True, separators=(",", ":"))
        entry = {"key": key.canonical, "sha256": hashlib.sha256(body.encode()).hexdigest(),
                 "payload": obj}
        data = json.dumps(entry, sort_keys=True).encode()
        return self._write(key, ".json", lambda f: f.write(data))

    # --- tensors ------------------------------------------------------------------

    def load_tensors(self, key: CacheKey) -> dict[str, Any] | None:
        """The tensors stored under ``key``, memory-mapped (``torch.load(mmap=True)``:
        pages are read when touched; writing a tensor copies only its pages), or
        None (absent, off, or bad: removed with a warning). Each tensor's xxh3
        is checked here, which reads it once (from the page cache when warm)."""
        if self.root is None:
            return None
        import torch

        path = self.path(key, ".pt")
        if not os.path.exists(path):
            return None
        try:
            entry = torch.load(path, mmap=True, weights_only=True, map_location="cpu")
            tensors = entry["tensors"]
            sound = (entry["key"] == key.canonical and isinstance(tensors, dict)
                     and entry["xxh3_64"] == {n: _digest(t) for n, t in tensors.items()})
        except PermissionError as exc:
            log.warning("prepared cache: cannot read %s (%s)", path, exc)
            return None
        except (OSError, RuntimeError, ValueError, KeyError, TypeError, EOFError,
                pickle.UnpicklingError) as exc:  # what torch.load raises on a bad file
            # (mmap of a truncated zip: OSError EINVAL)
            log.debug("prepared cache: %s unreadable: %s", path, exc)
            sound = False
        if not sound:
            self._discard(path, "torn, corrupt or of another key")
            return None
        return tensors

    def store_tensors(self, key: CacheKey, tensors: dict[str, Any]) -> bool:
        """Store named CPU tensors (plain strided layout) under ``key``; False
        when off or on an I/O error."""
        import torch

        tensors = {n: t.detach().contiguous() for n, t in tensors.items()}
        entry = {"key": key.canonical, "tensors": tensors,
                 "xxh3_64": {n: _digest(t) for n, t in tensors.items()}}
        return self._write(key, ".pt", lambda f: torch.save(entry, f))

    # --- directories ----------------------------------------------------------------

    def load_dir(self, key: CacheKey) -> str | None:
        """The directory stored under ``key`` if every file in it is as
        stored (sizes and xxh3 in its manifest), else None (absent, off, or
        bad: removed with a warning). Reading the files warms their pages for
        whoever opens them next."""
        if self.root is None:
            return None
        path = self.path(key, ".d")
        if not os.path.isdir(path):
            return None
        try:
            with open(os.path.join(path, MANIFEST), "rb") as f:
                manifest = json.loads(f.read())
            files = manifest["files"]
            sound = manifest["key"] == key.canonical and files == _dir_sums(path, files)
        except (OSError, ValueError, KeyError, TypeError):
            sound = False
        if not sound:
            self._discard(path, "torn, corrupt or of another key")
            return None
        return path

    def store_dir(self, key: CacheKey, fill) -> str | None:
        """Store the files ``fill(directory)`` writes into an empty directory
        under ``key``; returns the entry's path, or None when off or on an
        I/O error (logged; ``fill``'s own errors propagate)."""
        if self.root is None:
            return None
        root = self.root

        def stage(made: list[str]) -> None:
            made.append(tempfile.mkdtemp(prefix=f".{key.name}.", suffix=".tmp", dir=root))
            os.chmod(made[0], 0o755)
            fill(made[0])
            names = sorted(os.listdir(made[0]))
            with open(os.path.join(made[0], MANIFEST), "w", encoding="utf-8") as f:
                json.dump({"key": key.canonical, "files": _dir_sums(made[0], names)}, f)
            for name in [*names, MANIFEST]:
                _fsync_file(os.path.join(made[0], name))

        path = self.path(key, ".d")
        return path if self._install(key, path, stage) else None

    # --- files --------------------------------------------------------------------

    def _write(self, key: CacheKey, suffix: str, fill) -> bool:
        if self.root is None:
            return False
        root = self.root

        def stage(made: list[str]) -> None:
            fd, tmp = tempfile.mkstemp(prefix=f".{key.name}.", suffix=".tmp", dir=root)
            made.append(tmp)
            os.fchmod(fd, 0o644)  # mkstemp's 0600 would hide the entry from other users
            with os.fdopen(fd, "wb") as f:
                fill(f)
                f.flush()
                os.fsync(f.fileno())

        return self._install(key, self.path(key, suffix), stage)

    def _install(self, key: CacheKey, path: str, stage) -> bool:
        """``stage(made)`` writes a temporary file or directory in the root
        (its path appended to ``made``), renamed over ``path`` once whole."""
        assert self.root is not None
        made: list[str] = []
        try:
            os.makedirs(self.root, exist_ok=True)
            stage(made)
            if os.path.isdir(path):
                _remove(path)
            os.replace(made.pop(), path)
            _fsync_dir(self.root)
        except OSError as exc:
            log.warning("prepared cache: cannot write %s (%s); starting without it", path, exc)
            return False
        finally:
            for tmp in made:
                _remove(tmp)
        self._prune(key.kind, keep=path)
        return True

    def _discard(self, path: str, why: str) -> None:
        log.warning("prepared cache: %s is %s; rebuilding it", path, why)
        _remove(path)

    def _prune(self, kind: str, keep: str) -> None:
        """Keep the newest ``KEEP_PER_KIND`` (``KEEP``) entries of ``kind``
        (old keys pile up otherwise)."""
        assert self.root is not None
        try:
            names = [os.path.join(self.root, n) for n in os.listdir(self.root)
                     if re.fullmatch(re.escape(kind) + r"-[0-9a-f]{32}\.\w+", n)]
            names.sort(key=os.path.getmtime, reverse=True)
        except OSError:
            return
        for old in names[KEEP.get(kind, KEEP_PER_KIND):]:
            if old != keep:
                _remove(old)


def _digest(tensor) -> int:
    """xxh3-64 of a tensor's bytes (any dtype: viewed as bytes)."""
    import torch
    import xxhash

    flat = tensor.reshape(-1)
    return xxhash.xxh3_64_intdigest(flat.view(torch.uint8).numpy()) if flat.numel() else 0


def _dir_sums(root: str, names) -> dict[str, list[int]]:
    """[size, xxh3-64] of each file ``names`` lists under ``root``."""
    import xxhash

    sums = {}
    for name in names:
        digest = xxhash.xxh3_64()
        with open(os.path.join(root, name), "rb") as f:
            while chunk := f.read(_HASH_CHUNK):
                digest.update(chunk)
        sums[name] = [os.path.getsize(os.path.join(root, name)), digest.intdigest()]
    return sums


def _fsync_file(path: str) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
        return
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        log.warning("prepared cache: cannot remove %s (%s)", path, exc)


def _fsync_dir(path: str) -> None:
    """Make the rename itself durable (a crash right after keeps the new entry)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a directory; the rename still stands
    finally:
        os.close(fd)


def checkpoint_id(asset_dir: str, cache: PreparedCache | None = None) -> str:
    """A content id of the checkpoint files under ``asset_dir``: sha256 over
    each file's relative path and content. Reused from ``cache`` while every
    file's (path, size, mtime, inode) is unchanged, so the files are read
    once per checkpoint version, not at every start."""
    files = _files(asset_dir)
    stats = [(rel, *_stat(os.path.join(asset_dir, rel))) for rel in files]
    key = CacheKey.of("checkpoint-id", dir=os.path.realpath(asset_dir), files=stats)
    if cache is not None:
        known = cache.load_json(key)
        if isinstance(known, str):
            return known
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode() + b"\0")
        with open(os.path.join(asset_dir, rel), "rb") as f:
            while chunk := f.read(_HASH_CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    value = digest.hexdigest()
    if cache is not None:
        cache.store_json(key, value)
    return value


def _stat(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns, st.st_ino


def _files(root: str) -> list[str]:
    out = []
    for here, dirs, files in os.walk(root):
        dirs.sort()
        out += [os.path.relpath(os.path.join(here, f), root) for f in sorted(files)]
    return out
