"""Atomic file writes and fast JSON: nothing half-written, ever."""

from __future__ import annotations

import contextlib
import errno
import gc
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import orjson

__all__ = [
    "ENGINE_MEMORY",
    "atomic_open",
    "dumps",
    "gc_paused",
    "held",
    "loads",
    "remove_stale",
    "sha256_file",
    "write_json",
    "write_jsonl",
]

# the query engine's memory limit for one command (``columns.connect``), named in its out-of-memory error
ENGINE_MEMORY = os.environ.get("FOUNDRY_BRIDGE_DUCKDB_MEMORY", "128MB")


def dumps(obj: Any, *, indent: bool = False) -> bytes:
    """JSON bytes; NaN is written as null (JSON has no NaN)."""
    option = orjson.OPT_SERIALIZE_NUMPY | (orjson.OPT_INDENT_2 if indent else 0)
    return orjson.dumps(obj, option=option)


loads = orjson.loads


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the block (restored after): readers that build millions of acyclic
    containers would otherwise have every collection rescan them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _new_file_mode() -> int:
    """The mode a plain ``open()`` gives a new file: 0o666 minus the process umask (read without changing it
    where the platform allows, so no other thread ever sees a zero umask)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return 0o666 & ~int(line.split()[1], 8)
    umask = os.umask(0o077)  # fallback: a momentary, restrictive umask is harmless to other threads
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike[str], mode: str = "wb", *, durable: bool = True, private: bool = False, sweep: bool = False
) -> Iterator[IO[Any]]:
    """Write to a temporary file beside ``path`` and rename it into place only if the block succeeds.

    ``durable`` fsyncs the file before the rename and the folder after it, so a crash leaves either the old
    file or the whole new one (off for caches, where a lost entry is only a miss). The file keeps the mode of the
    file it replaces, else gets the usual mode for a new file; ``private`` keeps it 0600. An ``OSError`` (full
    disk, no permission) propagates with ``filename`` set to ``path``, and no temporary file is left behind.
    The temporary file is ``held`` while it is written; ``sweep`` first removes the stale temporaries of ``path``
    that a killed writer left (``remove_stale``).
    """
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file stands where a folder of the path should be
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(target.parent)) from None
    import tempfile  # imported where used (with hashlib below): start-up stays cheap for commands that write nothing

    if sweep:
        remove_stale(target.parent, f".{target.name}.*.tmp")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        _hold(fd)
        with os.fdopen(fd, mode) as fh:
            cast(Any, fh).raw.name = tmp  # a writer that writes by path (the engine's COPY) writes there
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        if not private:  # mkstemp creates 0600
            try:
                file_mode = stat.S_IMODE(target.stat().st_mode)
            except FileNotFoundError:
                file_mode = _new_file_mode()
            os.chmod(tmp, file_mode)
        os.replace(tmp, target)
        if durable:
            _fsync_dir(target.parent)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename in (None, tmp):
            exc.filename, exc.filename2 = str(target), None  # name the file the user asked for, not the temp
        raise


STALE_SECONDS = 2.0  # a temporary untouched this long and held by no process is a killed writer's


def _hold(fd: int) -> None:
    """Mark the file or folder open as ``fd`` as being written until ``fd`` is closed: an OS-level lock (``flock``,
    released by the operating system when the process dies). Where there is none (Windows), an open file cannot
    be removed by another process anyway."""
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)  # only ``remove_stale``'s check can hold it, for an instant


@contextlib.contextmanager
def held(folder: Path) -> Iterator[None]:
    """``folder`` (a temporary folder being filled) marked as being written for the block (``_hold``)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a folder cannot be opened on this platform: ``remove_stale`` leaves such folders alone
        yield
        return
    try:
        _hold(fd)
        yield
    finally:
        os.close(fd)


def _is_held(path: Path) -> bool:
    """Whether a live process holds ``path`` (``_hold``); True when that cannot be told (a folder on Windows)."""
    try:
        import fcntl
    except ImportError:
        return path.is_dir()
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # and our lock with it
    return False


def remove_stale(folder: Path, pattern: str) -> int:
    """Remove the temporaries (files or folders) in ``folder`` named like ``pattern`` that no live process holds
    (``_hold``) and that are older than ``STALE_SECONDS``: what a killed writer left. Returns how many."""
    import shutil
    import time

    n = 0
    with contextlib.suppress(OSError):
        for path in folder.glob(pattern):
            try:
                age = time.time() - path.lstat().st_mtime
            except OSError:
                continue
            if age < STALE_SECONDS or path.is_symlink() or _is_held(path):
                continue
            try:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
            except OSError:  # in use after all (Windows), or removed by another process meanwhile
                continue
            n += 1
    return n


def _fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (a no-op where directories cannot be opened, as on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    """Write ``obj`` as indented JSON, atomically."""
    with atomic_open(path) as fh:
        fh.write(dumps(obj, indent=True) + b"\n")


def write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> int:
    """Write one JSON document per line, atomically; returns the number of lines."""
    n = 0
    with atomic_open(path) as fh:
        for row in rows:
            fh.write(dumps(row) + b"\n")
            n += 1
    return n


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
