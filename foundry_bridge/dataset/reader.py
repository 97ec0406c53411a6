"""``read_records``: stream a dataset (JSONL, a table or DataFrame, TREC, BEIR) as canonical ``QueryRecord``s."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
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

__all__ = ["empty_dataset", "iter_jsonl", "read_records", "row_parser"]


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
    try:
        rows = jsonl_rows(path)
    except FileNotFoundError:
        raise DatasetError("dataset file not found", file=source) from None
    except IsADirectoryError:
        raise DatasetError(
            "is a directory, not a JSONL file", file=source, hint="for TREC input set dataset.format: trec"
        ) from None
    decoded = ((line, parsed) for _, line, _, parsed in rows)
    yield from _parsed(decoded, mapping, source, relevance_threshold, require_ranking)


def _parsed(
    rows: Iterator[tuple[int, Any]], mapping: DataSource, name: str, threshold: int | None, require_ranking: bool
) -> Iterator[tuple[int, ParsedRow]]:
    """``(line or row index, ParsedRow)`` of the decoded rows of the file or table ``name``."""
    parse = row_parser(mapping, name, threshold, require_ranking)
    for at, row in rows:
        yield at, parse(at, row)


def row_parser(
    mapping: DataSource, name: str, threshold: int | None, require_ranking: bool
) -> Callable[[int, Any], ParsedRow]:
    """``parse(at, row)``: the ``ParsedRow`` of one decoded row (or its ``JsonLimitError``) at line or row index
    ``at`` of the file or table ``name``: the one way a row becomes a record, for ``read_records`` and for the
    ``metrics`` reader's lines its typed decoders do not take (``columnar``)."""
    parser = RowParser(mapping, source=name, relevance_threshold=threshold)
    sources = _ranking_sources(mapping, require_ranking)

    def parse(at: int, row: Any) -> ParsedRow:
        if isinstance(row, JsonLimitError):
            return ParsedRow(None, [Problem("error", row.code, row.message, name, at, "", row.hint)])
        parsed = parser.parse(row, at)
        if sources:
            refuse_absent_ranking(parsed, row, sources, file=name, line=at)
        return parsed

    return parse


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
        name = source.name
        parsed = _parsed(source.rows(), mapping, name, relevance_threshold, require_ranking)
        records = _records(parsed, name, table=True)
    elif isinstance(source, Folder):
        if not source.base.is_dir():
            raise DatasetError(f"{source.format.upper()} input is a directory holding its files", file=name)
        records = source.read(source.base, mapping, relevance_threshold=relevance_threshold)
    else:
        parsed = iter_jsonl(path, mapping, relevance_threshold=relevance_threshold, require_ranking=require_ranking)
        records = _records(parsed, name, table=False)
    rows = False
    for record in records:
        yield record
        rows = True
    if not rows:
        raise empty_dataset(name)


def _records(parsed: Iterator[tuple[int, ParsedRow]], name: str, *, table: bool) -> Iterator[QueryRecord]:
    """The records of parsed rows; the first row's problem raised at its line, or in a ``table`` at its row index
    and column (a table's records have no line)."""
    for _, row in parsed:
        if row.record is None:
            raise (relocate(row.problems[0], name) if table else row.problems[0]).to_error()
        if table:
            row.record.line = None
        yield row.record


def _ranking_sources(mapping: DataSource, require_ranking: bool) -> dict[str, str] | None:
    """The mapping's field sources when rows must hold their ranking and the mapping reads one, else None."""
    fields = mapping.dataset.fields
    return field_sources(fields) if require_ranking and fields.retrieved_documents else None


def empty_dataset(path: str | os.PathLike[str]) -> DatasetError:
    """The error for a dataset without a single row (every reader's, and ``metrics``')."""
    return DatasetError("the dataset has no rows", file=str(path), hint="nothing to evaluate: check the file path")
