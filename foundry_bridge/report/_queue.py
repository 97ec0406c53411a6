"""The labelling queue: holes spilled to disk while the records stream by, ranked, and written.

A hole is a retrieved document in a query's top K without any label for that query (repeated ids count once, at
their first position). Documents are ranked by priority = Σ 1/rank over their appearances (summed in dataset order),
then by count, best rank, id; a document's queries by (rank, query id).

Memory: the holes go to ``_PARTS`` temporary files, a document always to the same one (by its hash), so each file
can be ranked alone: the report holds one partition's holes at a time (1/64 of them) and the best ``LIST_CAP``
documents of each, never every distinct document id. Only writing the whole queue (``iter_pairs``) reads every
partition at once.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_open, dumps, loads
from ..errors import InputError
from ..metrics._arrays import Texts
from ._model import LIST_CAP, Report

__all__ = ["LABEL_PLACEHOLDER", "Holes", "SpilledTexts", "write_labelling_queue"]

LABEL_PLACEHOLDER = "?"
_PARTS = 64  # partition files of the holes
_FLUSH = 1_024  # holes buffered per partition before they are written (64k in all)


class SpilledTexts:
    """Strings (or None) appended to a temporary file, 8 bytes of offset each in memory; read back one at a time."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 (closed with the object)
        self._ends = array("q")
        self._none = array("b")
        self._size = 0

    def append(self, text: str | None) -> None:
        if text is not None:
            data = text.encode("utf-8", "surrogatepass")
            self._file.write(data)
            self._size += len(data)
        self._none.append(text is None)
        self._ends.append(self._size)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, i: int) -> str | None:
        if self._none[i]:
            return None
        start = self._ends[i - 1] if i else 0
        self._file.flush()
        return os.pread(self._file.fileno(), self._ends[i] - start, start).decode("utf-8", "surrogatepass")


@dataclass
class _Part:
    """One partition's holes: documents coded in order of first appearance, with rank and query row per hole."""

    doc_ids: list[str]
    docs: np.ndarray  # int32 codes into doc_ids
    ranks: np.ndarray
    rows: np.ndarray

    def stats(self) -> dict[str, np.ndarray]:
        """Per document: count, best rank, rank sum and priority (Σ 1/rank, added in dataset order)."""
        n = len(self.doc_ids)
        best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, self.docs, self.ranks)
        priority = np.zeros(n, dtype=np.float64)
        np.add.at(priority, self.docs, 1.0 / self.ranks)  # unbuffered, in dataset order: the same sum as Python's
        return {
            "count": np.bincount(self.docs, minlength=n),
            "best": best,
            "rank_sum": np.bincount(self.docs, weights=self.ranks.astype(np.float64), minlength=n),
            "priority": priority,
        }


def _queue_order(ids: list[str], stats: dict[str, np.ndarray]) -> np.ndarray:
    """Documents by priority (desc), count (desc), best rank, id (``_Doc.queue_key`` merges partitions so)."""
    return np.lexsort((np.array(ids, dtype=str), stats["best"], -stats["count"], -stats["priority"]))


@dataclass
class _Doc:
    """A ranked document: its statistics and its holes as (rank, query row), in (rank, query id) order."""

    doc_id: str
    count: int
    best: int
    rank_sum: float
    priority: float
    holes: list[tuple[int, int]]

    def queue_key(self) -> tuple[float, int, int, str]:
        """Queue order across partitions: priority (desc), count (desc), best rank, id (``_queue_order``'s)."""
        return -self.priority, -self.count, self.best, self.doc_id


