"""Columnar, padded ``(queries × depth)`` arrays: the one input shape of every metric in this package.

A ``QueryArrays`` holds, for each query, the labels of its top ``depth`` *distinct* retrieved documents in rank
order (a repeated document id counts at its first position; later repeats are removed and the documents after them
move up), their scores, the number of relevant qrels documents and the ideal (sorted) positive labels. Labels and
counts are int64 (``_limits``: a label outside ``LABEL_MIN .. LABEL_MAX`` is a ``LabelRangeError``, never a wrapped
value). Every reader — ``from_records`` here, the fast JSONL and TREC readers of ``foundry_bridge.dataset.columnar``
— feeds an ``ArraysBuilder`` one query at a time through its one ``adder()``, and ``build()`` shapes the arrays.
Then every metric is plain numpy on the arrays.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
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
    "LabelRangeError",
    "QueryArrays",
    "RecordLike",
    "check_threshold",
    "from_records",
    "record_adder",
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
    query's positive labels sorted descending, cut at ``I``; ``n_judged[q]`` = its judged qrels documents (label ≥ 0:
    trec_eval reads a negative label as not judged);
    ``has_labels[q]``: it has qrels (a judged query); ``abstains`` = -1 (no response), 0 or 1;
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
    n_judged: np.ndarray
    has_labels: np.ndarray
    ideal: np.ndarray
    abstains: np.ndarray
    top_ids: dict[int, list[str]] = field(default_factory=dict)

    @property
    def n_queries(self) -> int:
        return len(self.query_ids)

    @cached_property
    def negative(self) -> np.ndarray:
        """Boolean mask of negative queries."""
        return np.fromiter(map("negative".__eq__, self.kinds), dtype=bool, count=len(self.kinds))


#: ``add(query_id, kind, kind_source, top_ids, top_scores, qrels, n_ret, abstains)``: one query into a builder.
AddQuery = Callable[[str, str, str, Sequence[str], Sequence[Any], "dict[str, int] | None", int, int], None]


class ArraysBuilder:
    """Accumulates queries into flat compact columns; ``build()`` turns them into a ``QueryArrays`` in one go."""

    def __init__(self, depth: int, relevance_threshold: int) -> None:
        if depth < 0:
            raise ValueError("depth must be >= 0")
        self.depth = depth
        self.threshold = check_threshold(relevance_threshold)
        self._ids: list[str] = []  # per query: its id, its kind, its kind source
        self._kinds: list[str] = []
        self._sources: list[str] = []
        self._counts = array("q")  # per query: length, n_ret, number of qrels
        self._flags = array("b")  # per query: abstains, has_labels
        self._labels: list[int] = []
        self._scores = array("d")  # a float each, not a Python object each
        self._qrels_label: list[int] = []
        self.top_ids: dict[int, list[str]] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def adder(self) -> AddQuery:
        """The one way a query enters the arrays: ``add(query_id, kind, kind_source, top_ids, top_scores, qrels,
        n_ret, abstains)`` with pre-bound lists (a reader calls it once per line). ``top_ids``: the first ``depth``
        distinct document ids in rank order (already deduplicated), ``top_scores`` their scores (``None``: absent);
        ``qrels``: document id → label (``None``: no labels); ``n_ret``: distinct documents retrieved (-1: not
        counted); ``abstains``: -1 (no response), 0 or 1."""
        labels_extend, scores_extend = self._labels.extend, self._scores.extend
        qrels_extend, top, ids = self._qrels_label.extend, self.top_ids, self._ids
        id_add, kind_add, source_add = ids.append, self._kinds.append, self._sources.append
        distinct: dict[str, str] = {}  # kinds and sources: one object per distinct value, not one per query
        one = distinct.setdefault
        counts_extend, flags_extend = self._counts.extend, self._flags.extend
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
                top[len(ids)] = list(top_ids)
            id_add(query_id)
            kind_add(one(kind, kind))
            source_add(one(kind_source, kind_source))
            counts_extend((n, n_ret, n_qrels))
            flags_extend((abstains, qrels is not None))

        return add

    def build(self) -> QueryArrays:
        """The arrays of the queries added; ``LabelRangeError`` for a label int64 cannot hold."""
        t, nq = self.threshold, len(self._ids)
        counts = np.frombuffer(self._counts, np.int64).reshape(-1, 3) if self._counts else np.zeros((0, 3), np.int64)
        flags = np.frombuffer(self._flags, np.int8).reshape(-1, 2) if self._flags else np.zeros((0, 2), np.int8)
        ql = _int64(self._qrels_label, self._ids, counts[:, 2])
        length = counts[:, 0].copy()
        # every value of ``_labels`` is a qrels label or NO_LABEL: checked above
        flat_labels, flat_scores = np.array(self._labels, np.int64), np.frombuffer(self._scores, np.float64)
        labels, judged, scores = _shape(flat_labels, flat_scores, length)
        qq = np.repeat(np.arange(nq), counts[:, 2])
        keep = ql > 0
        return QueryArrays(
            depth=self.depth,
            relevance_threshold=t,
            query_ids=self._ids,
            kinds=self._kinds,
            kind_sources=self._sources,
            labels=labels,
            judged=judged,
            length=length,
            n_ret=counts[:, 1].copy(),
            scores=scores,
            n_rel=np.bincount(qq[ql >= t], minlength=nq).astype(np.int64),
            n_judged=np.bincount(qq[ql >= 0], minlength=nq).astype(np.int64),
            has_labels=flags[:, 1].astype(bool),
            ideal=_ideal(qq[keep], ql[keep], nq, self.depth),
            abstains=flags[:, 0].copy(),
            top_ids=self.top_ids,
        )


def _int64(labels: list[int], ids: Sequence[str], n_qrels: np.ndarray) -> np.ndarray:
    """``labels`` as int64, or ``LabelRangeError`` naming the first query with a label outside the range."""
    try:
        arr = np.array(labels, dtype=np.int64)
        if not len(arr) or int(arr.min()) >= LABEL_MIN:
            return arr
    except OverflowError:
        pass
    at = 0
    for q, count in enumerate(n_qrels.tolist()):
        for value in labels[at : at + count]:
            message = label_range_message(value)
            if message is not None:
                raise LabelRangeError(
                    message,
                    field=f"query {ids[q]!r}: retrieval_ground_truth[].query_relevance_label",
                    hint=f"use labels between {LABEL_MIN} and {LABEL_MAX} (relevance grades are small integers)",
                )
        at += count
    raise LabelRangeError("a label is outside the int64 range")  # unreachable: some value failed above


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


def record_adder(
    builder: ArraysBuilder, abstention_phrases: Sequence[str] | None = None
) -> Callable[[RecordLike], tuple[list[str], dict[str, int] | None]]:
    """``add(record)``: one canonical record into ``builder`` (one Python step per retrieved document); returns its
    first ``depth`` distinct document ids and its qrels (id → label, or None). The one way a record becomes a row
    of the arrays, for ``from_records`` and for a caller that is handed the records one at a time."""
    add, depth = builder.adder(), builder.depth

    def add_record(rec: RecordLike) -> tuple[list[str], dict[str, int] | None]:
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
        return ids, qrels

    return add_record


def from_records(
    records: Iterable[RecordLike],
    depth: int,
    relevance_threshold: int,
    *,
    abstention_phrases: Sequence[str] | None = None,
    on_record: Callable[[Any, list[str], dict[str, int] | None], None] | None = None,
) -> QueryArrays:
    """Build the arrays from canonical records (``record_adder``: the library path).

    ``on_record(record, top_ids, qrels)`` is called for each record after it is added (top_ids: its first
    ``depth`` distinct document ids; qrels: id → label, or None), so a caller can compute per-query extras
    in the same pass.
    """
    builder = ArraysBuilder(depth, relevance_threshold)
    add_record = record_adder(builder, abstention_phrases)
    for rec in records:
        ids, qrels = add_record(rec)
        if on_record is not None:
            on_record(rec, ids, qrels)
    return builder.build()
