"""TREC input: qrels (``qid 0 docid label``), a run (``qid Q0 docid rank score tag``), queries (``qid<TAB>text``)
and optional responses (JSONL joined by query id), turned into the same ``QueryRecord``s as JSONL input.

Run order follows trec_eval, which ignores the rank column: score descending, ties broken by document id in
descending string order. Every query any file names becomes a record: first in the order of their first line in
the run file, then queries only in the qrels (judged, nothing retrieved: an empty ranking, as trec_eval -c), then
those only in the queries file, then those only in the responses file (all with no retrieved documents). The files
are loaded into memory (TREC runs are grouped by query in practice, but nothing guarantees it); only JSONL input
streams.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ..metrics._limits import label_range_message
from ._json import BOM, JsonLimitError, bom_error, utf8_error
from .parse import MISSING, compile_path, get_path
from .problems import Problem
from .records import GroundTruthLabel, QueryRecord, RetrievedDocument, derive_kind, kind_problem
from .rows import jsonl_rows
from .spec import DataSource

__all__ = ["Sink", "add_label", "read_qrels", "read_run", "read_trec", "trec_order"]


class Sink:
    """Raise on the first error, or collect every problem into a list (validation)."""

    def __init__(self, problems: list[Problem] | None) -> None:
        self.problems = problems

    def error(self, code: str, message: str, file: str, line: int | None, field: str, hint: str | None = None) -> None:
        problem = Problem("error", code, message, file, line, field, hint)
        if self.problems is None:
            raise problem.to_error()
        self.problems.append(problem)


def _open_lines(path: Path, sink: Sink, what: str, section: str = "trec") -> Iterator[tuple[int, str]]:
    """(line, text) of every non-blank line; a BOM or a line that is not UTF-8 is reported (located) and skipped."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below
    except FileNotFoundError:
        sink.error("missing_file", f"{what} file not found", str(path), None, "", f"set dataset.{section}.{what}")
        return
    with fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                if lineno == 1 and raw.startswith(BOM):
                    raise bom_error()
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = utf8_error(exc)
                sink.error(bad.code, bad.message, str(path), lineno, "", bad.hint)
                continue
            except JsonLimitError as bad:
                sink.error(bad.code, bad.message, str(path), lineno, "", bad.hint)
                continue
            if text.strip():
                yield lineno, text.rstrip("\r\n")


def trec_order(run: Iterable[tuple[float, str]]) -> list[tuple[float, str]]:
    """``(score, docid)`` pairs in trec_eval's order: score descending, ties by document id descending (code point
    order, which is UTF-8 byte order)."""
    return sorted(run, reverse=True)


def read_qrels(path: Path, sink: Sink, lines: dict[str, list[int]] | None = None) -> dict[str, list[GroundTruthLabel]]:
    """query id → its labels, in file order, from a qrels file (``qid 0 docid label``); ``lines``, if given, is
    filled with query id → the line of each of its labels, in the same order."""
    qrels: dict[str, list[GroundTruthLabel]] = {}
    for lineno, text in _open_lines(path, sink, "qrels"):
        parts = text.split()
        if len(parts) != 4:
            message = f"expected 4 columns `qid 0 docid label`, got {len(parts)}"
            sink.error("bad_qrels_line", message, str(path), lineno, "")
            continue
        qid, _, docid, label = parts
        try:
            value = int(label)
        except ValueError:
            hint = "put human relevance labels (integers) here; search scores belong in the run file"
            sink.error(
                "label_not_integer",
                f"label {label!r} is not an integer"
                + ("; a fractional value in a label field is probably a search score" if "." in label else ""),
                str(path),
                lineno,
                "label",
                hint,
            )
            continue
        out_of_range = label_range_message(value)
        if out_of_range is not None:
            sink.error(
                "label_out_of_range", out_of_range, str(path), lineno, "label", "relevance grades are small integers"
            )
            continue
        add_label(qrels, lines, qid, docid, value, lineno)
    return qrels