class Holes:
    """Every (document, rank, query row) hole, spilled in partitions by document; ``query_ids`` (every query, in
    row order) is set by the reader, ``query_text`` holds each query's text on disk."""

    def __init__(self) -> None:
        self.query_ids: Texts = Texts()
        self.query_text = SpilledTexts()
        self.n_holes = 0
        self._files = [tempfile.TemporaryFile() for _ in range(_PARTS)]  # noqa: SIM115
        self._buffers: list[tuple[list[str], array[int], array[int]]] = [
            ([], array("i"), array("i")) for _ in range(_PARTS)
        ]
        self._summary: tuple[int, int, list[_Doc]] | None = None

    def add(self, row: int, query: str | None, holes: list[tuple[int, str]]) -> None:
        """One query's holes as ``(rank, document id)``; called once per query, in row order."""
        self.query_text.append(query)
        self.n_holes += len(holes)
        for rank, doc in holes:
            p = hash(doc) % _PARTS
            docs, ranks, rows = self._buffers[p]
            docs.append(doc)
            ranks.append(rank)
            rows.append(row)
            if len(docs) >= _FLUSH:
                self._flush(p)

    def _flush(self, p: int) -> None:
        docs, ranks, rows = self._buffers[p]
        if docs:
            self._files[p].write(dumps([docs, ranks.tobytes().hex(), rows.tobytes().hex()]) + b"\n")
            self._buffers[p] = ([], array("i"), array("i"))

    def _part(self, p: int) -> _Part:
        """Partition ``p`` read back, in dataset order."""
        self._flush(p)
        f = self._files[p]
        f.seek(0)
        code: dict[str, int] = {}
        doc_ids: list[str] = []
        docs, ranks, rows = array("i"), array("i"), array("i")
        for line in f:
            names, r, q = loads(line)
            for d in names:
                c = code.get(d)
                if c is None:
                    c = code[d] = len(doc_ids)
                    doc_ids.append(d)
                docs.append(c)
            ranks.frombytes(bytes.fromhex(r))
            rows.frombytes(bytes.fromhex(q))
        f.seek(0, os.SEEK_END)
        as_np = [np.frombuffer(a, np.int32) if len(a) else np.zeros(0, np.int32) for a in (docs, ranks, rows)]
        return _Part(doc_ids, *as_np)

    def _key(self, rank: int, row: int) -> tuple[int, bytes, int]:
        return rank, self.query_ids[row].encode("utf-8", "surrogatepass"), row

    def _docs(self, part: _Part, stats: dict[str, np.ndarray], chosen: list[int], limit: int | None) -> list[_Doc]:
        """The ``chosen`` documents of a partition, each with its first ``limit`` holes (all: None)."""
        wanted = {c: i for i, c in enumerate(chosen)}
        holes: list[list[tuple[int, int]]] = [[] for _ in chosen]
        mine = np.flatnonzero(np.isin(part.docs, np.array(chosen, np.int32)))
        for d, rank, row in zip(*(a[mine].tolist() for a in (part.docs, part.ranks, part.rows)), strict=True):
            holes[wanted[d]].append((rank, row))
        out = []
        for c, hs in zip(chosen, holes, strict=True):
            hs.sort(key=lambda h: self._key(*h))
            out.append(
                _Doc(
                    part.doc_ids[c],
                    int(stats["count"][c]),
                    int(stats["best"][c]),
                    float(stats["rank_sum"][c]),
                    float(stats["priority"][c]),
                    hs if limit is None else hs[:limit],
                )
            )
        return out

    def summary(self, limit: int = LIST_CAP) -> tuple[int, int, list[_Doc]]:
        """``(distinct documents, most holes of one document, the ``limit`` most urgent documents)``: each partition
        ranked alone, its best ``limit`` kept, then those merged in queue order."""
        if self._summary is None or len(self._summary[2]) < min(limit, self._summary[0]):
            n_docs, most = 0, 0
            best: list[_Doc] = []
            for p in range(_PARTS):
                part = self._part(p)
                if not part.doc_ids:
                    continue
                stats = part.stats()
                n_docs += len(part.doc_ids)
                most = max(most, int(stats["count"].max()))
                best += self._docs(part, stats, _queue_order(part.doc_ids, stats)[:limit].tolist(), limit)
            best.sort(key=_Doc.queue_key)
            self._summary = (n_docs, most, best[:limit])
        return self._summary

    @property
    def n_docs(self) -> int:
        return self.summary()[0]

    def truncated(self, limit: int = LIST_CAP) -> bool:
        """Does the report's list (``limit`` documents, ``limit`` queries each) leave holes out?"""
        n_docs, most, _ = self.summary(limit)
        return n_docs > limit or most > limit

    def iter_pairs(self) -> Iterator[tuple[str, str, int, float, int]]:
        """Every hole in queue order: ``(document id, query id, rank, priority, row)`` (every partition read)."""
        docs: list[_Doc] = []
        for p in range(_PARTS):
            part = self._part(p)
            if part.doc_ids:
                stats = part.stats()
                docs += self._docs(part, stats, list(range(len(part.doc_ids))), None)
        docs.sort(key=_Doc.queue_key)
        for d in docs:
            for rank, row in d.holes:
                yield d.doc_id, self.query_ids[row], rank, d.priority, row

    def entries(self, limit: int = LIST_CAP) -> list[dict[str, Any]]:
        """The ``limit`` most urgent documents as ``HoleEntry`` fields, each with its first ``limit`` queries."""
        return [
            {
                "document_id": d.doc_id,
                "count": d.count,
                "best_rank": d.best,
                "mean_rank": d.rank_sum / d.count,
                "priority": d.priority,
                "queries": [{"query_id": self.query_ids[row], "rank": rank} for rank, row in d.holes],
            }
            for d in self.summary(limit)[2][:limit]
        ]


