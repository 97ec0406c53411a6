"""The pass over the data (JSONL rows or a TREC directory) and ``validate``, the entry point of every check.

Memory is constant in the number of rows: rows are read one at a time, and duplicate ids need a second pass only
over the rows whose id may repeat (see ``_duplicates``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..dataset._json import duplicate_keys
from ..dataset.absent import field_sources
from ..dataset.choice import Folder, dataset_source
from ..dataset.frames import Table, TableSource, relocate
from ..dataset.parse import ParsedRow, RowParser, compile_path, get_path
from ..dataset.records import QueryRecord
from ..dataset.rows import JsonLimitError, Row, jsonl_rows
from ..errors import DatasetError, InputError
from ..mapping.loader import load_mapping, packaged_mapping_path
from ..mapping.model import Mapping
from ._criteria import Criterion, criteria_from_mapping, validate_criteria_file
from ._docret import LocateLabel
from ._duplicates import is_id, near_hash
from ._report import ValidationReport
from ._rows import RowChecker
from ._rules import Context

__all__ = ["checked_records", "validate", "validate_dataset"]

_ALWAYS_READ = ("query", "response", "retrieval_ground_truth")  # for empty-text and kind checks


def validate(
    data: str | os.PathLike[str] | Table,
    *,
    mapping: Mapping | str | os.PathLike[str] | None = None,
    criteria_file: str | os.PathLike[str] | None = None,
    relevance_threshold: int | None = None,
    environ: dict[str, str] | None = None,
    max_per_code: int = 20,
) -> ValidationReport:
    """Validate ``data`` against a mapping (path, model or None for the default) or hand-written criteria.

    Never raises for bad input: every problem, including an unreadable mapping, is in the report.
    """
    report = ValidationReport(max_per_code=max_per_code)
    if criteria_file is not None:
        criteria = validate_criteria_file(criteria_file, report)
        validate_dataset(data, criteria, Mapping(), report, raw_items=True, relevance_threshold=relevance_threshold)
    else:
        for _ in checked_records(data, mapping, report, environ=environ, relevance_threshold=relevance_threshold):
            pass
    report.sort()
    return report


def checked_records(
    data: str | os.PathLike[str] | Table,
    mapping: Mapping | str | os.PathLike[str] | None,
    report: ValidationReport,
    *,
    environ: dict[str, str] | None = None,
    relevance_threshold: int | None = None,
    records: bool = False,
) -> Iterator[QueryRecord]:
    """The mapping's criteria checked, then one pass over ``data``; problems go into ``report``.

    With ``records``, every usable row's ``QueryRecord`` is yielded as soon as it is checked (what ``plan`` and
    ``run`` build from: one pass serves the gate and the plan); the checks that need the whole file (duplicate
    ids, fields no row has) are done when the iteration ends.
    """
    if isinstance(mapping, Mapping):
        model, file = mapping, None
    else:
        file = str(packaged_mapping_path()) if mapping is None else str(mapping)
        try:
            model = load_mapping(file)
        except InputError as exc:
            Context(report, exc.file).add("bad_mapping", exc.field, line=exc.line, message=exc.message, hint=exc.hint)
            return
    criteria = criteria_from_mapping(model, file, report, environ)
    yield from _pass(data, criteria, model, report, False, relevance_threshold, records, mapping_file=file)


def validate_dataset(
    data: str | os.PathLike[str] | Table,
    criteria: list[Criterion],
    mapping: Mapping,
    report: ValidationReport,
    *,
    raw_items: bool = False,
    relevance_threshold: int | None = None,
) -> None:
    """One streaming pass over ``data``; problems go into ``report``.

    ``raw_items``: the criteria's templates name the rows' own top-level keys (hand-written criteria); otherwise
    they name item fields produced by ``mapping``.
    """
    for _ in _pass(data, criteria, mapping, report, raw_items, relevance_threshold, False):
        pass


def _pass(
    data: str | os.PathLike[str] | Table,
    criteria: list[Criterion],
    mapping: Mapping,
    report: ValidationReport,
    raw_items: bool,
    relevance_threshold: int | None,
    records: bool,
    *,
    mapping_file: str | None = None,
) -> Iterator[QueryRecord]:
    """The streaming pass (JSONL, a table, TREC or BEIR: ``dataset.choice.dataset_source``), yielding each usable
    row's record if ``records``; ``mapping_file``: where the mapping was read from (None: given as a model)."""
    threshold = mapping.metrics.relevance_threshold if relevance_threshold is None else relevance_threshold
    reader = dataset_source(data, mapping.dataset, rows=raw_items)
    if isinstance(reader, Folder):
        yield from _folder_pass(reader, str(data), criteria, mapping, report, threshold, records)
        return
    if isinstance(reader, TableSource):
        yield from _table_pass(reader, criteria, mapping, report, raw_items, threshold, records, mapping_file)
        return
    try:
        rows = jsonl_rows(data)
    except (FileNotFoundError, IsADirectoryError) as exc:
        rule = "missing_file/directory" if isinstance(exc, IsADirectoryError) else "missing_file/jsonl"
        report.add(Context(report, str(data)).problem(rule))
        return
    checker = _checker(criteria, report, str(data), threshold, mapping, raw_items, mapping_file)
    yield from _checked_rows(_objects(rows, checker), checker, mapping, raw_items, threshold, records, lines=True)

    def objects() -> Iterator[tuple[int, Any]]:
        return ((line, row) for _, line, _, row in jsonl_rows(data) if isinstance(row, dict))  # decoded: reported

    checker.finish(lambda candidates: _query_ids(objects(), str(data), mapping, raw_items, threshold, candidates))


