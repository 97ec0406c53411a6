"""The labelling queue written as a file: qrels lines (TREC) or JSONL with the text a labeller needs."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import atomic_open, dumps
from ..errors import InputError
from ._model import Report

__all__ = ["LABEL_PLACEHOLDER", "write_labelling_queue"]

LABEL_PLACEHOLDER = "?"


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
    text = {q.query_id: q.query for q in report.queries}
    n = 0
    with atomic_open(target) as fh:
        for hole in report.labelling_queue:
            for where in hole.queries:
                qid = str(where["query_id"])
                if kind == "jsonl":
                    row = {
                        "query_id": qid,
                        "document_id": hole.document_id,
                        "query_relevance_label": None,
                        "rank": where["rank"],
                        "priority": hole.priority,
                        "query": text.get(qid),
                    }
                    fh.write(dumps(row) + b"\n")
                else:
                    fh.write(f"{qid} 0 {hole.document_id} {LABEL_PLACEHOLDER}\n".encode())
                n += 1
    return n


def _unsplittable(value: str) -> bool:
    return not value or any(c.isspace() for c in value)


def _check_qrels_ids(report: Report, target: Path) -> None:
    """Refuse ids a ``qid 0 docid label`` line cannot hold (escaping would change the ids the qrels name)."""
    bad: list[str] = []
    for hole in report.labelling_queue:
        ids = [("document", hole.document_id)] + [("query", str(w["query_id"])) for w in hole.queries]
        bad.extend(f"{what} id {value!r}" for what, value in ids if _unsplittable(value))
    if bad:
        shown = ", ".join(dict.fromkeys(bad[:5])) + (", ..." if len(bad) > 5 else "")
        raise InputError(
            f"the labelling queue has ids a qrels line cannot hold (empty, or with whitespace): {shown}",
            file=str(target),
            hint="write the queue as JSONL instead (a path ending in .jsonl), or use ids without whitespace",
        )
