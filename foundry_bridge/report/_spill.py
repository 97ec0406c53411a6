"""Columns on disk: fixed-width numpy columns of a report's queries, written and read by row range.

A report on a million queries has dozens of per-query columns (every local metric, and score / passed / threshold
/ label / status per Foundry metric); held in memory they are what grows with the dataset. ``Spill`` keeps each
column in its own temporary file (positional reads and writes, no shared file offset); a step reads one column
whole (a mean, a median, a histogram, a pairing: 8 bytes a query for the one column) or a block of rows of every
column (the per-query rows). The files go when the ``Spill`` is closed or collected.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator

import numpy as np

__all__ = ["BLOCK", "Spill", "blocks"]

BLOCK = 65_536  # rows read or written at once by the report's block-wise steps


def blocks(n: int, size: int | None = None) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` row ranges covering ``n`` rows (``size`` default: ``BLOCK``)."""
    size = size or BLOCK
    for lo in range(0, n, size):
        yield lo, min(n, lo + size)


class Spill:
    """Named columns in a temporary directory. ``create`` makes an ``n``-row column filled with a value; ``write``
    puts values at a row offset (growing the column); ``read`` returns a writable copy of a row range."""

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="foundry-bridge-columns-")
        self._fds: dict[str, tuple[int, np.dtype]] = {}
        self._rows: dict[str, int] = {}
        self._finalizer = weakref.finalize(self, _remove, self.dir, self._fds)

    def __contains__(self, key: str) -> bool:
        return key in self._fds

    def rows(self, key: str) -> int:
        return self._rows[key]

    def _fd(self, key: str, dtype: np.dtype | type | str) -> tuple[int, np.dtype]:
        if key not in self._fds:
            path = os.path.join(self.dir, f"{len(self._fds)}.col")
            self._fds[key] = (os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600), np.dtype(dtype))
            self._rows[key] = 0
        return self._fds[key]

    def create(self, key: str, n: int, dtype: np.dtype | type | str, fill: float | int | bool) -> None:
        """An ``n``-row column of ``fill``."""
        self._fd(key, dtype)
        for lo, hi in blocks(n):
            self.write(key, lo, np.full(hi - lo, fill, dtype))
        self._rows[key] = n

    def write(self, key: str, lo: int, values: np.ndarray) -> None:
        """``values`` at rows ``lo ..``; a new key makes a column of ``values``' dtype."""
        fd, dtype = self._fd(key, values.dtype)
        data = np.ascontiguousarray(values, dtype).tobytes()
        offset, done = lo * dtype.itemsize, 0
        try:
            while done < len(data):
                done += os.pwrite(fd, data[done:], offset + done)
        except OSError as exc:  # a full temporary disk: say which folder (TMPDIR moves it)
            raise OSError(exc.errno, f"{exc.strerror} (the report's temporary columns; set TMPDIR)", self.dir) from exc
        self._rows[key] = max(self._rows[key], lo + len(values))

    def read(self, key: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Rows ``lo`` to ``hi`` (default: the end) of a column, as a writable array."""
        fd, dtype = self._fds[key]
        hi = self._rows[key] if hi is None else min(hi, self._rows[key])
        size = max(hi - lo, 0) * dtype.itemsize
        out = bytearray(size)
        view, done = memoryview(out), 0
        while done < size:
            got = os.preadv(fd, [view[done:]], lo * dtype.itemsize + done)
            if got <= 0:
                raise OSError(f"column file of {key!r} is shorter than its rows")
            done += got
        return np.frombuffer(out, dtype)

    def close(self) -> None:
        self._finalizer()


def _remove(path: str, fds: dict[str, tuple[int, np.dtype]]) -> None:
    for fd, _ in fds.values():
        os.close(fd)
    fds.clear()
    shutil.rmtree(path, ignore_errors=True)
