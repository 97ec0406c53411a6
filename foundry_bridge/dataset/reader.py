"""``read_records``: stream a dataset (JSONL, a table or DataFrame, TREC, BEIR) as canonical ``QueryRecord``s."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from ..errors import DatasetError
from .absent import field_sources, refuse_absent_ranking
from .choice import Folder, dataset_source
from .frames import TableSource, relocate
from .parse import ParsedRow, RowParser
from .problems import Problem
from .records import QueryRecord
from .rows import JsonLimitError, jsonl_rows
from .spec import DataSource

__all__ = ["empty_dataset", "iter_jsonl", "read_records"]


def iter_jsonl(
    path: str | os.PathLike[str],
    mapping: DataSource,
    *,
    relevance_threshold: int | None = None,
    require_ranking: bool = False,
) -> Iterator[tuple[int, ParsedRow]]:
    """``(line, ParsedRow)`` for every row of ``rows.jsonl_rows``; a line it could not decode (``_json.decode``:
    ``bad_json``, UTF-8, nesting, finite numbers) gives a row with that problem.
    ``require_ranking``: a row without its ranking (absent or null) has no record and the ``missing_field``
    problem (``absent.refuse_absent_ranking``)."""
    source = str(path)
    parser = RowParser(mapping, source=source, relevance_threshold=relevance_threshold)
    sources = _ranking_sources(mapping, require_ranking)
    try:
        rows = jsonl_rows(path)
    except FileNotFoundError:
        raise DatasetError("dataset file not found", file=source) from None
    except IsADirectoryError:
        raise DatasetError(
            "is a directory, not a JSONL file", file=source, hint="for TREC input set dataset.format: trec"
        ) from None
    for _, lineno, _, row in rows:
        if isinstance(row, JsonLimitError):
            yield lineno, ParsedRow(None, [Problem("error", row.code, row.message, source, lineno, "", row.hint)])
            continue
        parsed = parser.parse(row, lineno)
        if sources:
            refuse_absent_ranking(parsed, row, sources, file=source, line=lineno)
        yield lineno, parsed


def read_records(
    path: Any, mapping: DataSource, *, relevance_threshold: int | None = None, require_ranking: bool = False
) -> Iterator[QueryRecord]:
    """Stream the records of a dataset, read by the reader ``choice.dataset_source`` picks from
    ``mapping.dataset.format`` and what ``path`` is.

    JSONL: ``path`` is the file, read line by line — or a table of the same rows (``dataset.frames``): a parquet,
    Arrow or Feather file, a Hugging Face ``save_to_disk`` folder, a pyarrow Table, a pandas or polars DataFrame,
    located by row index and column. TREC and BEIR: ``path`` is the directory holding the files named in
    ``mapping.dataset.trec`` / ``.beir``. Raises ``DatasetError`` (file, line or row, field, hint) on the first
    unusable row; the ``validate`` command reports every problem instead; a dataset with no rows is a
    ``DatasetError`` too.

    ``require_ranking`` (what ``metrics`` asks): in JSONL and tables, a row whose ranking (the mapping's
    ``retrieved_documents.path``) is absent or null is unusable, with the error ``validate`` gives there and its
    did-you-mean (``[]`` is an empty ranking); otherwise it is read as an empty ranking. TREC and BEIR build the
    rankings from the run file (a judged query without a run line has an empty one, as trec_eval ``-c``).
    """
    source, name = dataset_source(path, mapping.dataset), str(path)
    if isinstance(source, TableSource):
        name, records = source.name, _table_records(source, mapping, relevance_threshold, require_ranking)
    elif isinstance(source, Folder):
        if not source.base.is_dir():
            raise DatasetError(f"{source.format.upper()} input is a directory holding its files", file=name)
        records = source.read(source.base, mapping, relevance_threshold=relevance_threshold)
    else:
        records = _jsonl_records(path, mapping, relevance_threshold, require_ranking)
    rows = False
    for record in records:
        yield record
        rows = True
    if not rows:
        raise empty_dataset(name)


def _jsonl_records(
    path: str | os.PathLike[str], mapping: DataSource, threshold: int | None, require_ranking: bool
) -> Iterator[QueryRecord]:
    """The records of a JSONL file; the first row's problem raised at its line."""
    for _lineno, parsed in iter_jsonl(path, mapping, relevance_threshold=threshold, require_ranking=require_ranking):
        if parsed.record is None:
            raise parsed.problems[0].to_error()
        yield parsed.record


def _table_records(
    source: TableSource, mapping: DataSource, threshold: int | None, require_ranking: bool
) -> Iterator[QueryRecord]:
    """The rows of a table through the JSONL row parser; the first problem raised at its row index and column."""
    parser = RowParser(mapping, source=source.name, relevance_threshold=threshold)
    sources = _ranking_sources(mapping, require_ranking)
    for index, row in source.rows():
        parsed = parser.parse(row, index)
        if sources:
            refuse_absent_ranking(parsed, row, sources, file=source.name, line=index)
        if parsed.record is None:
            raise relocate(parsed.problems[0], source.name).to_error()
        parsed.record.line = None  # a table has rows, not lines
        yield parsed.record


def _ranking_sources(mapping: DataSource, require_ranking: bool) -> dict[str, str] | None:
    """The mapping's field sources when rows must hold their ranking and the mapping reads one, else None."""
    fields = mapping.dataset.fields
    return field_sources(fields) if require_ranking and fields.retrieved_documents else None


def empty_dataset(path: str | os.PathLike[str]) -> DatasetError:
    """The error for a dataset without a single row (every reader's, and ``metrics``')."""
    return DatasetError("the dataset has no rows", file=str(path), hint="nothing to evaluate: check the file path")
