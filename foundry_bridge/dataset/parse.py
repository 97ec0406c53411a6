"""Turn one parsed JSON row into a ``QueryRecord`` through the mapping's field paths, collecting problems.

Field paths: ``a.b.c`` walks nested objects; a numeric segment (``turns.0.text``) indexes a list. A document list
is ``path`` (``docs`` or ``docs[]``) plus per-element keys, themselves paths (``id``, ``meta.score``).

Type rules (documented in docs/mapping.md):
- ``query_id`` and document ids are strings; an integer id is read as its decimal string (``7`` → ``"7"``) and the
  validator warns about it, so ``1`` and ``"1"`` in one list show up as a duplicate id, never silently merged.
  Floats, booleans, objects as ids are errors.
- labels must be JSON integers (``2.0`` and ``true`` are rejected, as Foundry does); scores are numbers or absent.
- ``context`` must be one string (the exact text the model received).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from .._text import did_you_mean
from ..metrics._limits import label_range_message
from .problems import Problem
from .records import GroundTruthLabel, QueryRecord, RetrievedDocument, derive_kind, kind_problem
from .spec import DataSource

__all__ = [
    "FIELD_TYPES",
    "MISSING",
    "ParsedRow",
    "RowParser",
    "compile_path",
    "field_setting",
    "fits_role",
    "float_label_problem",
    "get_path",
    "missing_key_hint",
    "quoted_number_hint",
    "rename_hint",
    "value_role",
]


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()

Path = tuple[str, ...]
_Doc = tuple[str, float | None, str | None, str | None]  # id, score, content, title


def compile_path(path: str) -> Path:
    """``"docs[].meta.id"`` → ``("docs", "meta", "id")`` (``[]`` markers are decoration)."""
    return tuple(seg for seg in path.replace("[]", "").split(".") if seg)


def get_path(obj: Any, path: Path) -> Any:
    """The value at ``path`` in ``obj``, or ``MISSING``."""
    if len(path) == 1 and type(obj) is dict:  # the common case, kept fast
        return obj.get(path[0], MISSING)
    for seg in path:
        if isinstance(obj, dict):
            obj = obj.get(seg, MISSING)
            if obj is MISSING:
                return MISSING
        elif isinstance(obj, list) and seg.isdigit() and int(seg) < len(obj):
            obj = obj[int(seg)]
        else:
            return MISSING
    return obj


@dataclass
class ParsedRow:
    """A record (``None`` if unusable) with the problems found and the fields absent from the row: canonical
    fields and ``extra`` names whose path is not in the row (a document or label list also when it is null)."""

    record: QueryRecord | None
    problems: list[Problem] = field(default_factory=list)
    missing: set[str] = field(default_factory=set)
    int_ids: int = 0  # how many document ids were JSON integers (read as strings)
    int_id: tuple[str, int] | None = None  # the first of them: its path in the row and its value
    item: dict[str, Any] | None = None  # with ``records=False``: the wire-form item (``QueryRecord.item()``)
    kind_source: str | None = None


def float_label_problem(value: float) -> tuple[str, str]:
    """Message and hint for a label given as a JSON float, or an integer beyond what the metric arrays hold (JSON
    parsers read integers past 64 bits as floats: judged by magnitude first)."""
    out_of_range = label_range_message(value)
    if out_of_range is not None:
        return out_of_range, "relevance labels are small integers (grades such as 0-3)"
    if float(value).is_integer():
        return f"label {value!r} is a float; Foundry requires JSON integers", f"write {int(value)}"
    return (
        f"label {value!r} is not an integer; a fractional value in a label field is probably a search score",
        "put human relevance labels (integers) here; search scores belong in relevance_score",
    )


# -- roles and hints, shared with the validator (foundry_bridge.validate._rows) ---------------------------------------

# the catalog input type each canonical field plays (extras play any); what a did-you-mean ranks candidates by
FIELD_TYPES: dict[str, str] = {
    "query_id": "string",
    "query": "string",
    "kind": "string",
    "context": "string",
    "response": "string",
    "ground_truth": "string",
    "retrieved_documents": "documents",
    "retrieval_ground_truth": "labels",
}


def value_role(value: Any) -> str:
    """What a JSON value can stand for: ``string``, ``documents`` or ``labels`` (a list whose first element has a
    ``relevance_score`` or a ``query_relevance_label`` key), ``list`` (any other list, empty included), ``object``,
    ``null`` or ``other``."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        first = value[0] if value else None
        if isinstance(first, dict):
            if "query_relevance_label" in first:
                return "labels"
            if "relevance_score" in first:
                return "documents"
        return "list"
    if value is None:
        return "null"
    return "object" if isinstance(value, dict) else "other"


