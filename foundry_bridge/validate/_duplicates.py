"""Duplicate and near-duplicate ``query_id`` detection in constant memory: a fixed-size Bloom filter during the
pass, then an exact second pass over the rows whose id may have been seen before (usually none).

The filter holds each id's *near key* (``near_key``: zero-width characters dropped, surrounding whitespace stripped,
case folded, NFC), so one filter finds both exact repeats (an error) and ids that differ only by case, surrounding
whitespace, Unicode normalization or zero-width characters (a warning naming both ids and lines).
"""

from __future__ import annotations

import unicodedata
from array import array
from collections.abc import Callable, Iterable
from typing import Any

from ._rules import Context

__all__ = ["DuplicateIds", "IdFilter", "Rescan", "is_id", "near_differences", "near_hash", "near_key"]

_BLOOM_BITS = 1 << 27  # 16 MiB of filter, whatever the number of rows
_BLOOM_PROBES = 8  # bits per id; false candidates stay below 1 in 10,000 datasets of a million distinct ids
_CHUNK = 1 << 12  # ids hashed into the filter per numpy step (its temporaries: ~1 MB)

# the second pass: given the candidate hashes, yield (query id, line) for every row that may hold one of them
Rescan = Callable[[set[int]], Iterable[tuple[Any, int | None]]]


def is_id(qid: Any) -> bool:
    """A query id counted for duplicates: a string or an integer (not a bool)."""
    return isinstance(qid, str | int) and not isinstance(qid, bool)


_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def near_key(text: str) -> str:
    """The id as a person reads it: zero-width characters (and the soft hyphen) dropped, surrounding whitespace
    stripped, case folded, NFC. Two ids with one near key but different spellings are near duplicates."""
    if text.isascii():
        return text.strip().lower()
    return unicodedata.normalize("NFC", text.translate(_ZERO_WIDTH).strip().casefold())


def near_hash(qid: Any) -> int:
    return hash(near_key(str(qid)))


def near_differences(a: str, b: str) -> str:
    """What tells two ids of one near key apart: surrounding whitespace, zero-width characters, Unicode
    normalization (NFC vs NFD), case."""
    how = []
    steps = (
        ("surrounding whitespace", str.strip),
        ("zero-width characters", lambda t: t.translate(_ZERO_WIDTH)),
        ("Unicode normalization (NFC vs NFD)", lambda t: unicodedata.normalize("NFC", t)),
    )
    for name, step in steps:
        if step(a) != a or step(b) != b:
            how.append(name)
            a, b = step(a), step(b)
    if a != b:
        how.append("case")
    return " and ".join(how)


class IdFilter:
    """Pass 1 of duplicate query-id detection: a fixed-size Bloom filter over the ids' 64-bit hashes.

    ``add`` buffers a hash; every ``_CHUNK`` hashes are tested against the filter and set in it with numpy. A hash
    whose bits were all set already, or that repeats within its chunk, is kept as a candidate: every repeated id is
    one, and an id seen once is one only by chance (a false positive, resolved by the second pass).
    """

    def __init__(self, bits: int | None = None, probes: int | None = None) -> None:
        self.bits = _BLOOM_BITS if bits is None else bits
        self.probes = _BLOOM_PROBES if probes is None else probes
        self.table: Any = None  # numpy uint8[bits / 8], allocated at the first flush
        self.pending = array("q")
        self.positive = array("q")  # candidate hashes, unique per chunk; compacted as it doubles
        self.compact_at = _CHUNK

    def add(self, h: int) -> None:
        self.pending.append(h)
        if len(self.pending) >= _CHUNK:
            self._flush()

    def _flush(self) -> None:
        import numpy as np

        if not self.pending:
            return
        if self.table is None:
            self.table = np.zeros((self.bits + 7) // 8, dtype=np.uint8)
        h = np.frombuffer(self.pending, dtype=np.uint64)
        self.pending = array("q")
        # double hashing: probe i is (low 32 bits + i * odd high 32 bits) mod the filter size
        step = (h >> np.uint64(32)) | np.uint64(1)
        probe = np.arange(self.probes, dtype=np.uint64)[:, None]
        pos = ((h & np.uint64(0xFFFFFFFF)) + probe * step) % np.uint64(self.bits)
        byte = (pos >> np.uint64(3)).astype(np.intp)
        mask = np.left_shift(np.uint8(1), (pos & np.uint64(7)).astype(np.uint8))
        seen = np.all(self.table[byte] & mask, axis=0)
        hs = np.sort(h)
        again = hs[1:][hs[1:] == hs[:-1]]  # ids repeated within this chunk
        cand = np.concatenate([h[seen], again])
        if cand.size:
            self.positive.frombytes(np.unique(cand).tobytes())
            if len(self.positive) >= self.compact_at:  # one entry per repeated id, not per repeated row
                self.positive = array("q", np.unique(np.frombuffer(self.positive, dtype=np.int64)).tobytes())
                self.compact_at = 2 * len(self.positive) + _CHUNK
        np.bitwise_or.at(self.table, byte.ravel(), mask.ravel())

    def candidates(self) -> set[int]:
        """The hashes (as Python's signed ``hash`` values) of every id that may occur more than once."""
        import numpy as np

        self._flush()
        self.table = None
        if not self.positive:
            return set()
        return set(np.unique(np.frombuffer(self.positive, dtype=np.int64)).tolist())


class DuplicateIds:
    """Both passes: ``add`` every row's id during the pass, then ``report`` runs the second pass if needed."""

    def __init__(self) -> None:
        self.ids = IdFilter()

    def add(self, qid: Any) -> None:
        if type(qid) is str and qid.isascii():  # the usual case, inlined
            self.ids.add(hash(qid.strip().lower()))
        elif is_id(qid):
            self.ids.add(near_hash(qid))

    def report(self, rescan: Rescan | None, ctx: Context) -> None:
        candidates = self.ids.candidates()
        if candidates and rescan is not None:
            self._duplicate_ids(rescan, candidates, ctx)

    def _duplicate_ids(self, rescan: Rescan, candidates: set[int], ctx: Context) -> None:
        """Pass 2: the exact first line of each candidate id, its later rows duplicates; the first id of each near
        key, a later different spelling a near duplicate; false candidates vanish."""
        first_line: dict[str, int | None] = {}  # only candidate ids: usually none, at most the repeated ones
        first_near: dict[str, tuple[str, int | None]] = {}  # near key → its first id and line
        try:
            for qid, line in rescan(candidates):
                if not is_id(qid):
                    continue
                key = str(qid)
                near = near_key(key)
                if hash(near) not in candidates:
                    continue
                if key in first_line:
                    ctx.add("duplicate_query_id", "query_id", line=line, first=first_line[key], id=key)
                    continue
                first_line[key] = line
                other, at = first_near.setdefault(near, (key, line))
                if other != key:
                    how = near_differences(key, other)
                    ctx.add("near_duplicate_query_id", "query_id", line=line, id=key, other=other, first=at, how=how)
        except OSError as exc:
            ctx.add("missing_file/reread", reason=exc.strerror)
