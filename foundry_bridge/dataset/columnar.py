"""The ``metrics`` command's readers: JSONL (through the mapping's field paths) and TREC files, read straight into
the numeric core's arrays (``foundry_bridge.metrics._arrays``); every other dataset (tables, Hugging Face folders,
TREC and BEIR folders) goes through ``read_records`` (``load_dataset``, by ``choice.dataset_source``).

A JSONL file is read once, here, memory-mapped: each line is decoded in place with msgspec into small typed structs
generated from the mapping's field paths (a pydantic object per document would be most of the time on millions of
queries). The retrieved-document list is decoded as an array-like struct holding its first ``depth`` documents:
msgspec skips the rest of the list without building anything. A line whose top documents repeat an id, a negative
query whose list may go on (its distinct documents are counted), or a value the strict types reject (integer ids, a
null score) is decoded again with the whole list kept raw (``_line_reader``). A line neither takes — or every line,
when the mapping asks for what the typed structs cannot follow (list-index path segments, a rebuilt context, scores
from rank) — goes through the row parser every reader uses (``reader.row_parser``): the same record, or the
``DatasetError`` naming the file, line and field. Documents past the first ``depth`` distinct ones are not validated
(``validate`` checks them). The readers run the context-assembly check and the abstention heuristic while streaming,
so document texts, contexts and responses are never held for more than one query.
"""

from __future__ import annotations

import math
import operator
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

from .._io import gc_paused
from ..metrics._arrays import (
    AddQuery,
    ArraysBuilder,
    QueryArrays,
    RecordLike,
    check_threshold,
    from_records,
)
from ..metrics._limits import LABEL_MAX, LABEL_MIN
from ..metrics.abstention import is_abstention
from ..metrics.assembly import DEFAULT_MIN_PREFIX_CHARS, check_query
from .choice import JsonlFile, dataset_source
from .records import KINDS, derive_kind
from .spec import DataSource, KindField

__all__ = ["LoadResult", "arrays_from_rankings", "arrays_from_records", "load_dataset", "load_trec_files"]

LoadResult = tuple[QueryArrays, list[dict[str, Any]]]


class _Fallback(Exception):
    """The fast reader cannot handle this input: use the records path."""


def _classify(kind: Any, qrels: dict[Any, int] | None, threshold: int) -> tuple[str, str]:
    """(kind, kind_source) by ``derive_kind``; an invalid declared kind sends the row to the records path."""
    if kind is not None and kind not in KINDS:
        raise _Fallback("kind")
    return derive_kind(kind, None if qrels is None else qrels.values(), threshold)


# -- the records path (also the fallback) ----------------------------------------------------------------------
def arrays_from_records(
    records: Iterable[RecordLike],
    *,
    depth: int,
    relevance_threshold: int,
    abstention_phrases: Sequence[str] | None = None,
    min_prefix_chars: int = DEFAULT_MIN_PREFIX_CHARS,
) -> LoadResult:
    """Arrays plus assembly rows (queries that have a context) from records, in one pass."""
    t = check_threshold(relevance_threshold)
    assembly: list[dict[str, Any]] = []

    def check_assembly(rec: Any, ids: list[str], qrels: dict[str, int] | None) -> None:
        row = _record_assembly(rec, ids, qrels, t, min_prefix_chars)
        if row is not None:
            assembly.append(row)

    arrays = from_records(records, depth, t, abstention_phrases=abstention_phrases, on_record=check_assembly)
    return arrays, assembly


def _record_assembly(
    rec: Any, ids: list[str], qrels: dict[str, int] | None, t: int, min_prefix: int
) -> dict[str, Any] | None:
    """The assembly check of a record that has a context (its relevant top documents against it), else None."""
    if rec.context is None:
        return None
    content: dict[str, str | None] = {}
    for doc in rec.retrieved_documents:
        content.setdefault(doc.document_id, doc.content)
    relevant = [(i, content[i]) for i in ids if qrels and qrels.get(i, 0) >= t]
    return check_query(rec.query_id, rec.context, relevant, min_prefix_chars=min_prefix)


