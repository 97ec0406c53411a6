"""Columnar, padded ``(queries × depth)`` arrays: the one input shape of every metric in this package.

A ``QueryArrays`` holds, for each query, the labels of its top ``depth`` *distinct* retrieved documents in rank
order (a repeated document id counts at its first position; later repeats are removed and the documents after them
move up), their scores, the number of relevant qrels documents and the ideal (sorted) positive labels. Labels and
counts are int64 (``_limits``: a label outside ``LABEL_MIN .. LABEL_MAX`` is a ``LabelRangeError``, never a wrapped
value). Every reader — ``from_records`` here, the fast JSONL and TREC readers of ``foundry_bridge.dataset.columnar``
— feeds an ``ArraysBuilder`` one query at a time through its one ``adder()``; parts read in parallel are joined
before the arrays are shaped (``build_parts``). Then every metric is plain numpy on the arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Protocol

import numpy as np

from ..errors import DatasetError
from ._limits import LABEL_MAX, LABEL_MIN, NO_LABEL, label_range_message
from .abstention import is_abstention

__all__ = [
    "NO_LABEL",
    "AddQuery",
    "ArraysBuilder",
    "FlatPart",
    "LabelRangeError",
    "QueryArrays",
    "RecordLike",
    "build_parts",
    "check_threshold",
    "from_records",
]


def check_threshold(relevance_threshold: int) -> int:
    """Relevance thresholds below 1 would make unlabelled documents (label 0) relevant: reject them."""
    if isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, int | np.integer):
        raise ValueError(f"relevance_threshold must be an integer, got {relevance_threshold!r}")
    if relevance_threshold < 1:
        raise ValueError(f"relevance_threshold must be >= 1 (label 0 means irrelevant), got {relevance_threshold}")
    return int(relevance_threshold)


class LabelRangeError(DatasetError):
    """A label the int64 arrays cannot hold exactly (the readers report it with its file and line first)."""


class RecordLike(Protocol):
    """What ``from_records`` reads of a query record (``foundry_bridge.dataset.QueryRecord`` has it all)."""

    @property
    def query_id(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def kind_source(self) -> str: ...
    @property
    def retrieved_documents(self) -> Sequence[Any]: ...  # .document_id, .relevance_score
    @property
    def retrieval_ground_truth(self) -> Sequence[Any] | None: ...  # .document_id, .query_relevance_label
    @property
    def response(self) -> str | None: ...


@dataclass
class QueryArrays:
    """Everything the ranking metrics, the negative-query report and their summaries need, as arrays.

    Shapes: ``Q`` queries; ``depth`` = the largest cutoff asked for; ``W`` = width of ``labels``/``scores`` (the
    longest top-``depth`` list, ≤ ``depth``); ``I`` = ideal width (≤ ``depth``). ``labels[q, r]`` (int64) is the
    qrels label of the document at rank ``r + 1`` (0 when unlabelled or past the end of the list); ``judged`` says
    whether it had a label; ``length[q]`` = distinct documents in the top ``depth``; ``n_ret[q]`` = distinct
    documents retrieved (``-1`` when the fast reader did not count them: it counts them for negative queries
    only); ``scores`` are the top relevance scores (NaN: absent or past the end); ``ideal[q]`` (int64) = the
    query's positive labels sorted descending, cut at ``I``; ``abstains`` = -1 (no response), 0 or 1;
    ``top_ids`` = the top ids of negative queries (for the labelling-contradiction check).
    """

    depth: int
    relevance_threshold: int
    query_ids: list[str]
    kinds: list[str]
    kind_sources: list[str]
    labels: np.ndarray
    judged: np.ndarray
    length: np.ndarray
    n_ret: np.ndarray
    scores: np.ndarray
    n_rel: np.ndarray
    has_labels: np.ndarray
    ideal: np.ndarray
    abstains: np.ndarray
    top_ids: dict[int, list[str]] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @property
    def negative(self) -> np.ndarray:
        """Boolean mask of negative queries."""
        return np.fromiter((k == "negative" for k in self.kinds), dtype=bool, count=len(self.kinds))


#: ``add(query_id, kind, kind_source, top_ids, top_scores, qrels, n_ret, abstains)``: one query into a builder.
AddQuery = Callable[[str, str, str, Sequence[str], Sequence[Any], "dict[str, int] | None", int, int], None]

_Row = tuple[str, str, str, int, int, int, bool, int]


@dataclass
class FlatPart:
    """A builder's queries as flat columns (made in a reader's worker process, joined in file order)."""

    rows: list[_Row]
    labels: np.ndarray  # int64, NO_LABEL where unlabelled, the top documents of every query one after the other
    scores: np.ndarray
    qrels: np.ndarray  # int64, every query's qrels labels one after the other
    top_ids: dict[int, list[str]]


class ArraysBuilder:
    """Accumulates queries into flat Python lists; ``build()`` turns them into a ``QueryArrays`` in one go."""

    def __init__(self, depth: int, relevance_threshold: int) -> None:
        if depth < 0:
            raise ValueError("depth must be >= 0")
        self.depth = depth
        self.threshold = check_threshold(relevance_threshold)
        # per query: (query_id, kind, kind_source, length, n_ret, abstains, has_labels, number of qrels)
        self._rows: list[_Row] = []
        self._labels: list[int] = []
        self._scores: list[float] = []
        self._qrels_label: list[int] = []
        self.top_ids: dict[int, list[str]] = {}

    def adder(self) -> AddQuery:
        """The one way a query enters the arrays: ``add(query_id, kind, kind_source, top_ids, top_scores, qrels,
        n_ret, abstains)`` with pre-bound lists (a reader calls it once per line). ``top_ids``: the first ``depth``
        distinct document ids in rank order (already deduplicated), ``top_scores`` their scores (``None``: absent);
        ``qrels``: document id → label (``None``: no labels); ``n_ret``: distinct documents retrieved (-1: not
        counted); ``abstains``: -1 (no response), 0 or 1."""
        labels_extend, scores_extend = self._labels.extend, self._scores.extend
        qrels_extend, rows_append, rows, top = self._qrels_label.extend, self._rows.append, self._rows, self.top_ids
        no_label, nan = NO_LABEL, np.nan

        def add(
            query_id: str,
            kind: str,
            kind_source: str,
            top_ids: Sequence[str],
            top_scores: Sequence[Any],
            qrels: dict[str, int] | None,
            n_ret: int,
            abstains: int,
        ) -> None:
            n = len(top_ids)
            if qrels:
                labels_extend(map(qrels.get, top_ids, repeat(no_label, n)))
                qrels_extend(qrels.values())
                n_qrels = len(qrels)
            else:
                labels_extend(repeat(no_label, n))
                n_qrels = 0
            if None in top_scores:
                scores_extend([nan if v is None else v for v in top_scores])
            else:
                scores_extend(top_scores)
            if kind == "negative":
                top[len(rows)] = list(top_ids)
            rows_append((query_id, kind, kind_source, n, n_ret, abstains, qrels is not None, n_qrels))

        return add

    def flat(self) -> FlatPart:
        """The queries added so far as flat columns; ``LabelRangeError`` for a label int64 cannot hold."""
        qrels = _int64(self._qrels_label, self._rows)
        return FlatPart(
            self._rows,
            np.array(self._labels, dtype=np.int64),  # every value is a qrels label or NO_LABEL: checked above
            np.array(self._scores, dtype=np.float64),
            qrels,
            self.top_ids,
        )

    def build(self) -> QueryArrays:
        return build_parts([self.flat()], self.depth, self.threshold)


def _int64(labels: list[int], rows: list[_Row]) -> np.ndarray:
    """``labels`` as int64, or ``LabelRangeError`` naming the first query with a label outside the range."""
    try:
        arr = np.array(labels, dtype=np.int64)
        if not len(arr) or int(arr.min()) >= LABEL_MIN:
            return arr
    except OverflowError:
        pass
    at = 0
    for row in rows:
        for value in labels[at : at + row[7]]:
            message = label_range_message(value)
            if message is not None:
                raise LabelRangeError(
                    message,
                    field=f"query {row[0]!r}: retrieval_ground_truth[].query_relevance_label",
                    hint=f"use labels between {LABEL_MIN} and {LABEL_MAX} (relevance grades are small integers)",
                )
        at += row[7]
    raise LabelRangeError("a label is outside the int64 range")  # unreachable: some value failed above


def build_parts(parts: Sequence[FlatPart], depth: int, relevance_threshold: int) -> QueryArrays:
    """The arrays of the queries of ``parts``, one part after the other."""
    t = check_threshold(relevance_threshold)
    rows = [r for p in parts for r in p.rows] if len(parts) > 1 else parts[0].rows
    flat = np.concatenate([p.labels for p in parts])
    flat_scores = np.concatenate([p.scores for p in parts])
    ql = np.concatenate([p.qrels for p in parts])
    top_ids: dict[int, list[str]] = {}
    offset = 0
    for p in parts:
        top_ids.update({q + offset: ids for q, ids in p.top_ids.items()} if offset else p.top_ids)
        offset += len(p.rows)
    nq = len(rows)
    columns = list(zip(*rows, strict=True)) or [()] * 8
    qids, kinds, sources, lengths, n_ret, abstains, has_labels, n_qrels = (list(c) for c in columns)
    length = np.array(lengths, dtype=np.int64)
    labels, judged, scores = _shape(flat, flat_scores, length)
    qq = np.repeat(np.arange(nq), np.array(n_qrels, dtype=np.int64))
    n_rel = np.bincount(qq[ql >= t], minlength=nq).astype(np.int64)
    keep = ql > 0
    return QueryArrays(
        depth=depth,
        relevance_threshold=t,
        query_ids=qids,
        kinds=kinds,
        kind_sources=sources,
        labels=labels,
        judged=judged,
        length=length,
        n_ret=np.array(n_ret, dtype=np.int64),
        scores=scores,
        n_rel=n_rel,
        has_labels=np.array(has_labels, dtype=bool),
        ideal=_ideal(qq[keep], ql[keep], nq, depth),
        abstains=np.array(abstains, dtype=np.int8),
        top_ids=top_ids,
    )


def _shape(flat: np.ndarray, flat_scores: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, ...]:
    """(labels, judged, scores) as ``(queries × width)`` arrays, width = the longest top-depth list."""
    nq = len(length)
    width = int(length.max()) if nq else 0
    if nq and int(length.min()) == width:  # every list reaches the width: a reshape
        flat = flat.reshape(nq, width)
        judged = flat != NO_LABEL
        return np.where(judged, flat, 0), judged, flat_scores.reshape(nq, width)
    rows = np.repeat(np.arange(nq), length)  # scatter the ragged rows
    starts = np.concatenate(([0], np.cumsum(length)[:-1])) if nq else np.zeros(0, dtype=np.int64)
    cols = np.arange(len(rows)) - np.repeat(starts, length)
    judged = np.zeros((nq, width), dtype=bool)
    judged[rows, cols] = flat != NO_LABEL
    labels = np.zeros((nq, width), dtype=np.int64)
    labels[rows, cols] = np.where(flat != NO_LABEL, flat, 0)
    scores = np.full((nq, width), np.nan)
    scores[rows, cols] = flat_scores
    return labels, judged, scores


def _ideal(qq: np.ndarray, ql: np.ndarray, nq: int, depth: int) -> np.ndarray:
    """Each query's positive labels ``ql`` (query index ``qq``, non-decreasing) sorted descending, cut at ``depth``:
    ``(nq × I)`` int64, ``I`` = the most positive labels of a query, at most ``depth``."""
    if not len(qq):
        return np.zeros((nq, 0), dtype=np.int64)
    top = int(ql.max())
    counts = np.bincount(qq, minlength=nq)
    iwidth = int(min(depth, counts.max()))
    if top <= 16 and iwidth <= 64:
        # few label values: ideal[q, r] = number of values v ≥ 1 with more than r labels ≥ v in query q
        n_ge = np.bincount(qq * (top + 1) + ql, minlength=nq * (top + 1)).reshape(nq, top + 1)
        n_ge = np.cumsum(n_ge[:, :0:-1], axis=1)  # column j: labels ≥ top - j
        ideal = np.zeros((nq, iwidth), dtype=np.int64)
        for r in range(iwidth):
            ideal[:, r] = (n_ge > r).sum(axis=1)
        return ideal
    order = np.lexsort((-ql, qq))
    qq, ql = qq[order], ql[order]
    first = np.searchsorted(qq, np.arange(nq))
    rank_in_q = np.arange(len(qq)) - first[qq]
    ideal = np.zeros((nq, iwidth), dtype=np.int64)
    sel = rank_in_q < iwidth
    ideal[qq[sel], rank_in_q[sel]] = ql[sel]
    return ideal


def from_records(
    records: Iterable[RecordLike],
    depth: int,
    relevance_threshold: int,
    *,
    abstention_phrases: Sequence[str] | None = None,
    on_record: Callable[[Any, list[str], dict[str, int] | None], None] | None = None,
    chunk: int | None = None,
) -> QueryArrays:
    """Build the arrays from canonical records (one Python step per retrieved document: the library path).

    ``on_record(record, top_ids, qrels)`` is called for each record after it is added (top_ids: its first
    ``depth`` distinct document ids; qrels: id → label, or None), so a caller can compute per-query extras
    in the same pass. ``chunk``: turn the labels and scores into arrays every ``chunk`` records (the same arrays;
    the Python lists of a million queries' documents are never held at once).
    """
    builder = ArraysBuilder(depth, relevance_threshold)
    add = builder.adder()
    parts: list[FlatPart] = []
    for rec in records:
        if chunk and len(builder._rows) >= chunk:
            parts.append(builder.flat())
            builder = ArraysBuilder(depth, relevance_threshold)
            add = builder.adder()
        seen: dict[str, float | None] = {}
        for doc in rec.retrieved_documents:
            if doc.document_id not in seen:
                seen[doc.document_id] = doc.relevance_score
        ids = list(seen)[:depth]
        qrels = None
        if rec.retrieval_ground_truth is not None:
            qrels = {g.document_id: g.query_relevance_label for g in rec.retrieval_ground_truth}
        abst = -1 if rec.response is None else int(is_abstention(rec.response, abstention_phrases))
        add(rec.query_id, rec.kind, rec.kind_source, ids, [seen[i] for i in ids], qrels, len(seen), abst)
        if on_record is not None:
            on_record(rec, ids, qrels)
    return build_parts([*parts, builder.flat()], depth, relevance_threshold) if parts else builder.build()