def add_label(
    qrels: dict[str, list[GroundTruthLabel]],
    lines: dict[str, list[int]] | None,
    qid: str,
    docid: str,
    value: int,
    lineno: int,
) -> None:
    """One qrels line's label appended to its query's labels, and its line to ``lines`` when they are kept."""
    qrels.setdefault(qid, []).append(GroundTruthLabel(document_id=docid, query_relevance_label=value))
    if lines is not None:
        lines.setdefault(qid, []).append(lineno)


def read_run(
    path: Path, sink: Sink, section: str = "trec"
) -> tuple[dict[str, list[tuple[float, str]]], dict[str, int]]:
    """(query id → ``(score, docid)`` pairs in file order, query id → line of its first run line) from a run file
    (``qid Q0 docid rank score tag``; the rank column is ignored, as trec_eval does)."""
    runs: dict[str, list[tuple[float, str]]] = {}
    first_line: dict[str, int] = {}
    for lineno, text in _open_lines(path, sink, "run", section):
        parts = text.split()
        if len(parts) != 6:
            message = f"expected 6 columns `qid Q0 docid rank score tag`, got {len(parts)}"
            sink.error("bad_run_line", message, str(path), lineno, "")
            continue
        qid, _, docid, _rank, score, _tag = parts
        try:
            value = float(score)
        except ValueError:
            sink.error("bad_score", f"score {score!r} is not a number", str(path), lineno, "score")
            continue
        if not math.isfinite(value):
            hint = "write a finite number: trec_eval and Foundry cannot rank NaN or infinite scores"
            sink.error("non_finite_score", f"score {score!r} is not a finite number", str(path), lineno, "score", hint)
            continue
        runs.setdefault(qid, []).append((value, docid))
        first_line.setdefault(qid, lineno)
    return runs, first_line


def read_trec(
    directory: str | Path,
    mapping: DataSource,
    *,
    relevance_threshold: int | None = None,
    problems: list[Problem] | None = None,
    response_lines: dict[str, int] | None = None,
    label_lines: dict[str, list[int]] | None = None,
) -> Iterator[QueryRecord]:
    """Records from the TREC files named in ``mapping.dataset.trec``, relative to ``directory``.

    With ``problems`` given, problems are appended and bad lines skipped; otherwise the first raises DatasetError.
    ``response_lines``, if given, is filled with query id → line of its responses row, ``label_lines`` with query id
    → the qrels line of each of its labels, in ``retrieval_ground_truth`` order (validation's locations).
    """
    base = Path(directory)
    files = mapping.dataset.trec
    threshold = mapping.metrics.relevance_threshold if relevance_threshold is None else relevance_threshold
    sink = Sink(problems)
    qrels = read_qrels(base / files.qrels, sink, label_lines) if files.qrels else {}
    run_path = base / files.run
    runs, first_line = read_run(run_path, sink)
    queries = _read_queries(base / files.queries, sink) if files.queries else {}
    responses: dict[str, dict[str, Any]] = {}
    if files.responses:
        responses = _read_responses(base / files.responses, mapping, sink)
        if response_lines is not None:
            response_lines.update((qid, entry["line"]) for qid, entry in responses.items())

    # every query any file names, none silently lost: run order first (as trec_eval), then judged queries the
    # system returned nothing for (an empty ranking, like trec_eval -c), then queries known only by text or response
    order = list(dict.fromkeys([*runs, *qrels, *queries, *responses]))
    rebuild = mapping.context.source == "rebuilt_from_documents"
    for qid in order:
        docs = [RetrievedDocument(document_id=d, relevance_score=s) for s, d in trec_order(runs.get(qid, []))]
        labels = qrels.get(qid) if files.qrels else None
        resp = responses.get(qid, {})
        extra: dict[str, Any] = dict(resp.get("extra", {}))
        context = resp.get("context")
        if rebuild:
            context = None  # TREC runs carry no document text to rebuild from
            extra["context_source"] = "rebuilt_from_documents"
        query = queries.get(qid, resp.get("query"))
        yield run_record(qid, resp, docs, labels, threshold, query, context, extra, run_path, first_line.get(qid))


