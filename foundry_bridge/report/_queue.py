"""The labelling queue: holes collected as compact arrays while the records stream by, ranked, and written.

A hole is a retrieved document in a query's top K without any label for that query (repeated ids count once, at
their first position). Documents are ranked by priority = Σ 1/rank over their appearances (summed in dataset order),
then by count, best rank, id; a document's queries by (rank, query id).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._io import atomic_open, dumps
from ..errors import InputError
from ..metrics._arrays import Texts
from ._model import LIST_CAP, Report

__all__ = ["LABEL_PLACEHOLDER", "Holes", "write_labelling_queue"]

LABEL_PLACEHOLDER = "?"


@dataclass
class Holes:
    """Every (document, rank, query row) hole as three arrays, documents coded in order of first appearance."""

    doc_ids: list[str] = field(default_factory=list)
    code: dict[str, int] = field(default_factory=dict)
    docs: array[int] = field(default_factory=lambda: array("i"))  # int32: 12 bytes a hole
    ranks: array[int] = field(default_factory=lambda: array("i"))
    rows: array[int] = field(default_factory=lambda: array("i"))
    query_ids: Texts = field(default_factory=Texts)
    query_text: Texts = field(default_factory=Texts)

    def add(self, row: int, query_id: str, query: str | None, holes: list[tuple[int, str]]) -> None:
        """One query's holes as ``(rank, document id)``; called once per query, in row order."""
        self.query_ids.append(query_id)
        self.query_text.append(query)
        for rank, doc in holes:
            c = self.code.get(doc)
            if c is None:
                c = self.code[doc] = len(self.doc_ids)
                self.doc_ids.append(doc)
            self.docs.append(c)
            self.ranks.append(rank)
            self.rows.append(row)

    def truncated(self, limit: int = LIST_CAP) -> bool:
        """Does the report's list (``limit`` documents, ``limit`` queries each) leave holes out?"""
        if len(self.doc_ids) > limit:
            return True
        counts: dict[int, int] = {}
        for d in self.docs:
            counts[d] = counts.get(d, 0) + 1
        return any(c > limit for c in counts.values())

    def texts(self, query_ids: set[str]) -> dict[str, str | None]:
        """The query text of each of ``query_ids``."""
        return {q: t for q, t in zip(self.query_ids, self.query_text, strict=True) if q in query_ids}

    def ranked(self) -> tuple[Any, dict[str, Any], Any]:
        """``(documents in queue order, per-document count/best/sum/priority arrays, pair order)``; the pair order
        sorts every hole by document code, then rank, then query id."""
        import numpy as np

        n_docs = len(self.doc_ids)
        docs = np.frombuffer(self.docs, dtype=np.int32) if self.docs else np.zeros(0, np.int64)
        ranks = np.frombuffer(self.ranks, dtype=np.int32) if self.ranks else np.zeros(0, np.int64)
        count = np.bincount(docs, minlength=n_docs)
        best = np.full(n_docs, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, docs, ranks)
        rank_sum = np.bincount(docs, weights=ranks.astype(np.float64), minlength=n_docs)
        priority = np.zeros(n_docs, dtype=np.float64)
        np.add.at(priority, docs, 1.0 / ranks)  # unbuffered, in dataset order: the same sum as Python's
        ids = np.array(self.doc_ids, dtype=str)
        order = np.lexsort((ids, best, -count, -priority))
        by_id = np.empty(len(self.query_ids), dtype=np.int32)  # each query's place in query-id order
        by_id[np.argsort(self.query_ids.sort_keys(), kind="stable")] = np.arange(len(self.query_ids))
        rows = np.frombuffer(self.rows, dtype=np.int32) if self.rows else np.zeros(0, np.int32)
        pairs = np.lexsort((by_id[rows], ranks, docs))
        stats = {"count": count, "best": best, "rank_sum": rank_sum, "priority": priority}
        return order, stats, pairs

    def iter_pairs(self) -> Iterator[tuple[str, str, int, float, int]]:
        """Every hole in queue order: ``(document id, query id, rank, priority, row)``."""
        import numpy as np

        order, stats, pairs = self.ranked()
        docs = np.frombuffer(self.docs, dtype=np.int32)[pairs] if self.docs else np.zeros(0, np.int64)
        starts = np.searchsorted(docs, np.arange(len(self.doc_ids)))
        ends = np.searchsorted(docs, np.arange(len(self.doc_ids)), side="right")
        for d in order.tolist():
            for p in pairs[starts[d] : ends[d]].tolist():
                row = self.rows[p]
                yield self.doc_ids[d], self.query_ids[row], self.ranks[p], float(stats["priority"][d]), row

    def entries(self, limit: int = LIST_CAP) -> list[dict[str, Any]]:
        """The ``limit`` most urgent documents as ``HoleEntry`` fields, each with its first ``limit`` queries."""
        import numpy as np

        order, stats, pairs = self.ranked()
        docs = np.frombuffer(self.docs, dtype=np.int32)[pairs] if self.docs else np.zeros(0, np.int64)
        out: list[dict[str, Any]] = []
        for d in order[:limit].tolist():
            start, end = np.searchsorted(docs, [d, d + 1]).tolist()
            where = pairs[start : min(end, start + limit)].tolist()
            count = int(stats["count"][d])
            out.append(
                {
                    "document_id": self.doc_ids[d],
                    "count": count,
                    "best_rank": int(stats["best"][d]),
                    "mean_rank": float(stats["rank_sum"][d]) / count,
                    "priority": float(stats["priority"][d]),
                    "queries": [{"query_id": self.query_ids[self.rows[p]], "rank": self.ranks[p]} for p in where],
                }
            )
        return out


def _pairs(report: Report) -> Iterator[tuple[str, str, int, float, str | None]]:
    """(document, query id, rank, priority, query text) in queue order: the whole queue when the report carries
    its holes, else the queue the report lists."""
    holes: Holes | None = report._holes
    if holes is not None and holes.truncated():
        for doc, qid, rank, priority, row in holes.iter_pairs():
            yield doc, qid, rank, priority, holes.query_text[row]
        return
    wanted = {str(w["query_id"]) for h in report.labelling_queue for w in h.queries}
    text = holes.texts(wanted) if holes is not None else {q.query_id: q.query for q in report.queries}
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
