"""The labelling queue: the holes of a run's columns (``columns.RunColumns``' ``holes``), ranked by the engine.

A hole is a retrieved document in a query's top K without any label for that query (repeated ids count once, at
their first position). Documents are ranked by priority = Σ 1/rank over their appearances, then by count, best
rank, id; a document's queries by (rank, query id).

The ranking is one ``GROUP BY`` of the engine (the view ``queue_docs``) and an ``ORDER BY``. Its ``sum`` adds in no
set order, so a priority is Σ 1/rank to 1e-9 relative, not to the last bit; the order compares priorities rounded
to 1e-9, so two documents of equal priority fall to the tie-breaks (count, best rank, id) whichever order the engine
added in.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._io import atomic_open, dumps
from ..columns import RunColumns
from ..errors import InputError
from ._model import LIST_CAP, Report

__all__ = ["LABEL_PLACEHOLDER", "Queue", "write_labelling_queue"]

LABEL_PLACEHOLDER = "?"
_RANKED = (
    "SELECT document_id, n, best, rank_sum, approx FROM queue_docs "
    "ORDER BY round(approx, 9) DESC, n DESC, best, document_id"
)


@dataclass
class _Doc:
    """A ranked document: its statistics and its holes as (rank, query id, query row), in (rank, query id) order."""

    doc_id: str
    count: int
    best: int
    rank_sum: float
    priority: float
    holes: list[tuple[int, str, int]]


class Queue:
    """The labelling queue of a run's columns."""

    def __init__(self, run: RunColumns) -> None:
        self.run = run
        self.n_holes = int(run.scalar("SELECT count(*) FROM holes"))
        self._docs: list[_Doc] | None = None
        self._stats: tuple[int, int] | None = None

    def _ensure(self) -> tuple[int, int]:
        if self._stats is None:
            n, most = self.run.one("SELECT count(*), coalesce(max(n), 0) FROM queue_docs")
            self._stats = (int(n), int(most))
        return self._stats

    @property
    def n_docs(self) -> int:
        return self._ensure()[0]

    def _ranked(self, limit: int | None) -> list[tuple[str, int, int, float, float]]:
        """(document, count, best, rank sum, priority) of the ``limit`` most urgent documents (all: None)."""
        rows = self.run.sql(_RANKED + ("" if limit is None else f" LIMIT {int(limit)}")).fetchall()
        return [(str(d), int(n), int(b), float(s), float(p)) for d, n, b, s, p in rows]

    def _holes(self, docs: list[str], limit: int | None) -> dict[str, list[tuple[int, str, int]]]:
        """Each document's holes as (rank, query id, row) in (rank, query id) order, the first ``limit``."""
        out: dict[str, list[tuple[int, str, int]]] = {d: [] for d in docs}
        if not docs:
            return out
        self.run.con.register("queue_wanted", {"document_id": _array(docs)})
        try:
            cur = self.run.sql(
                "SELECT h.document_id, h.rank, q.query_id, h.row FROM holes h "
                "JOIN queue_wanted w ON h.document_id = w.document_id JOIN queries q ON q.row = h.row "
                "ORDER BY h.document_id, h.rank, q.query_id, h.row"
            )
            while batch := cur.fetchmany(65_536):
                for doc, rank, qid, row in batch:
                    hs = out[doc]
                    if limit is None or len(hs) < limit:
                        hs.append((int(rank), str(qid), int(row)))
        finally:
            self.run.con.unregister("queue_wanted")
        return out

    def summary(self, limit: int = LIST_CAP) -> list[_Doc]:
        """The ``limit`` most urgent documents, each with its first ``limit`` holes."""
        if self._docs is None:
            ranked = self._ranked(limit)
            holes = self._holes([d for d, *_ in ranked], limit)
            self._docs = [_Doc(d, n, b, s, p, holes[d]) for d, n, b, s, p in ranked]
        return self._docs

    def truncated(self, limit: int = LIST_CAP) -> bool:
        """Does the report's list (``limit`` documents, ``limit`` queries each) leave holes out?"""
        n_docs, most = self._ensure()
        return n_docs > limit or most > limit

    def iter_pairs(self) -> Iterator[tuple[str, str, int, float, int]]:
        """Every hole in queue order: ``(document id, query id, rank, priority, row)``."""
        ranked = self._ranked(None)
        for lo in range(0, len(ranked), 4096):
            part = ranked[lo : lo + 4096]
            holes = self._holes([d for d, *_ in part], None)
            for d, _, _, _, p in part:
                for rank, qid, row in holes[d]:
                    yield d, qid, rank, p, row

    def entries(self, limit: int = LIST_CAP) -> list[dict[str, Any]]:
        """The ``limit`` most urgent documents as ``HoleEntry`` fields, each with its first ``limit`` queries."""
        return [
            {
                "document_id": d.doc_id,
                "count": d.count,
                "best_rank": d.best,
                "mean_rank": d.rank_sum / d.count,
                "priority": d.priority,
                "queries": [{"query_id": qid, "rank": rank} for rank, qid, _ in d.holes],
            }
            for d in self.summary(limit)[:limit]
        ]

    def query_text(self, rows: list[int]) -> dict[int, str | None]:
        """The query text of some rows."""
        if not rows:
            return {}
        self.run.con.register("queue_rows", {"row": _array(rows)})
        try:
            got = self.run.sql("SELECT q.row, q.query FROM queries q JOIN queue_rows r ON q.row = r.row").fetchall()
        finally:
            self.run.con.unregister("queue_rows")
        return {int(r): t for r, t in got}


def _array(values: list[Any]) -> Any:
    import numpy as np

    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def _pairs(report: Report) -> Iterator[tuple[str, str, int, float, str | None]]:
    """(document, query id, rank, priority, query text) in queue order: the whole queue when the report carries
    its holes, else the queue the report lists."""
    queue: Queue | None = report._holes
    if queue is not None and queue.truncated():
        pending: list[tuple[str, str, int, float, int]] = []
        for pair in queue.iter_pairs():
            pending.append(pair)
            if len(pending) >= 65_536:
                yield from _with_text(queue, pending)
                pending = []
        yield from _with_text(queue, pending)
        return
    if queue is not None:
        rows = [row for d in queue.summary() for _, _, row in d.holes]
        by_row = queue.query_text(rows)
        text = {qid: by_row.get(row) for d in queue.summary() for _, qid, row in d.holes}
    else:
        text = {q.query_id: q.query for q in report.queries}
    for hole in report.labelling_queue:
        for where in hole.queries:
            qid = str(where["query_id"])
            yield hole.document_id, qid, int(where["rank"]), hole.priority, text.get(qid)


def _with_text(queue: Queue, pairs: list[tuple[str, str, int, float, int]]) -> Iterator[tuple[Any, ...]]:
    text = queue.query_text(sorted({p[4] for p in pairs}))
    for doc, qid, rank, priority, row in pairs:
        yield doc, qid, rank, priority, text.get(row)


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
    with atomic_open(target, sweep=True) as fh:
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