# -- JSONL, fast ---------------------------------------------------------------------------------------------
def compile_path(path: str) -> tuple[str, ...]:
    """``parse.compile_path`` (not imported: the fast reader starts without the row parser)."""
    return tuple(seg for seg in path.replace("[]", "").split(".") if seg)


def _struct(
    name: str,
    leaves: dict[tuple[str, ...], Any],
    *,
    required: Iterable[tuple[str, ...]] = (),
    defaults: dict[tuple[str, ...], Any] | None = None,
) -> tuple[type, dict[tuple[str, ...], str]]:
    """A msgspec Struct type decoding the given paths (→ type), and each path's dotted attribute name.

    A path is optional (``None`` when absent or null; ``defaults`` gives another value, the type then rejecting
    null) unless it is ``required``: then it and the objects on its way must be present and not null.
    """
    import msgspec

    tree: dict[str, Any] = {}
    for path, typ in leaves.items():
        if not path or any(seg.isdigit() for seg in path):
            raise _Fallback("list-index or empty path")
        node = tree
        for seg in path[:-1]:
            child = node.setdefault(seg, {})
            if not isinstance(child, dict):
                raise _Fallback("a path is a prefix of another")
            node = child
        if path[-1] in node:
            raise _Fallback("a path is a prefix of another, or used twice")
        node[path[-1]] = ("leaf", typ, path)

    must = {path[:i] for path in required for i in range(1, len(path) + 1)}
    defaults = defaults or {}
    counter = iter(range(1_000_000))
    attrs: dict[tuple[str, ...], str] = {}  # each path's dotted attribute name

    def build(node: dict[str, Any], prefix: tuple[str, ...], names: tuple[str, ...]) -> type:
        fields: list[tuple[str, Any, Any] | tuple[str, Any]] = []
        rename: dict[str, str] = {}
        for key, value in node.items():
            attr = f"f{next(counter)}"
            rename[attr] = key
            if isinstance(value, tuple):
                typ = value[1]
                attrs[value[2]] = ".".join((*names, attr))
            else:
                typ = build(value, (*prefix, key), (*names, attr))
            if (*prefix, key) in must:
                fields.append((attr, typ))
            elif isinstance(value, tuple) and value[2] in defaults:
                fields.append((attr, typ, defaults[value[2]]))
            else:
                fields.append((attr, typ | None, None))
        return msgspec.defstruct(f"{name}{next(counter)}", fields, rename=rename, kw_only=True, gc=False)

    root = build(tree, (), ())
    return root, attrs


def _getter(dotted: str) -> Callable[[Any], Any]:
    """attrgetter that yields None when an intermediate object is None."""
    if "." not in dotted:
        return operator.attrgetter(dotted)
    parts = dotted.split(".")

    def get(obj: Any) -> Any:
        for p in parts:
            if obj is None:
                return None
            obj = getattr(obj, p)
        return obj

    return get


def _str_id(value: Any) -> str:
    if type(value) is str:
        return value
    if value is None:
        raise _Fallback("missing id")
    return str(value)


