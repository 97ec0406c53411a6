"""Document-retrieval rows from a JSONL file: the file reading behind ``document_retrieval_jsonl``.

Each non-blank line holds ``retrieval_ground_truth`` and ``retrieved_documents`` (or an ``item`` with them). The
rows go to ``foundry_bridge.metrics.document_retrieval_batch``.

The lines come from the one row source of JSONL datasets (``rows.jsonl_rows``), so a line it refuses raises its
error (``malformed JSON line: ...``, or the input limit broken, with its fix), located at its line, as
``read_records`` raises it.
"""

from __future__ import annotations

import os
from typing import Any

from .._io import gc_paused
from ..metrics._docret_core import DocumentRetrievalError, make_config
from .problems import Problem
from .rows import JsonLimitError, jsonl_rows

__all__ = ["document_retrieval_jsonl"]


def document_retrieval_jsonl(
    path: str | os.PathLike[str], **init_params: Any
) -> list[dict[str, Any] | DocumentRetrievalError]:
    """:func:`~foundry_bridge.metrics.document_retrieval_batch` over a JSONL file whose lines hold
    ``retrieval_ground_truth`` and ``retrieved_documents`` (or an ``item`` with them): one entry per non-blank line,
    in order.

    Blank lines are skipped; a line that is not valid JSON raises ``DatasetError`` with its line number (the
    error ``read_records`` raises there).
    """
    make_config(init_params)  # a bad init parameter raises before the file is read
    with gc_paused():  # parsing creates millions of containers: the cyclic GC would rescan them over and over
        return _jsonl(path, init_params)


def _jsonl(path: str | os.PathLike[str], init_params: dict[str, Any]) -> list[Any]:
    from ..metrics import document_retrieval_batch

    rows = []
    for row in jsonl_rows(path):
        if isinstance(row.parsed, JsonLimitError):
            bad = row.parsed
            raise Problem("error", bad.code, bad.message, row.file, row.line, "", bad.hint).to_error()
        rows.append(row.parsed)
    return document_retrieval_batch(rows, **init_params)