def fits_role(input_type: str | None, role: str) -> bool:
    """Whether a value of ``role`` (``value_role``) can be what an input of ``input_type`` (the catalog's types;
    ``None``: any non-null value) reads: a list of labels never fits a string, nor a ranking a label list."""
    return role != "null" and (input_type not in _FITS or role in _FITS[input_type])


_FITS = {
    "string": {"string"},
    "documents": {"documents", "list"},
    "labels": {"labels", "list"},
    "messages": {"documents", "labels", "list"},
    "string_or_messages": {"string", "documents", "labels", "list"},
}


def field_setting(name: str) -> str:
    """The mapping key under ``dataset.fields`` that says where item field ``name`` is read from."""
    if name in ("retrieved_documents", "retrieval_ground_truth"):
        return f"{name}.path"
    return name if name in FIELD_TYPES else f"extra.{name}"


def rename_hint(expected: str, found: str, holder: str, setting: str | None, path: str | None = None) -> str:
    """The fix for ``expected`` missing where ``holder`` (``the row has``, ``the rows have``) the unread key ``found``:
    rename it, or point the mapping's ``setting`` at it (``path``, default ``found``; ``setting`` None: no mapping,
    hand-written criteria)."""
    if setting is None:
        return f"did you mean {expected!r}? {holder} {found!r}, which no criterion reads: rename it"
    return (
        f"did you mean {expected!r}? {holder} {found!r}, which the mapping does not read: rename it, or set "
        f"dataset.fields.{setting}: {path or found}"
    )


def missing_key_hint(entry: dict[str, Any], key: str, other: str, setting: str | None) -> str | None:
    """A did-you-mean for an entry of a document or label list that lacks ``key`` (a top-level key of the entry)
    but has a close one, other than the key ``other`` the mapping reads there; None when it has none."""
    guess = did_you_mean(key, [k for k in entry if k not in (key, other)])
    return None if guess is None else rename_hint(key, guess, "the entry has", setting)


def quoted_number_hint(value: Any) -> str | None:
    """The fix for a number written as a JSON string (``"0.90"``), or None when ``value`` is not one."""
    if not isinstance(value, str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return f"write {value.strip()} without quotes: a JSON number" if math.isfinite(number) else None


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "object"}.get(
        type(value), type(value).__name__
    )


_T = TypeVar("_T")


class _Fields(NamedTuple):
    """A valid row's canonical fields, between reading and building the record or the run item."""

    query_id: str
    query: str | None
    kind: str
    kind_source: str
    context: str | None
    response: str | None
    ground_truth: str | None
    docs: list[_Doc]
    labels: list[tuple[str, int]] | None
    extra: dict[str, Any]


def _item(f: _Fields) -> dict[str, Any]:
    """The run item of a valid row: only what the criteria read, in the recorded key order."""
    item: dict[str, Any] = {"query_id": f.query_id}
    if f.query is not None:
        item["query"] = f.query
    item["kind"] = f.kind
    for name, value in (("context", f.context), ("response", f.response), ("ground_truth", f.ground_truth)):
        if value is not None:
            item[name] = value
    item["retrieved_documents"] = [{"document_id": d[0], "relevance_score": d[1]} for d in f.docs]
    if f.labels is not None:
        item["retrieval_ground_truth"] = [{"document_id": g[0], "query_relevance_label": g[1]} for g in f.labels]
    item.update(f.extra)
    return item


