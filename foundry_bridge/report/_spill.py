"""Columns on disk: fixed-width numpy columns of a report's queries, written and read by row range.

A report on a million queries has dozens of per-query columns (every local metric, and score / passed / threshold
/ label / status per Foundry metric); held in memory they are what grows with the dataset. ``Spill`` keeps each
column in its own temporary file, opened for each read or write (a compare of many runs holds hundreds of columns:
no file descriptor stays open, positional reads and writes, no shared offset); a step reads one column
whole (a mean, a median, a histogram, a pairing: 8 bytes a query for the one column) or a block of rows of every
column (the per-query rows). The files go when the ``Spill`` is closed or collected.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping

import numpy as np

__all__ = ["BLOCK", "BlockBuffer", "CellColumns", "Spill", "blocks"]

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
        self._columns: dict[str, tuple[str, np.dtype]] = {}
        self._rows: dict[str, int] = {}
        self._finalizer = weakref.finalize(self, shutil.rmtree, self.dir, ignore_errors=True)

    def __contains__(self, key: str) -> bool:
        return key in self._columns

    def rows(self, key: str) -> int:
        return self._rows[key]

    def _column(self, key: str, dtype: np.dtype | type | str) -> tuple[str, np.dtype]:
        if key not in self._columns:
            self._columns[key] = (os.path.join(self.dir, f"{len(self._columns)}.col"), np.dtype(dtype))
            self._rows[key] = 0
        return self._columns[key]

    def create(self, key: str, n: int, dtype: np.dtype | type | str, fill: float | int | bool) -> None:
        """An ``n``-row column of ``fill``."""
        self._column(key, dtype)
        for lo, hi in blocks(n):
            self.write(key, lo, np.full(hi - lo, fill, dtype))
        self._rows[key] = n

    def write(self, key: str, lo: int, values: np.ndarray) -> None:
        """``values`` at rows ``lo ..``; a new key makes a column of ``values``' dtype."""
        path, dtype = self._column(key, values.dtype)
        data = np.ascontiguousarray(values, dtype).tobytes()
        offset, done = lo * dtype.itemsize, 0
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while done < len(data):
                    done += os.pwrite(fd, data[done:], offset + done)
            finally:
                os.close(fd)
        except OSError as exc:  # a full temporary disk: say which folder (TMPDIR moves it)
            raise OSError(exc.errno, f"{exc.strerror} (the report's temporary columns; set TMPDIR)", self.dir) from exc
        self._rows[key] = max(self._rows[key], lo + len(values))

    def read(self, key: str, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Rows ``lo`` to ``hi`` (default: the end) of a column, as a writable array."""
        path, dtype = self._columns[key]
        hi = self._rows[key] if hi is None else min(hi, self._rows[key])
        size = max(hi - lo, 0) * dtype.itemsize
        out = bytearray(size)
        view, done = memoryview(out), 0
        fd = os.open(path, os.O_RDONLY)
        try:
            while done < size:
                got = os.preadv(fd, [view[done:]], lo * dtype.itemsize + done)
                if got <= 0:
                    raise OSError(0, "a column file is shorter than its rows", path)
                done += got
        finally:
            os.close(fd)
        return np.frombuffer(out, dtype)

    def close(self) -> None:
        self._finalizer()


class BlockBuffer:
    """One block of rows of a ``Spill``'s columns in memory, for setting cells row by row: cells that come in row
    order read and write each block once; a cell of another block first writes this one back (``flush``)."""

    def __init__(self, spill: Spill) -> None:
        self.spill = spill
        self._lo = -1
        self._block: dict[str, np.ndarray] = {}

    def at(self, row: int) -> int:
        """Make ``row``'s block the one in memory; returns ``row``'s index in it."""
        lo = row - row % BLOCK
        if lo != self._lo:
            self.flush()
            self._lo = lo
        return row - lo

    def column(self, key: str) -> np.ndarray:
        """The block's rows of column ``key`` (read from the spill at its first use in the block)."""
        values = self._block.get(key)
        if values is None:
            values = self._block[key] = self.spill.read(key, self._lo, self._lo + BLOCK)
        return values

    def flush(self) -> None:
        """Write the block back (the next read of the spill sees every cell set)."""
        for key, values in self._block.items():
            self.spill.write(key, self._lo, values)
        self._block, self._lo = {}, -1


class CellColumns(Mapping[str, np.ndarray]):
    """Float64 columns of ``n`` rows (NaN where unset), set cell by cell through a ``BlockBuffer``, read back one
    whole column at a time: ``columns[key]``."""

    def __init__(self, n: int) -> None:
        self.n, self.spill = n, Spill()
        self._keys: list[str] = []
        self._buffer = BlockBuffer(self.spill)

    def set(self, key: str, row: int, value: float) -> None:
        j = self._buffer.at(row)
        if key not in self.spill:
            self.spill.create(key, self.n, "float64", np.nan)
            self._keys.append(key)
        self._buffer.column(key)[j] = value

    def flush(self) -> None:
        self._buffer.flush()

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.spill:
            raise KeyError(key)
        self.flush()
        return self.spill.read(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self.spill

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)