def load_dataset(
    path: Any,
    mapping: DataSource,
    *,
    depth: int,
    relevance_threshold: int,
    abstention_phrases: Sequence[str] | None = None,
    min_prefix_chars: int = DEFAULT_MIN_PREFIX_CHARS,
) -> LoadResult:
    """Arrays and assembly rows from any dataset ``read_records`` reads, by the reader ``choice.dataset_source``
    picks: a JSONL file in one pass here (``_scan``); a table, a Hugging Face folder, TREC or BEIR (and a path that
    is no file: ``read_records`` says why) by ``read_records``. A row of a JSONL file or a table without its ranking
    (the mapping's ``retrieved_documents.path`` absent or null; ``[]`` is an empty ranking) is a ``DatasetError``,
    worded and located as ``validate`` reports it (``reader.row_parser(..., require_ranking=True)``).
    """
    t = check_threshold(relevance_threshold)
    if not isinstance(dataset_source(path, mapping.dataset), JsonlFile) or not Path(path).is_file():
        from . import read_records

        return arrays_from_records(
            read_records(path, mapping, relevance_threshold=t, require_ranking=True),
            depth=depth,
            relevance_threshold=t,
            abstention_phrases=abstention_phrases,
            min_prefix_chars=min_prefix_chars,
        )
    try:
        cfg: _FastConfig | None = _FastConfig(
            mapping, depth=depth, threshold=t, phrases=abstention_phrases, min_prefix=min_prefix_chars
        )
    except _Fallback:  # a mapping the typed decoders cannot follow: every line through the row parser
        cfg = None
    builder = ArraysBuilder(depth, t)
    assembly: list[dict[str, Any]] = []
    row_line = _row_line(mapping, str(path), builder, assembly, abstention_phrases, min_prefix_chars)
    _scan(cfg, Path(path), builder, assembly, row_line)
    if len(builder) == 0:
        from .reader import empty_dataset

        raise empty_dataset(path)
    return builder.build(), assembly


def _row_line(
    mapping: DataSource,
    name: str,
    builder: ArraysBuilder,
    assembly: list[dict[str, Any]],
    phrases: Sequence[str] | None,
    min_prefix: int,
) -> Callable[[int, bytes], None]:
    """``read(line, raw)``: one JSONL line the typed decoders do not take, through the row parser every reader
    uses (``reader.row_parser``, built on first use), into ``builder``; its first problem raised at its line."""
    from ..metrics._arrays import record_adder

    add_record = record_adder(builder, phrases)
    parser: list[Callable[[int, Any], Any]] = []

    def read(line: int, raw: bytes) -> None:
        if not parser:
            from ._json import decode
            from .reader import row_parser

            parse = row_parser(mapping, name, builder.threshold, True)
            parser.append(lambda at, text: parse(at, decode(text)))
        parsed = parser[0](line, raw)
        if parsed.record is None:
            raise parsed.problems[0].to_error()
        ids, qrels = add_record(parsed.record)
        row = _record_assembly(parsed.record, ids, qrels, builder.threshold, min_prefix)
        if row is not None:
            assembly.append(row)

    return read


def _decoders(
    f: Any, id_type: Any, top: bool, *, depth: int, want_content: bool
) -> tuple[Any, Any, dict[Any, str], dict[Any, str], dict[Any, str]]:
    """msgspec decoders for rows under the field paths ``f``, and the attribute names of each path's leaf.

    ``top``: ids and label values required, missing scores NaN, only the first ``depth`` documents.
    """
    import msgspec

    d, g = f.retrieved_documents, f.retrieval_ground_truth
    row_leaves: dict[tuple[str, ...], Any] = {compile_path(f.query_id): str | int}
    for p in (f.kind_path, f.context, f.response):
        if p:
            row_leaves[compile_path(p)] = str
    if isinstance(f.kind, KindField):  # the data's own values, read through the mapping's lists
        row_leaves[compile_path(f.kind.field)] = str | int | bool
    lab_attrs: dict[tuple[str, ...], str] = {}
    if g:
        # a label the int64 arrays cannot hold is a validation error here: the row parser then words it
        label = Annotated[int, msgspec.Meta(ge=LABEL_MIN, le=LABEL_MAX)]
        lab_leaves = {compile_path(g.document_id): id_type, compile_path(g.query_relevance_label): label}
        lab_type, lab_attrs = _struct("Label", lab_leaves, required=lab_leaves if top else ())
        row_leaves[compile_path(g.path)] = list[lab_type]  # type: ignore[valid-type]
    docs_dec: Any = None
    doc_attrs: dict[tuple[str, ...], str] = {}
    if d:
        id_path = compile_path(d.document_id)
        doc_leaves: dict[tuple[str, ...], Any] = {id_path: id_type}
        nan_score: dict[tuple[str, ...], Any] = {}
        if d.relevance_score:
            doc_leaves[compile_path(d.relevance_score)] = float
            nan_score[compile_path(d.relevance_score)] = math.nan
        if want_content and d.content:
            doc_leaves[compile_path(d.content)] = str
        if top:
            doc_type, doc_attrs = _struct("Doc", doc_leaves, required=[id_path], defaults=nan_score)
            # the first `depth` list elements as the fields of an array-like struct: msgspec skips the rest
            # of the list without building anything; a missing element leaves its field None (a JSON null
            # element is a validation error, as in the list decoder)
            fields = [(f"r{i}", doc_type, None) for i in range(depth)]
            row_leaves[compile_path(d.path)] = msgspec.defstruct("Top", fields, array_like=True, gc=False)
        else:
            doc_type, doc_attrs = _struct("Doc", doc_leaves)
            docs_dec = msgspec.json.Decoder(list[doc_type])  # type: ignore[valid-type]
            row_leaves[compile_path(d.path)] = list[msgspec.Raw]
    row_type, row_attrs = _struct("Row", row_leaves)
    return msgspec.json.Decoder(row_type), docs_dec, row_attrs, doc_attrs, lab_attrs