def run_record(
    qid: str,
    resp: dict[str, Any],
    docs: list[RetrievedDocument],
    labels: list[GroundTruthLabel] | None,
    threshold: int,
    query: str | None,
    context: str | None,
    extra: dict[str, Any],
    run_path: Path,
    line: int | None,
) -> QueryRecord:
    """One query's record from a run file's ranking, its labels and its responses-file entry (TREC and BEIR): the
    kind from the entry's declared kind or the labels (``derive_kind``), the response fields from the entry."""
    values = None if labels is None else (g.query_relevance_label for g in labels)
    kind, kind_source = derive_kind(resp.get("kind"), values, threshold)
    return QueryRecord(
        query_id=qid,
        query=query,
        kind=kind,
        kind_source=kind_source,
        retrieved_documents=docs,
        retrieval_ground_truth=labels,
        context=context,
        response=resp.get("response"),
        ground_truth=resp.get("ground_truth"),
        extra=extra,
        source=str(run_path),
        line=line,
    )


def json_lines(path: Path, sink: Sink, what: str, section: str = "trec") -> Iterator[tuple[int, Any]]:
    """(line, value) of every non-blank line of a JSONL file (TREC responses, BEIR queries and corpus), decoded by
    the one row decoder (``dataset.rows``): a line it refuses is reported in its words — code, message, fix — and
    skipped."""
    try:
        rows = jsonl_rows(path)
    except FileNotFoundError:
        sink.error("missing_file", f"{what} file not found", str(path), None, "", f"set dataset.{section}.{what}")
        return
    for row in rows:
        if isinstance(row.parsed, JsonLimitError):
            sink.error(row.parsed.code, row.parsed.message, str(path), row.line, "", row.parsed.hint)
            continue
        yield row.line, row.parsed


def _read_queries(path: Path, sink: Sink) -> dict[str, str]:
    queries: dict[str, str] = {}
    for lineno, text in _open_lines(path, sink, "queries"):
        qid, sep, query = text.partition("\t")
        if not sep:
            sink.error("bad_queries_line", "expected `qid<TAB>text`", str(path), lineno, "", "separate with a tab")
            continue
        queries[qid.strip()] = query
    return queries


def _read_responses(path: Path, mapping: DataSource, sink: Sink, section: str = "trec") -> dict[str, dict[str, Any]]:
    """query id → {line, context, response, ground_truth, kind, query, extra} from a JSONL file.

    A ``kind`` other than positive/negative is reported (``bad_kind``) and left out, so kind is derived.
    """
    f = mapping.dataset.fields
    paths = {
        name: compile_path(p)
        for name, p in (
            ("query", f.query),
            ("kind", f.kind_path),
            ("context", f.context),
            ("response", f.response),
            ("ground_truth", f.ground_truth),
        )
        if p
    }
    p_qid = compile_path(f.query_id)
    p_extra = {name: compile_path(p) for name, p in f.extra.items()}
    out: dict[str, dict[str, Any]] = {}
    for lineno, row in json_lines(path, sink, "responses", section):
        qid = get_path(row, p_qid) if isinstance(row, dict) else MISSING
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str):
            sink.error("missing_query_id", "query id is missing", str(path), lineno, f.query_id)
            continue
        entry: dict[str, Any] = {"line": lineno}
        for name, p in paths.items():
            value = get_path(row, p)
            if value is MISSING:
                continue
            if name == "kind":
                value = f.declared_kind(value)
                bad = kind_problem(value, f.kind)
                if bad is not None:
                    sink.error("bad_kind", bad[0], str(path), lineno, f.kind_path or "kind", bad[1])
                elif value is not None:
                    entry[name] = value
                continue
            if value is not None and not isinstance(value, str):
                code = "context_not_string" if name == "context" else "not_a_string"
                hint = (
                    'join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model'
                    if name == "context" and isinstance(value, list)
                    else None
                )
                sink.error(code, f"{name} must be a string, got {type(value).__name__}", str(path), lineno, name, hint)
                continue
            entry[name] = value
        extra = {name: get_path(row, p) for name, p in p_extra.items()}
        entry["extra"] = {k: v for k, v in extra.items() if v is not MISSING}
        out[qid] = entry
    return out
