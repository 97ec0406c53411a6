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
# queue order: priority rounded to 1e-9 (the engine's sum is Σ 1/rank to 1e-9, not to the bit), then count, best
# rank, id
_ORDER = "round(approx, 9) DESC, n DESC, best, document_id"
# the first ``$docs`` documents in queue order (the engine's top-N: no sort of every document), each with its place
_RANKED = (
    f"SELECT *, row_number() OVER (ORDER BY {_ORDER}) AS place FROM (SELECT * FROM queue_docs ORDER BY {_ORDER} "
    "LIMIT $docs)"
)
# every hole of the documents ranked ``place <= $docs``, in queue order, the first ``$holes`` of each document
_HOLES = (
    f"SELECT r.document_id, r.n, r.best, r.rank_sum, r.approx, h.rank, q.query_id, q.query FROM ({_RANKED}) r "
    "JOIN holes h USING (document_id) JOIN queries q ON q.row = h.row "
    "QUALIFY row_number() OVER (PARTITION BY r.place ORDER BY h.rank, q.query_id, h.row) <= $holes "
    "ORDER BY r.place, h.rank, q.query_id, h.row"
)
_ALL = 1 << 62  # no limit


@dataclass
class _Doc:
    """A ranked document: its statistics and its holes as (rank, query id, query text), in (rank, query id)
    order."""

    doc_id: str
    count: int
    best: int
    rank_sum: float
    priority: float
    holes: list[tuple[int, str, str | None]]


class Queue:
    """The labelling queue of a run's columns: the views ``holes`` and ``queue_docs``, ranked by the engine."""

    def __init__(self, run: RunColumns) -> None:
        self.run = run
        self.n_docs, self.n_holes, self._most = (
            int(v) for v in run.one("SELECT count(*), coalesce(sum(n), 0), coalesce(max(n), 0) FROM queue_docs")
        )
        self._docs: list[_Doc] | None = None

    def summary(self, limit: int = LIST_CAP) -> list[_Doc]:
        """The ``limit`` most urgent documents, each with its first ``limit`` holes."""
        if self._docs is None:
            docs: dict[str, _Doc] = {}
            for doc, n, best, rank_sum, priority, rank, qid, query in self.run.sql(
                _HOLES, {"docs": limit, "holes": limit}
            ).fetchall():
                d = docs.setdefault(doc, _Doc(doc, int(n), int(best), float(rank_sum), float(priority), []))
                d.holes.append((int(rank), str(qid), query))
            self._docs = list(docs.values())
        return self._docs

    def truncated(self, limit: int = LIST_CAP) -> bool:
        """Does the report's list (``limit`` documents, ``limit`` queries each) leave holes out?"""
        return self.n_docs > limit or self._most > limit

    def iter_pairs(self) -> Iterator[tuple[str, str, int, float, str | None]]:
        """Every hole in queue order: ``(document id, query id, rank, priority, query text)``."""
        cur = self.run.sql(_HOLES, {"docs": _ALL, "holes": _ALL})
        while batch := cur.fetchmany(65_536):
            for doc, _, _, _, priority, rank, qid, query in batch:
                yield str(doc), str(qid), int(rank), float(priority), query

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


def _pairs(report: Report) -> Iterator[tuple[str, str, int, float, str | None]]:
    """(document, query id, rank, priority, query text) in queue order: the whole queue when the report carries
    its holes, else the queue the report lists."""
    queue: Queue | None = report._holes
    if queue is not None and queue.truncated():
        yield from queue.iter_pairs()
        return
    if queue is not None:
        text = {qid: query for d in queue.summary() for _, qid, query in d.holes}
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
