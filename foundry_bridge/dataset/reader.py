"""``read_records``: stream a dataset (JSONL or TREC) as canonical ``QueryRecord``s."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import orjson

from ..errors import DatasetError
from ._json import JsonLimitError, loads
from .parse import ParsedRow, RowParser
from .problems import Problem
from .records import QueryRecord
from .spec import DataSource
from .trec import read_trec

__all__ = ["empty_dataset", "iter_jsonl", "read_records"]


def iter_jsonl(
    path: str | os.PathLike[str], mapping: DataSource, *, relevance_threshold: int | None = None
) -> Iterator[tuple[int, ParsedRow]]:
    """``(line, ParsedRow)`` for every non-blank line; a malformed line gives a row with a ``bad_json`` problem, one
    beyond the input limits (``_json.loads``: UTF-8, nesting, finite numbers) a row with that limit's problem."""
    source = str(path)
    parser = RowParser(mapping, source=source, relevance_threshold=relevance_threshold)
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        raise DatasetError("dataset file not found", file=source) from None
    except IsADirectoryError:
        raise DatasetError(
            "is a directory, not a JSONL file", file=source, hint="for TREC input set dataset.format: trec"
        ) from None
    with fh:
        for lineno, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                row = loads(raw)
            except JsonLimitError as exc:
                yield lineno, ParsedRow(None, [Problem("error", exc.code, exc.message, source, lineno, "", exc.hint)])
                continue
            except orjson.JSONDecodeError as exc:
                msg = str(exc).split(":", 1)[0]
                problem = Problem(
                    "error",
                    "bad_json",
                    f"malformed JSON line: {msg}",
                    source,
                    lineno,
                    "",
                    "each line must be one complete JSON object",
                )
                yield lineno, ParsedRow(None, [problem])
                continue
            yield lineno, parser.parse(row, lineno)


def read_records(
    path: str | os.PathLike[str], mapping: DataSource, *, relevance_threshold: int | None = None
) -> Iterator[QueryRecord]:
    """Stream the records of a dataset, per ``mapping.dataset.format``.

    JSONL: ``path`` is the file, read line by line. TREC: ``path`` is the directory holding the files named in
    ``mapping.dataset.trec``. Raises ``DatasetError`` (file, line, field, hint) on the first unusable row; the
    ``validate`` command reports every problem instead; a dataset with no rows is a ``DatasetError`` too.
    """
    rows = False
    if mapping.dataset.format == "trec":
        base = Path(path)
        if not base.is_dir():
            raise DatasetError("TREC input is a directory holding the qrels, run and queries files", file=str(path))
        for record in read_trec(base, mapping, relevance_threshold=relevance_threshold):
            yield record
            rows = True
        if not rows:
            raise empty_dataset(path)
        return
    for _lineno, parsed in iter_jsonl(path, mapping, relevance_threshold=relevance_threshold):
        if parsed.record is None:
            raise parsed.problems[0].to_error()
        yield parsed.record
        rows = True
    if not rows:
        raise empty_dataset(path)


def empty_dataset(path: str | os.PathLike[str]) -> DatasetError:
    """The error for a dataset without a single row (every reader's, and ``metrics``')."""
    return DatasetError("the dataset has no rows", file=str(path), hint="nothing to evaluate: check the file path")