class RowParser:
    """Compiled field paths of one mapping; ``parse(row, line)`` gives a ``ParsedRow``."""

    def __init__(
        self,
        mapping: DataSource,
        *,
        source: str | None = None,
        relevance_threshold: int | None = None,
        records: bool = True,
    ) -> None:
        self.records = records  # False: fill ``ParsedRow.item`` (plain dicts) instead of building a QueryRecord
        f = mapping.dataset.fields
        self.mapping = mapping
        self.source = source
        self.threshold = mapping.metrics.relevance_threshold if relevance_threshold is None else relevance_threshold
        self.fields = f
        self.p_query_id = compile_path(f.query_id)
        self.p_query = compile_path(f.query)
        self.p_kind = compile_path(f.kind_path) if f.kind_path else None
        self.p_context = compile_path(f.context) if f.context else None
        self.p_response = compile_path(f.response) if f.response else None
        self.p_ground_truth = compile_path(f.ground_truth) if f.ground_truth else None
        d = f.retrieved_documents
        self.p_docs = compile_path(d.path) if d else None
        self.p_doc_id = compile_path(d.document_id) if d else ()
        self.p_doc_score = compile_path(d.relevance_score) if d and d.relevance_score else None
        self.p_doc_content = compile_path(d.content) if d and d.content else None
        self.p_doc_title = compile_path(d.title) if d and d.title else None
        self.scores_from_rank = bool(d and d.scores_from_rank)
        g = f.retrieval_ground_truth
        self.p_labels = compile_path(g.path) if g else None
        self.p_label_id = compile_path(g.document_id) if g else ()
        self.p_label_value = compile_path(g.query_relevance_label) if g else ()
        self.p_extra = {name: compile_path(p) for name, p in f.extra.items()}
        self.rebuild = mapping.context.source == "rebuilt_from_documents"
        self.separator = mapping.context.separator
        self.top_k = mapping.context.top_k

    # -- helpers -----------------------------------------------------------------------------------------------
    def _problem(
        self, problems: list[Problem], code: str, message: str, line: int, field_: str, hint: str | None = None
    ) -> None:
        problems.append(Problem("error", code, message, self.source, line, field_, hint))

    def _string(self, row: dict[str, Any], path: Path | None, name: str, line: int, out: ParsedRow) -> str | None:
        if path is None:
            return None
        value = get_path(row, path)
        if value is MISSING:
            out.missing.add(name)
            return None
        if value is None or isinstance(value, str):
            return value
        self._problem(out.problems, "not_a_string", f"must be a string, got {_type_name(value)}", line, ".".join(path))
        return None

    def _id(self, value: Any, line: int, field_: str, out: ParsedRow) -> str | None:
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            out.int_ids += 1
            if out.int_id is None:
                out.int_id = (field_, value)
            return str(value)
        if value is MISSING or value is None:
            self._problem(out.problems, "missing_id", "document id is missing", line, field_)
        else:
            self._problem(
                out.problems,
                "bad_id",
                f"document id must be a string, got {_type_name(value)} {value!r}",
                line,
                field_,
                "write ids as JSON strings",
            )
        return None

    # -- the row -----------------------------------------------------------------------------------------------
    def parse(self, row: Any, line: int) -> ParsedRow:
        """One row → a ``ParsedRow``: the record (or run item) when the row has no error, and every problem."""
        out = ParsedRow(None)
        if not isinstance(row, dict):
            self._problem(
                out.problems, "not_an_object", f"a row must be a JSON object, got {_type_name(row)}", line, ""
            )
            return out
        query_id = self._query_id(row, line, out)
        query = self._string(row, self.p_query, "query", line, out)
        response = self._string(row, self.p_response, "response", line, out)
        ground_truth = self._string(row, self.p_ground_truth, "ground_truth", line, out)
        docs = self._list(row, self.p_docs, "retrieved_documents", line, out, self._documents) or []
        labels = self._list(row, self.p_labels, "retrieval_ground_truth", line, out, self._labels)
        extra: dict[str, Any] = {}
        context = self._context(row, docs, extra, line, out)
        kind, kind_source = self._kind(row, labels, line, out)
        for name, path in self.p_extra.items():
            value = get_path(row, path)
            if value is not MISSING:
                extra[name] = value
            else:
                out.missing.add(name)
        if query_id is None or any(p.severity == "error" for p in out.problems):
            return out
        out.kind_source = kind_source
        fields = _Fields(query_id, query, kind, kind_source, context, response, ground_truth, docs, labels, extra)
        if self.records:
            out.record = self._record(fields, line)
        else:
            out.item = _item(fields)
        return out

    def _query_id(self, row: dict[str, Any], line: int, out: ParsedRow) -> str | None:
        """The row's query id as a string (an integer id is read as its decimal string), or None with a problem."""
        f = self.fields
        qid_raw = get_path(row, self.p_query_id)
        if isinstance(qid_raw, str) and qid_raw:
            return qid_raw
        if isinstance(qid_raw, int) and not isinstance(qid_raw, bool):
            return str(qid_raw)
        if qid_raw is MISSING or qid_raw is None or qid_raw == "":
            guess = did_you_mean(f.query_id, list(row)) if qid_raw is MISSING else None
            self._problem(
                out.problems,
                "missing_query_id",
                "query id is missing",
                line,
                f.query_id,
                f"did you mean {guess!r}? (set dataset.fields.query_id)" if guess else "every row needs a query id",
            )
        else:
            self._problem(
                out.problems, "bad_query_id", f"query id must be a string, got {_type_name(qid_raw)}", line, f.query_id
            )
        return None

    def _list(
        self,
        row: dict[str, Any],
        path: tuple[str, ...] | None,
        name: str,
        line: int,
        out: ParsedRow,
        read: Callable[[list[Any], str, int, ParsedRow], _T],
    ) -> _T | None:
        """The list at ``path`` read by ``read``; None when the mapping has no such field, or the row lacks it
        (noted in ``out.missing``) or holds something other than a list (a problem)."""
        if path is None:
            return None
        raw = get_path(row, path)
        where = ".".join(path)
        if raw is MISSING or raw is None:
            out.missing.add(name)
        elif not isinstance(raw, list):
            self._problem(out.problems, "not_a_list", f"must be a list, got {_type_name(raw)}", line, where)
        else:
            return read(raw, where, line, out)
        return None

    def _context(
        self, row: dict[str, Any], docs: list[_Doc], extra: dict[str, Any], line: int, out: ParsedRow
    ) -> str | None:
        """The context string: as saved (the default), or rebuilt from the documents when the mapping asks (then
        labelled in ``extra['context_source']``). A list of chunks or a non-string is a problem, never joined."""
        if self.rebuild:
            chosen = docs[: self.top_k] if self.top_k else docs
            extra["context_source"] = "rebuilt_from_documents"
            return self.separator.join(d[2] for d in chosen if d[2])
        if self.p_context is None:
            return None
        value = get_path(row, self.p_context)
        if value is MISSING:
            out.missing.add("context")
        elif value is None or isinstance(value, str):
            return value
        elif isinstance(value, list):
            self._problem(
                out.problems,
                "context_not_string",
                f"context is a list of {len(value)} chunks, not a string",
                line,
                ".".join(self.p_context),
                'join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model',
            )
        else:
            self._problem(
                out.problems,
                "context_not_string",
                f"context must be a string, got {_type_name(value)}",
                line,
                ".".join(self.p_context),
            )
        return None

    def _record(self, f: _Fields, line: int) -> QueryRecord:
        return QueryRecord(
            query_id=f.query_id,
            query=f.query,
            kind=f.kind,
            kind_source=f.kind_source,
            retrieved_documents=[
                RetrievedDocument(document_id=d[0], relevance_score=d[1], content=d[2], title=d[3]) for d in f.docs
            ],
            retrieval_ground_truth=(
                None
                if f.labels is None
                else [GroundTruthLabel(document_id=g[0], query_relevance_label=g[1]) for g in f.labels]
            ),
            context=f.context,
            response=f.response,
            ground_truth=f.ground_truth,
            extra=f.extra,
            source=self.source,
            line=line,
        )

    def _documents(self, raw: list[Any], dpath: str, line: int, out: ParsedRow) -> list[_Doc]:
        docs: list[_Doc] = []
        id_key = ".".join(self.p_doc_id)
        for i, el in enumerate(raw):
            if type(el) is not dict:
                where = f"{dpath}[{i}]"
                self._problem(out.problems, "not_an_object", f"must be an object, got {_type_name(el)}", line, where)
                continue
            where = dpath  # completed with the index only when a problem is reported
            raw_id = get_path(el, self.p_doc_id)
            doc_id = raw_id if type(raw_id) is str else self._id(raw_id, line, f"{dpath}[{i}].{id_key}", out)
            score: float | None = None
            if self.scores_from_rank:
                score = float(len(raw) - i)
            elif self.p_doc_score is not None:
                s = get_path(el, self.p_doc_score)
                if isinstance(s, int | float) and not isinstance(s, bool):
                    score = s
                elif s is not MISSING and s is not None:
                    self._problem(
                        out.problems,
                        "bad_score",
                        f"relevance score must be a number, got {_type_name(s)} {s!r}",
                        line,
                        f"{where}[{i}].{'.'.join(self.p_doc_score)}",
                        quoted_number_hint(s),
                    )
            content = get_path(el, self.p_doc_content) if self.p_doc_content else None
            title = get_path(el, self.p_doc_title) if self.p_doc_title else None
            if doc_id is not None:
                docs.append(
                    (
                        doc_id,
                        score,
                        content if isinstance(content, str) else None,
                        title if isinstance(title, str) else None,
                    )
                )
        return docs

    def _labels(self, raw: list[Any], lpath: str, line: int, out: ParsedRow) -> list[tuple[str, int]]:
        labels: list[tuple[str, int]] = []
        id_key = ".".join(self.p_label_id)
        label_key = ".".join(self.p_label_value)
        for i, el in enumerate(raw):
            where = f"{lpath}[{i}]"
            if not isinstance(el, dict):
                self._problem(out.problems, "not_an_object", f"must be an object, got {_type_name(el)}", line, where)
                continue
            doc_id = self._id(get_path(el, self.p_label_id), line, f"{where}.{id_key}", out)
            value = get_path(el, self.p_label_value)
            if isinstance(value, int) and not isinstance(value, bool) and label_range_message(value) is None:
                if doc_id is not None:
                    labels.append((doc_id, value))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                message, hint = float_label_problem(value)
                code = "label_not_integer" if label_range_message(value) is None else "label_out_of_range"
                self._problem(out.problems, code, message, line, f"{where}.{label_key}", hint)
            elif value is MISSING or value is None:
                hint = None
                if value is MISSING and len(self.p_label_value) == 1:
                    setting = "retrieval_ground_truth.query_relevance_label"
                    hint = missing_key_hint(el, label_key, self.p_label_id[0], setting)
                self._problem(out.problems, "missing_label", "label is missing", line, f"{where}.{label_key}", hint)
            else:
                self._problem(
                    out.problems,
                    "label_not_integer",
                    f"label must be an integer, got {_type_name(value)} {value!r}",
                    line,
                    f"{where}.{label_key}",
                    "write labels as JSON integers",
                )
        return labels

    def _kind(
        self, row: dict[str, Any], labels: list[tuple[str, int]] | None, line: int, out: ParsedRow
    ) -> tuple[Any, Any]:
        value = None if self.p_kind is None else get_path(row, self.p_kind)
        if value is MISSING:
            out.missing.add("kind")
        else:
            value = self.fields.declared_kind(value)
        bad = None if value is MISSING or self.p_kind is None else kind_problem(value, self.fields.kind)
        if bad is not None:
            self._problem(out.problems, "bad_kind", bad[0], line, ".".join(self.p_kind or ()), bad[1])
            return "positive", "unknown"
        return derive_kind(value, None if labels is None else (g[1] for g in labels), self.threshold)