class _FastConfig:
    """msgspec decoders and attribute getters generated once from the mapping's field paths."""

    def __init__(
        self, mapping: DataSource, *, depth: int, threshold: int, phrases: Sequence[str] | None, min_prefix: int
    ) -> None:

        if mapping.context.source != "saved":
            raise _Fallback("context rebuilt from documents")
        f = mapping.dataset.fields
        d, g = f.retrieved_documents, f.retrieval_ground_truth
        if d is not None and getattr(d, "scores_from_rank", False):
            raise _Fallback("scores synthesized from rank")
        self.depth, self.threshold, self.phrases, self.min_prefix = depth, threshold, phrases, min_prefix
        self.ranked = d is not None  # every row must then hold its ranking (``[]`` when it retrieved nothing)
        want_content = bool(d and d.content and f.context)
        top_k = d is not None and 1 <= depth <= _TOP_K_MAX_DEPTH

        # the raw-list decoders read integer ids too (as strings); the top-k one, tried first on every line
        # (see _top_reader), only JSON strings
        def decoders(id_type: Any, top: bool) -> tuple[Any, Any, dict[Any, str], dict[Any, str], dict[Any, str]]:
            return _decoders(f, id_type, top, depth=depth, want_content=want_content)

        self.row_dec, self.docs_dec, row_attrs, doc_attrs, lab_attrs = decoders(str | int, False)
        self.top_dec: Any
        self.top_dec, _, *attrs_t = decoders(str, True) if top_k else (None, None, row_attrs, doc_attrs, lab_attrs)
        if attrs_t != [row_attrs, doc_attrs, lab_attrs]:
            raise _Fallback("internal: decoder layouts differ")
        # both label fields at the top of the label object: a label struct is the pair (id, value) in that order,
        # so `dict(map(astuple, labels))` builds the qrels in C (twice as fast as a comprehension of getters)
        pair = [lab_attrs[compile_path(p)] for p in (g.document_id, g.query_relevance_label)] if g else []
        self.top_labels_pairs = pair == ["f0", "f1"]
        # in top_dec's types a score is never None when its objects are the id's (a missing score decodes as NaN)
        id_path = compile_path(d.document_id) if d else ()
        self.score_path = compile_path(d.relevance_score) if d and d.relevance_score else None
        self.top_scores_clean = self.score_path is None or self.score_path[:-1] == id_path[: len(self.score_path) - 1]

        def none(_obj: Any) -> Any:
            return None

        self.get_qid = _getter(row_attrs[compile_path(f.query_id)])
        get_kind = _getter(row_attrs[compile_path(f.kind_path)]) if f.kind_path else none
        # the data's own kind values read through the mapping's lists (``FieldPaths.declared_kind``)
        self.get_kind = (lambda row: f.declared_kind(get_kind(row))) if isinstance(f.kind, KindField) else get_kind
        self.get_context = _getter(row_attrs[compile_path(f.context)]) if f.context else none
        self.get_response = _getter(row_attrs[compile_path(f.response)]) if f.response else none
        self.get_docs = _getter(row_attrs[compile_path(d.path)]) if d else none
        self.get_doc_id = _getter(doc_attrs[compile_path(d.document_id)]) if d else none
        self.get_score = _getter(doc_attrs[compile_path(d.relevance_score)]) if d and d.relevance_score else none
        self.get_content = _getter(doc_attrs[compile_path(d.content)]) if d and d.content and want_content else none
        self.get_labels = _getter(row_attrs[compile_path(g.path)]) if g else none
        self.get_lab_id = _getter(lab_attrs[compile_path(g.document_id)]) if g else none
        self.get_lab_value = _getter(lab_attrs[compile_path(g.query_relevance_label)]) if g else none


