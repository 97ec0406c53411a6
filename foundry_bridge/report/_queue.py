"""The labelling queue written as a file: qrels lines (TREC) or JSONL with the text a labeller needs."""

from __future__ import annotations

import os
from pathlib import Path

from .._io import atomic_open, dumps
from ._model import Report

__all__ = ["LABEL_PLACEHOLDER", "write_labelling_queue"]

LABEL_PLACEHOLDER = "?"


def write_labelling_queue(report: Report, path: str | os.PathLike[str], *, fmt: str | None = None) -> int:
    """Write one line per (query, unlabelled document), documents in priority order; returns the line count.

    ``qrels`` (default; any extension but ``.jsonl``): ``query_id 0 document_id ?`` — replace ``?`` by the label
    and append the lines to your qrels; a forgotten ``?`` fails loudly instead of reading as 0.
    ``jsonl``: ``{"query_id", "document_id", "query_relevance_label": null, "rank", "priority", "query"}``.
    """
    target = Path(path)
    kind = fmt or ("jsonl" if target.suffix == ".jsonl" else "qrels")
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
