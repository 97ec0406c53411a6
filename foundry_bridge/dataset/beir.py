"""BEIR's layout: ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``, ``text``),
``qrels/<split>.tsv`` (``query-id<TAB>corpus-id<TAB>score`` under a header line) and a run file in TREC format
(``qid Q0 docid rank score tag``, what BEIR's ``save_runfile`` writes) or, for a ``.json`` run, the
``{qid: {docid: score}}`` object its ``EvaluateRetrieval.retrieve`` returns, plus the optional responses JSONL of
TREC input; turned into the same ``QueryRecord``s as every other reader.

The queries evaluated are those of the run and of the qrels split (BEIR's ``queries.jsonl`` usually lists every
split's queries, so it only gives their text), then those only in the responses file; the order is the TREC
reader's. Run order is trec_eval's (``trec.trec_order``). The corpus is streamed once and only the retrieved
documents' title and text are kept (``content`` of each retrieved document, for the assembly check and
``context.source: rebuilt_from_documents``), so a corpus of millions of documents is never held in memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..metrics._limits import label_range_message
from ._json import JsonLimitError, decode_document
from .problems import Problem
from .records import GroundTruthLabel, QueryRecord, RetrievedDocument
from .spec import DataSource
from .trec import Sink, _open_lines, _read_responses, add_label, json_lines, read_run, run_record, trec_order

__all__ = ["read_beir", "read_run_file"]


def read_beir(
    directory: str | Path,
    mapping: DataSource,
    *,
    relevance_threshold: int | None = None,
    problems: list[Problem] | None = None,
    response_lines: dict[str, int] | None = None,
    label_lines: dict[str, list[int]] | None = None,
) -> Iterator[QueryRecord]:
    """Records from the BEIR files named in ``mapping.dataset.beir``, relative to ``directory``; problems,
    ``response_lines`` and ``label_lines`` as in ``read_trec`` (problems collected when ``problems`` is given, else
    the first raises ``DatasetError``)."""
    base = Path(directory)
    files = mapping.dataset.beir
    threshold = mapping.metrics.relevance_threshold if relevance_threshold is None else relevance_threshold
    sink = Sink(problems)
    qrels = _read_qrels_tsv(base / files.qrels, sink, label_lines) if files.qrels else {}
    run_path = base / files.run
    runs, first_line = read_run_file(run_path, sink, "beir")
    responses: dict[str, dict[str, Any]] = {}
    if files.responses:
        responses = _read_responses(base / files.responses, mapping, sink, "beir")
        if response_lines is not None:
            response_lines.update((qid, entry["line"]) for qid, entry in responses.items())
    order = list(dict.fromkeys([*runs, *qrels, *responses]))
    wanted = set(order)
    queries = _read_jsonl_texts(base / files.queries, sink, "queries", lambda qid: qid in wanted)
    retrieved = {d for pairs in runs.values() for _, d in pairs}
    corpus = _read_jsonl_texts(base / files.corpus, sink, "corpus", retrieved.__contains__) if files.corpus else {}
    for qid in order:
        docs = []
        for score, d in trec_order(runs.get(qid, [])):
            title, text = corpus.get(d, (None, None))
            docs.append(RetrievedDocument(document_id=d, relevance_score=score, content=text, title=title))
        labels = qrels.get(qid) if files.qrels else None
        resp = responses.get(qid, {})
        extra: dict[str, Any] = dict(resp.get("extra", {}))
        context = resp.get("context")
        if mapping.context.source == "rebuilt_from_documents":
            chosen = docs[: mapping.context.top_k] if mapping.context.top_k else docs
            context = mapping.context.separator.join(d.content for d in chosen if d.content)
            extra["context_source"] = "rebuilt_from_documents"
        query = queries.get(qid, (None, resp.get("query")))[1]
        yield run_record(qid, resp, docs, labels, threshold, query, context, extra, run_path, first_line.get(qid))


def read_run_file(
    path: Path, sink: Sink, section: str = "trec"
) -> tuple[dict[str, list[tuple[float, str]]], dict[str, int]]:
    """A run file by its name (what the BEIR reader and ``compare``'s run files read): a ``.json`` file is a BEIR
    run (no lines: the second dict is empty), anything else a TREC run (``trec.read_run``; ``section``: the
    mapping section its missing-file fix names)."""
    if path.suffix.lower() == ".json":
        return _read_json_run(path, sink), {}
    return read_run(path, sink, section)


def _read_json_run(path: Path, sink: Sink) -> dict[str, list[tuple[float, str]]]:
    """A run as BEIR's ``EvaluateRetrieval.retrieve`` returns it, saved as JSON: ``{qid: {docid: score}}``; problems
    are located by field (``qid.docid``), a JSON document having no lines to name."""
    import math

    try:
        data = decode_document(path.read_bytes())
    except FileNotFoundError:
        sink.error("missing_file", "run file not found", str(path), None, "", "set dataset.beir.run")
        return {}
    if isinstance(data, JsonLimitError):  # the input limits of every JSON reader (dataset._json)
        sink.error(data.code, data.message, str(path), data.line, "", data.hint)
        return {}
    if not isinstance(data, dict):
        sink.error("bad_run_line", "a JSON run is an object {qid: {docid: score}}", str(path), None, "")
        return {}
    runs: dict[str, list[tuple[float, str]]] = {}
    for qid, docs in data.items():
        if not isinstance(docs, dict):
            sink.error("bad_run_line", "must be an object {docid: score}", str(path), None, str(qid))
            continue
        pairs = runs.setdefault(str(qid), [])
        for docid, score in docs.items():
            if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
                sink.error("bad_score", f"score {score!r} is not a finite number", str(path), None, f"{qid}.{docid}")
                continue
            pairs.append((float(score), str(docid)))
    return runs


def _read_qrels_tsv(
    path: Path, sink: Sink, lines: dict[str, list[int]] | None = None
) -> dict[str, list[GroundTruthLabel]]:
    """query id → labels from ``query-id<TAB>corpus-id<TAB>score`` lines; a first line whose score is not a number
    is BEIR's header and is skipped. ``lines`` as in ``trec.read_qrels``."""
    qrels: dict[str, list[GroundTruthLabel]] = {}
    for lineno, text in _open_lines(path, sink, "qrels", "beir"):
        parts = text.split("\t")
        if len(parts) != 3:
            sink.error("bad_qrels_line", f"expected 3 tab-separated columns, got {len(parts)}", str(path), lineno, "")
            continue
        qid, docid, label = (p.strip() for p in parts)
        try:
            value = int(label)
        except ValueError:
            if lineno == 1 and not label.replace(".", "").lstrip("-").isdigit():
                continue  # the header: query-id corpus-id score
            hint = "put human relevance labels (integers) here; search scores belong in the run file"
            sink.error("label_not_integer", f"label {label!r} is not an integer", str(path), lineno, "score", hint)
            continue
        out_of_range = label_range_message(value)
        if out_of_range is not None:
            sink.error("label_out_of_range", out_of_range, str(path), lineno, "score", "relevance grades are small")
            continue
        add_label(qrels, lines, qid, docid, value, lineno)
    return qrels


def _read_jsonl_texts(path: Path, sink: Sink, what: str, keep: Any) -> dict[str, tuple[str | None, str | None]]:
    """``_id`` → (title, text) of the rows of a BEIR JSONL file whose id ``keep`` accepts (ids may be integers)."""
    out: dict[str, tuple[str | None, str | None]] = {}
    for lineno, row in json_lines(path, sink, what, "beir"):
        raw_id = row.get("_id") if isinstance(row, dict) else None
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            raw_id = str(raw_id)
        if not isinstance(raw_id, str):
            code = "missing_query_id" if what == "queries" else "missing_id"
            sink.error(code, "_id is missing", str(path), lineno, "_id")
            continue
        if keep(raw_id):
            title, body = row.get("title"), row.get("text")
            out[raw_id] = (title if isinstance(title, str) else None, body if isinstance(body, str) else None)
    return out