# above this depth the top-k struct would be wide: every line takes the raw-list path
_TOP_K_MAX_DEPTH = 256


def _scan(
    cfg: _FastConfig | None,
    path: Path,
    builder: ArraysBuilder,
    assembly: list[dict[str, Any]],
    row_line: Callable[[int, bytes], None],
) -> None:
    """Read every line of the file into ``builder``, in one pass: by ``top_dec`` (``_top_reader``), else the
    raw-list reader (``_line_reader``), else (or every line, without ``cfg``) the row parser (``row_line``)."""
    import mmap

    import msgspec

    add = builder.adder()
    line = _line_reader(cfg, add, assembly) if cfg is not None else None
    top_row = _top_reader(cfg, add, assembly) if cfg is not None and cfg.top_dec is not None else None
    top_dec = cfg.top_dec.decode if cfg is not None and cfg.top_dec is not None else None
    validation_error, decode_error = msgspec.ValidationError, msgspec.DecodeError
    end = path.stat().st_size
    if end == 0:
        return
    lineno = 0

    # the GC paused: millions of short-lived containers and no cycles, collections would only rescan them
    with gc_paused(), open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        find, pos = mm.find, 0
        # pages already read are dropped from this process's mapping (they stay in the page cache), so the
        # resident size does not grow with the file
        drop = getattr(mmap, "MADV_DONTNEED", None)
        done_until = 0
        with memoryview(mm) as view:
            while pos < end:
                if drop is not None and pos - done_until >= _DROP_EVERY:
                    cut = pos - pos % mmap.PAGESIZE
                    mm.madvise(drop, done_until, cut - done_until)
                    done_until = cut
                stop = find(b"\n", pos, end)
                stop = end if stop < 0 else stop + 1
                lineno += 1
                with view[pos:stop] as text:  # released at once: the map closes only when no view is left
                    pos = stop
                    if text[0] in _WHITESPACE and bytes(text).isspace():
                        continue
                    try:
                        try:
                            done = top_row is not None and top_row(top_dec(text))  # type: ignore[misc]
                        except validation_error:
                            done = False
                        if not done and line is not None:
                            line(bytes(text))
                            done = True
                    except (_Fallback, decode_error, RecursionError):
                        done = False
                    if not done:
                        row_line(lineno, bytes(text))