def _table_pass(
    source: TableSource,
    criteria: list[Criterion],
    mapping: Mapping,
    report: ValidationReport,
    raw_items: bool,
    threshold: int,
    records: bool,
    mapping_file: str | None,
) -> Iterator[QueryRecord]:
    """The pass over a table's rows (``dataset.frames``): the JSONL checks, located by row index and column."""
    checker = _checker(criteria, report, source.name, threshold, mapping, raw_items, mapping_file)
    if checker.entry_keys is not None:
        checker.entry_keys.unit = "row"
    listed = len(report.problems)
    try:
        yield from _checked_rows(_counted(source.rows(), report), checker, mapping, raw_items, threshold, records)
        checker.finish(lambda hashes: _query_ids(source.rows(), source.name, mapping, raw_items, threshold, hashes))
    except DatasetError as exc:
        Context(report, exc.file).add("bad_table", message=exc.message, hint=exc.hint)
    report.problems[listed:] = [relocate(p, source.name) for p in report.problems[listed:]]


def _checker(
    criteria: list[Criterion],
    report: ValidationReport,
    name: str,
    threshold: int,
    mapping: Mapping,
    raw_items: bool,
    mapping_file: str | None,
) -> RowChecker:
    """The checks of the rows of the file or table ``name`` (the mapping's fields, and the file it was read from,
    when rows are mapped)."""
    if raw_items:
        return RowChecker(criteria, report, name, threshold)
    fields = mapping.dataset.fields
    return RowChecker(
        criteria, report, name, threshold, sources=field_sources(fields), fields=fields, mapping_file=mapping_file
    )


def _counted(rows: Iterator[tuple[int, dict[str, Any]]], report: ValidationReport) -> Iterator[tuple[int, Any]]:
    for at, row in rows:
        report.rows += 1
        yield at, row


def _checked_rows(
    rows: Iterator[tuple[int, dict[str, Any]]],
    checker: RowChecker,
    mapping: Mapping,
    raw_items: bool,
    threshold: int,
    records: bool,
    *,
    lines: bool = False,
) -> Iterator[QueryRecord]:
    """The checks of every ``(line or row index, object)`` of a JSONL file (``lines``) or a table, yielding each
    usable row's record if ``records`` (a table's records have no line)."""
    parser = RowParser(mapping, source=checker.source, relevance_threshold=threshold, records=records)
    needed = {f for c in checker.criteria for f in c.fields.values()}
    for at, row in rows:
        if raw_items:
            kind = row.get("kind")
            checker.query_id(row.get("query_id"), at)
            checker.row(row, at, declared_kind=kind if isinstance(kind, str) else None, raw=row)
            continue
        parsed = parser.parse(row, at)
        _mapped_row(parsed, row, at, mapping, needed, checker)
        if parsed.record is not None:
            if not lines:
                parsed.record.line = None
            yield parsed.record