def _pairs(report: Report) -> Iterator[tuple[str, str, int, float, str | None]]:
    """(document, query id, rank, priority, query text) in queue order: the whole queue when the report carries
    its holes, else the queue the report lists."""
    holes: Holes | None = report._holes
    if holes is not None and holes.truncated():
        for doc, qid, rank, priority, row in holes.iter_pairs():
            yield doc, qid, rank, priority, holes.query_text[row]
        return
    if holes is not None:
        text = {holes.query_ids[row]: holes.query_text[row] for d in holes.summary()[2] for _, row in d.holes}
    else:
        text = {q.query_id: q.query for q in report.queries}
    for hole in report.labelling_queue:
        for where in hole.queries:
            qid = str(where["query_id"])
            yield hole.document_id, qid, int(where["rank"]), hole.priority, text.get(qid)


def write_labelling_queue(report: Report, path: str | os.PathLike[str], *, fmt: str | None = None) -> int:
    """Write one line per (query, unlabelled document), documents in priority order; returns the line count.

    ``qrels`` (default; any extension but ``.jsonl``): ``query_id 0 document_id ?`` — replace ``?`` by the label
    and append the lines to your qrels; a forgotten ``?`` fails loudly instead of reading as 0.
    ``jsonl``: ``{"query_id", "document_id", "query_relevance_label": null, "rank", "priority", "query"}``.
    A qrels line is whitespace-separated, so an empty id or one holding whitespace cannot be written there: that
    raises ``InputError`` (naming the ids) before anything is written; the JSONL queue takes any id.
    """
    target = Path(path)
    kind = fmt or ("jsonl" if target.suffix == ".jsonl" else "qrels")
    if kind != "jsonl":
        _check_qrels_ids(report, target)
    n = 0
    with atomic_open(target) as fh:
        for doc, qid, rank, priority, query in _pairs(report):
            if kind == "jsonl":
                row = {
                    "query_id": qid,
                    "document_id": doc,
                    "query_relevance_label": None,
                    "rank": rank,
                    "priority": priority,
                    "query": query,
                }
                fh.write(dumps(row) + b"\n")
            else:
                fh.write(f"{qid} 0 {doc} {LABEL_PLACEHOLDER}\n".encode())
            n += 1
    return n


def _unsplittable(value: str) -> bool:
    return not value or any(c.isspace() for c in value)


def _check_qrels_ids(report: Report, target: Path) -> None:
    """Refuse ids a ``qid 0 docid label`` line cannot hold (escaping would change the ids the qrels name)."""
    bad: list[str] = []
    for doc, qid, _, _, _ in _pairs(report):
        bad.extend(
            f"{what} id {value!r}" for what, value in (("document", doc), ("query", qid)) if _unsplittable(value)
        )
    if bad:
        shown = ", ".join(dict.fromkeys(bad[:5])) + (", ..." if len(bad) > 5 else "")
        raise InputError(
            f"the labelling queue has ids a qrels line cannot hold (empty, or with whitespace): {shown}",
            file=str(target),
            hint="write the queue as JSONL instead (a path ending in .jsonl), or use ids without whitespace",
        )