def _top_reader(cfg: _FastConfig, add: AddQuery, assembly: list[dict[str, Any]]) -> Callable[[Any], bool]:
    """A row decoded by ``top_dec``, given to ``add``; False (nothing added) when it needs the raw-list reader:
    repeated ids in the top ``depth`` (later documents move up), or a negative query whose list may go on (its
    distinct documents are counted). This runs once per query."""
    import msgspec

    depth, threshold, get_qid, get_kind = cfg.depth, cfg.threshold, cfg.get_qid, cfg.get_kind
    get_docs, get_score, get_labels = cfg.get_docs, cfg.get_score, cfg.get_labels
    get_doc_id, get_lab_id, get_lab_value = cfg.get_doc_id, cfg.get_lab_id, cfg.get_lab_value
    clean_scores, no_score = cfg.top_scores_clean, [math.nan] * depth
    label_pairs = cfg.top_labels_pairs
    astuple = msgspec.structs.astuple

    def read(row: Any) -> bool:
        try:
            qid = get_qid(row)
            if type(qid) is not str or not qid:
                qid = _query_id(qid)
            labs = get_labels(row)
            qrels: dict[str, int] | None
            if labs is None:
                qrels = None
            elif label_pairs:  # the same dict: a repeated id keeps its last label either way
                qrels = dict(map(astuple, labs))
            else:
                qrels = {get_lab_id(x): get_lab_value(x) for x in labs}
            kind, kind_source = _classify(get_kind(row), qrels, threshold)
            top = get_docs(row)
            if top is None:  # the ranking absent or null: an error the records path words and locates
                raise _Fallback("no ranking")
            docs: Sequence[Any] = astuple(top)  # `depth` documents, None past a shorter end
            if docs and docs[-1] is None:
                docs = docs[: docs.index(None)]
            ids = list(map(get_doc_id, docs))
            n = len(ids)
            if len(set(ids)) != n:
                return False
            if n < depth:
                n_ret = n  # the whole list was read
            elif kind == "negative":
                return False
            else:
                n_ret = -1
            if cfg.score_path is None:
                scores: Sequence[Any] = no_score[:n]
            elif clean_scores:
                scores = list(map(get_score, docs))
            else:
                scores = [math.nan if v is None else v for v in map(get_score, docs)]
            _emit(cfg, add, assembly, row, qid, (kind, kind_source), ids, docs, scores, qrels, n_ret)
        except TypeError as exc:
            raise _Fallback(str(exc)) from exc
        return True

    return read


_WHITESPACE = frozenset(b" \t\r\n")
_DROP_EVERY = 32 << 20


def _line_reader(cfg: _FastConfig, add: Callable[..., None], assembly: list[dict[str, Any]]) -> Callable[[bytes], None]:
    """One JSONL line through the raw-list decoders (all documents kept raw, integer ids read as strings)."""
    import msgspec

    depth, threshold, get_qid, get_kind = cfg.depth, cfg.threshold, cfg.get_qid, cfg.get_kind
    row_dec, docs_dec = cfg.row_dec.decode, cfg.docs_dec.decode if cfg.docs_dec else None
    get_docs, get_score = cfg.get_docs, cfg.get_score
    get_labels, get_lab_id, get_lab_value = cfg.get_labels, cfg.get_lab_id, cfg.get_lab_value
    ranked = cfg.ranked
    validation_error = msgspec.ValidationError
    join = b",".join

    def read(line: bytes) -> None:
        try:
            row = row_dec(line)
            qid = get_qid(row)
            if type(qid) is not str or not qid:
                qid = _query_id(qid)
            labs = get_labels(row)
            qrels: dict[str, int] | None
            if labs is None:
                qrels = None
            else:
                qrels = {get_lab_id(x): get_lab_value(x) for x in labs}
                if not _all_text(qrels):  # an integer id is read as its text
                    qrels = {_str_id(get_lab_id(x)): get_lab_value(x) for x in labs}
            if qrels and (None in qrels or None in qrels.values()):
                raise _Fallback("label or label id missing")

            kind, kind_source = _classify(get_kind(row), qrels, threshold)

            raws = get_docs(row)
            if raws is None and ranked:  # the ranking absent or null: the records path words and locates it
                raise _Fallback("no ranking")
            if raws:
                docs = docs_dec(b"[" + join(raws[:depth]) + b"]")  # type: ignore[misc]
                ids = _doc_ids(cfg, docs)
                n = len(ids)
                if len(set(ids)) == n and len(raws) <= depth:
                    n_ret = n
                elif kind != "negative" and len(set(ids)) == n:
                    n_ret = -1
                else:
                    docs, ids, n_ret = _dedup_docs(cfg, raws, docs, ids)
                scores = list(map(get_score, docs))
            else:
                docs, ids, scores, n_ret = [], [], [], 0

            _emit(cfg, add, assembly, row, qid, (kind, kind_source), ids, docs, scores, qrels, n_ret)
        except (validation_error, msgspec.DecodeError, TypeError, RecursionError) as exc:
            raise _Fallback(str(exc)) from exc

    return read