def _objects(rows: Iterator[Row], checker: RowChecker) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every row; a line that could not be decoded and a non-object are reported and
    skipped, a key written twice is reported."""
    for _, lineno, raw, row in rows:
        checker.report.rows += 1
        if isinstance(row, JsonLimitError):
            checker.ctx.add(row.code, line=lineno, message=row.message, hint=row.hint)
            continue
        if not isinstance(row, dict):
            checker.ctx.add("not_an_object", line=lineno)
            continue
        for key, first, second in duplicate_keys(raw, row):
            checker.ctx.add("duplicate_key", key, line=lineno, key=key, first=first, second=second)
        yield lineno, row


def _mapped_row(
    parsed: ParsedRow, row: dict[str, Any], lineno: int, mapping: Mapping, needed: set[str], checker: RowChecker
) -> None:
    """Checks of one row read through the mapping: the reader's problems, then the item's values."""
    checker.reader_problems(parsed.problems, row, lineno)
    if parsed.int_id is not None:
        where, value = parsed.int_id
        more = f" ({parsed.int_ids} such ids in this row)" if parsed.int_ids > 1 else ""
        checker.user_ctx.add("numeric_id/row", where, line=lineno, id=value, sid=str(value), more=more)
    full = parsed.record.item() if parsed.record is not None else parsed.item
    if full is None:
        checker.query_id(_unparsed_query_id(row, mapping), lineno)
        return
    checker.query_id(full["query_id"], lineno)
    checker.row(
        _needed(full, needed),
        lineno,
        declared_kind=full["kind"] if parsed.kind_source == "declared" else None,
        raw=row,
        absent=parsed.missing,
    )


def _needed(full: dict[str, Any], needed: set[str]) -> dict[str, Any]:
    """The item fields the criteria read, and those every row is checked for."""
    item = {f: full.get(f) for f in needed}
    for name in _ALWAYS_READ:
        item.setdefault(name, full.get(name))
    return item


def _unparsed_query_id(row: dict[str, Any], mapping: Mapping) -> Any:
    """The id counted for duplicates in a row the parser rejected: a top-level field only."""
    f = mapping.dataset.fields.query_id
    return row.get(f) if "." not in f else None


def _query_ids(
    rows: Iterator[tuple[int, dict[str, Any]]],
    name: str,
    mapping: Mapping,
    raw_items: bool,
    threshold: int,
    candidates: set[int],
) -> Iterator[tuple[Any, int]]:
    """Pass 2 of duplicate detection over the objects of the file or table ``name``: (query id, line or row index)
    of the rows whose id may hash to a candidate.

    A row is parsed in full (to take its id exactly as pass 1 did) only when a cheap look at its id field hits a
    candidate hash.
    """

    def hit(v: Any) -> bool:
        return is_id(v) and near_hash(v) in candidates

    field_ = mapping.dataset.fields.query_id
    path = compile_path(field_)
    parser = RowParser(mapping, source=name, relevance_threshold=threshold, records=False)
    for at, row in rows:
        if raw_items:
            yield row.get("query_id"), at
            continue
        if not (hit(get_path(row, path)) or ("." not in field_ and hit(row.get(field_)))):
            continue
        full = parser.parse(row, at).item
        yield (full["query_id"] if full is not None else _unparsed_query_id(row, mapping)), at


def _folder_pass(
    source: Folder,
    name: str,
    criteria: list[Criterion],
    mapping: Mapping,
    report: ValidationReport,
    threshold: int,
    records: bool,
) -> Iterator[QueryRecord]:
    """The pass over a TREC or BEIR directory (``name``: as the user wrote it): one row per query, a missing
    responses field located in that file."""
    base, files, read = source.base, source.files, source.read
    if not base.is_dir():
        report.add(Context(report, name).problem("missing_file/trec"))
        return
    problems: list[Any] = []
    checker = RowChecker(criteria, report, str(base / files.run), threshold, hints=False)
    needed = {f for c in criteria for f in c.fields.values()}
    response_lines: dict[str, int] = {}
    label_lines: dict[str, list[int]] = {}
    current = {"qid": ""}
    checker.locate = _trec_locator(checker.source, base, files, response_lines, current)
    checker.labels.locate = _qrels_locator(str(base / files.qrels) if files.qrels else "", label_lines, current)
    rows = read(
        base,
        mapping,
        relevance_threshold=threshold,
        problems=problems,
        response_lines=response_lines,
        label_lines=label_lines,
    )
    for rec in rows:
        report.rows += 1
        line = rec.line  # None for a query with no run line (only judged, or only in queries/responses)
        current["qid"] = rec.query_id
        checker.query_id(rec.query_id, line)
        full = rec.item()
        declared = rec.kind if rec.kind_source == "declared" else None
        checker.row(_needed(full, needed), line, declared_kind=declared, raw=full)
        if records:
            yield rec
    for p in problems:
        report.add(p)
    checker.finish(
        lambda _: ((rec.query_id, rec.line) for rec in read(base, mapping, relevance_threshold=threshold, problems=[]))
    )


def _qrels_locator(qrels_file: str, label_lines: dict[str, list[int]], current: dict[str, str]) -> LocateLabel:
    """Where the current query's ``retrieval_ground_truth[i]`` is reported: the qrels line that holds it (the run
    line would name a file without labels); ``None`` for another labels field (the row's own place)."""

    def locate(field: str, i: int) -> tuple[str, int] | None:
        lines = label_lines.get(current["qid"], [])
        if field != "retrieval_ground_truth" or i >= len(lines):
            return None
        return qrels_file, lines[i]

    return locate


def _trec_locator(
    run_file: str, base: Path, files: Any, response_lines: dict[str, int], current: dict[str, str]
) -> Any:
    """Where a missing field is reported: a field only responses.jsonl can hold there; the rest at the run line
    (``files``: the mapping's ``TrecFiles`` or ``BeirFiles``)."""
    not_responses = {"query_id", "retrieved_documents", "retrieval_ground_truth"} | (
        {"query"} if files.queries else set()
    )
    responses = str(base / files.responses) if files.responses else None

    def locate(f: str, line: int | None) -> tuple[str, int | None, str]:
        if responses is None or f in not_responses:
            return run_file, line, ""
        qid = current["qid"]
        at = response_lines.get(qid)
        return responses, at, "" if at is not None else f"; no responses row for query {qid!r}"

    return locate