def _query_id(value: Any) -> str:
    if type(value) is int:
        return str(value)
    raise _Fallback("query id missing, empty or not a string")


def _all_text(values: Iterable[Any]) -> bool:
    """Every value a string (``str.join`` refuses anything else, and is the fastest look at them all)."""
    try:
        "".join(values)
    except TypeError:
        return False
    return True


def _doc_ids(cfg: _FastConfig, docs: list[Any]) -> list[str]:
    """The documents' ids, an integer id read as its text; a missing one sends the line to the row parser."""
    ids = list(map(cfg.get_doc_id, docs))
    if _all_text(ids):
        return ids
    if None in ids:
        raise _Fallback("document id missing")
    return [str(i) for i in ids]


def _dedup_docs(cfg: _FastConfig, raws: list[Any], docs: list[Any], ids: list[str]) -> tuple[list[Any], list[str], int]:
    """First occurrences (all documents decoded when needed): the top ``depth`` docs, their ids, the distinct count."""
    if len(raws) > cfg.depth:
        docs = cfg.docs_dec.decode(b"[" + b",".join(raws) + b"]")
        ids = _doc_ids(cfg, docs)
    first: dict[str, Any] = {}
    for i, x in zip(ids, docs, strict=True):
        if i not in first:
            first[i] = x
    top = list(first)[: cfg.depth]
    return [first[i] for i in top], top, len(first)


def _emit(
    cfg: _FastConfig,
    add: Callable[..., None],
    assembly: list[dict[str, Any]],
    row: Any,
    qid: str,
    kind: tuple[str, str],
    ids: list[str],
    docs: Sequence[Any],
    scores: Sequence[Any],
    qrels: dict[str, int] | None,
    n_ret: int,
) -> None:
    """One decoded query to ``add`` (its abstention from the response), and its assembly check when it has a
    context (its relevant top documents against it)."""
    response = cfg.get_response(row)
    add(qid, *kind, ids, scores, qrels, n_ret, -1 if response is None else int(is_abstention(response, cfg.phrases)))
    context = cfg.get_context(row)
    if context is not None:
        t = cfg.threshold
        relevant = [(i, cfg.get_content(x)) for i, x in zip(ids, docs, strict=True) if qrels and qrels.get(i, 0) >= t]
        assembly.append(check_query(qid, context, relevant, min_prefix_chars=cfg.min_prefix))


# -- TREC files ------------------------------------------------------------------------------------------------
def load_trec_files(
    qrels_path: str | os.PathLike[str],
    run_path: str | os.PathLike[str],
    *,
    depth: int,
    relevance_threshold: int,
) -> LoadResult:
    """Arrays from a qrels file (``qid 0 docid label``) and a run file (``qid Q0 docid rank score tag``), parsed by
    the TREC reader's own functions (``trec.read_qrels``, ``trec.read_run``, ``trec.trec_order``).

    Each query's run is ordered as trec_eval orders it — score descending, ties by document id descending — and the
    rank column is ignored; a repeated document keeps its first (highest) position. Queries: those of the run in
    order of first appearance, then qrels-only queries with an empty ranking (trec_eval ``-c``). Kind comes from the
    labels (``derive_kind``); a run query without qrels has ``kind_source="unknown"``.
    """
    from .trec import Sink, read_qrels, read_run, trec_order

    t = check_threshold(relevance_threshold)
    sink = Sink(None)
    qrels = {
        qid: {g.document_id: g.query_relevance_label for g in labels}
        for qid, labels in read_qrels(Path(qrels_path), sink).items()
    }
    runs, _ = read_run(Path(run_path), sink)
    if not runs and not qrels:
        from .reader import empty_dataset

        raise empty_dataset(run_path)
    order = [*runs, *(q for q in qrels if q not in runs)]
    return arrays_from_rankings({q: trec_order(r) for q, r in runs.items()}, qrels, order, depth=depth, threshold=t), []


def arrays_from_rankings(
    rankings: Mapping[str, Sequence[tuple[float | None, str]]],
    qrels: Mapping[str, dict[str, int]],
    order: Sequence[str],
    *,
    depth: int,
    threshold: int,
) -> QueryArrays:
    """Arrays of the queries ``order`` names, in that order: each query's ``(score, docid)`` ranking as given (rank
    order; a query ``rankings`` lacks has an empty one, as trec_eval ``-c``), a repeated document kept at its first
    position, labelled by ``qrels`` (kind from the labels, ``derive_kind``; no qrels entry: ``kind_source``
    ``unknown``). The TREC files' reader and ``compare --qrels`` build their arrays here."""
    builder = ArraysBuilder(depth, threshold)
    add = builder.adder()
    for qid in order:
        first: dict[str, float | None] = {}
        for score, doc in rankings.get(qid, ()):
            first.setdefault(doc, score)
        ids = list(first)[:depth]
        labels = qrels.get(qid)
        kind, source = derive_kind(None, None if labels is None else labels.values(), threshold)
        add(qid, kind, source, ids, [first[i] for i in ids], labels, len(first), -1)
    return builder.build()


def read_qrels_file(path: str | os.PathLike[str], relevance_threshold: int = 1) -> dict[str, dict[str, int]]:
    """query id → {document id → label} from a qrels file: BEIR's ``query-id<TAB>corpus-id<TAB>score`` for a
    ``.tsv`` file (its header line skipped), else TREC's ``qid 0 docid label``; each parsed by its reader
    (``beir``, ``trec.read_qrels``), the first bad line a located ``DatasetError``. A document judged twice keeps
    its last label (trec_eval's)."""
    from .beir import _read_qrels_tsv
    from .trec import Sink, read_qrels

    source = Path(path)
    read = _read_qrels_tsv if source.suffix.lower() == ".tsv" else read_qrels
    qrels = {
        qid: {g.document_id: g.query_relevance_label for g in labels}
        for qid, labels in read(source, Sink(None)).items()
    }
    if not qrels:
        from .reader import empty_dataset

        raise empty_dataset(path)
    return qrels


def read_ranking_file(
    path: str | os.PathLike[str], mapping: DataSource | None = None
) -> dict[str, list[tuple[float | None, str]]]:
    """query id → its ``(score, docid)`` ranking in rank order, from a run file by its name: a BEIR ``.json`` run
    (``{qid: {docid: score}}``) or a TREC run (``qid Q0 docid rank score tag``), both in trec_eval's order (score
    descending, ties by document id descending; the rank column ignored); a ``.jsonl`` file is the project's JSONL
    read through ``mapping`` (``read_records``), its ranking as stored (the order
    ``metrics`` ranks it in). Each by the readers of its format; the first problem is a located ``DatasetError``."""
    from .beir import read_run_file
    from .trec import Sink, trec_order

    source = Path(path)
    if source.suffix.lower() == ".jsonl":
        from . import read_records

        if mapping is None:
            raise ValueError("a JSONL run is read through a mapping")
        return {
            rec.query_id: [(d.relevance_score, d.document_id) for d in rec.retrieved_documents]
            for rec in read_records(source, mapping, require_ranking=True)
        }
    runs, _ = read_run_file(source, Sink(None))
    if not runs:
        from .reader import empty_dataset

        raise empty_dataset(path)
    return {qid: list(trec_order(pairs)) for qid, pairs in runs.items()}
