"""Columnar, padded ``(queries × depth)`` arrays: the one input shape of every metric in this package.

A ``QueryArrays`` holds, for each query, the labels of its top ``depth`` *distinct* retrieved documents in rank
order (a repeated document id counts at its first position; later repeats are removed and the documents after them
move up), their scores, the number of relevant qrels documents and the ideal (sorted) positive labels. It is built
once — from ``QueryRecord``s (``from_records``), from a JSONL file (``loader``) or from TREC files — by an
``ArraysBuilder`` fed one query at a time, then every metric is plain numpy on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..dataset.records import QueryRecord

__all__ = ["ArraysBuilder", "QueryArrays", "check_threshold", "concat_arrays", "from_records"]


def check_threshold(relevance_threshold: int) -> int:
    """Relevance thresholds below 1 would make unlabelled documents (label 0) relevant: reject them."""
    if isinstance(relevance_threshold, bool) or not isinstance(relevance_threshold, int | np.integer):
        raise ValueError(f"relevance_threshold must be an integer, got {relevance_threshold!r}")
    if relevance_threshold < 1:
        raise ValueError(f"relevance_threshold must be >= 1 (label 0 means irrelevant), got {relevance_threshold}")
    return int(relevance_threshold)


@dataclass
class QueryArrays:
    """Everything the ranking metrics, the negative-query report and their summaries need, as arrays.

    Shapes: ``Q`` queries; ``depth`` = the largest cutoff asked for; ``W`` = width of ``labels``/``scores`` (the
    longest top-``depth`` list, ≤ ``depth``); ``I`` = ideal width (≤ ``depth``). ``labels[q, r]`` is the qrels
    label of the document at rank ``r + 1`` (0 when unlabelled or past the end of the list); ``judged`` says
    whether it had a label; ``length[q]`` = distinct documents in the top ``depth``; ``n_ret[q]`` = distinct
    documents retrieved (``-1`` when the fast reader did not count them: it counts them for negative queries
    only); ``scores`` are the top relevance scores (NaN: absent or past the end); ``ideal[q]`` = the query's
    positive labels sorted descending, cut at ``I``; ``abstains`` = -1 (no response), 0 or 1; ``top_ids`` = the
    top ids of negative queries (for the labelling-contradiction check).
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


_NO_LABEL = np.iinfo(np.int32).min


class ArraysBuilder:
    """Accumulates queries into flat Python lists; ``build()`` turns them into a ``QueryArrays`` in one go."""

    def __init__(self, depth: int, relevance_threshold: int) -> None:
        if depth < 0:
            raise ValueError("depth must be >= 0")
        self.depth = depth
        self.threshold = check_threshold(relevance_threshold)
        # per query: (query_id, kind, kind_source, length, n_ret, abstains, has_labels, number of qrels)
        self._rows: list[tuple[str, str, str, int, int, int, bool, int]] = []
        self._labels: list[int] = []
        self._scores: list[float] = []
        self._qrels_label: list[int] = []
        self.top_ids: dict[int, list[str]] = {}

    def add(
        self,
        query_id: str,
        kind: str,
        kind_source: str,
        top_ids: Sequence[str],
        top_scores: Sequence[float | None],
        qrels: dict[str, int] | None,
        *,
        n_ret: int = -1,
        abstains: int = -1,
    ) -> None:
        """One query. ``top_ids``: its first ``depth`` distinct document ids in rank order (already deduplicated),
        ``top_scores`` their scores; ``qrels``: document id → label (``None``: no labels at all)."""
        n = len(top_ids)
        if qrels:
            self._labels.extend(map(qrels.get, top_ids, repeat(_NO_LABEL, n)))
            self._qrels_label.extend(qrels.values())
            n_qrels = len(qrels)
        else:
            self._labels.extend(repeat(_NO_LABEL, n))
            n_qrels = 0
        if None in top_scores:
            self._scores.extend([np.nan if s is None else s for s in top_scores])
        else:
            self._scores.extend(top_scores)
        if kind == "negative":
            self.top_ids[len(self._rows)] = list(top_ids)
        self._rows.append((query_id, kind, kind_source, n, n_ret, abstains, qrels is not None, n_qrels))

    def sinks(self) -> tuple[list[int], list[float], list[int], list[tuple[Any, ...]], dict[int, list[str]]]:
        """The lists ``add`` fills, for a reader that inlines it: labels (``_NO_LABEL`` when unlabelled), scores
        (NaN when absent), qrels labels, per-query row tuples, and negative queries' top ids by row index."""
        return self._labels, self._scores, self._qrels_label, self._rows, self.top_ids  # type: ignore[return-value]

    def adder(self) -> Callable[[str, str, str, list[str], list[Any], dict[str, int] | None, int, int], None]:
        """``add`` with positional arguments and pre-bound lists: the fast reader calls it once per line."""
        labels_extend, scores_extend = self._labels.extend, self._scores.extend
        qrels_extend, rows_append, rows, top = self._qrels_label.extend, self._rows.append, self._rows, self.top_ids
        no_label, nan = _NO_LABEL, np.nan

        def add(
            query_id: str,
            kind: str,
            kind_source: str,
            top_ids: list[str],
            top_scores: list[Any],
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

    def build(self) -> QueryArrays:
        nq, depth, t = len(self._rows), self.depth, self.threshold
        if nq:
            qids, kinds, sources, lengths, n_ret, abstains, has_labels, n_qrels = (
                list(c) for c in zip(*self._rows, strict=True)
            )
        else:
            qids, kinds, sources, lengths, n_ret, abstains, has_labels, n_qrels = ([] for _ in range(8))
        length = np.array(lengths, dtype=np.int64)
        width = int(length.max()) if nq else 0
        flat = np.array(self._labels, dtype=np.int64)
        flat_scores = np.array(self._scores, dtype=np.float64)
        if nq and int(length.min()) == width:  # every list reaches the width: a reshape
            flat = flat.reshape(nq, width)
            judged = flat != _NO_LABEL
            labels = np.where(judged, flat, 0).astype(np.int32)
            scores = flat_scores.reshape(nq, width)
        else:  # scatter the ragged rows into (queries × width) arrays, width = longest top-depth list
            rows = np.repeat(np.arange(nq), length)
            starts = np.concatenate(([0], np.cumsum(length)[:-1])) if nq else np.zeros(0, dtype=np.int64)
            cols = np.arange(len(rows)) - np.repeat(starts, length)
            judged = np.zeros((nq, width), dtype=bool)
            judged[rows, cols] = flat != _NO_LABEL
            labels = np.zeros((nq, width), dtype=np.int32)
            labels[rows, cols] = np.where(flat != _NO_LABEL, flat, 0)
            scores = np.full((nq, width), np.nan)
            scores[rows, cols] = flat_scores

        qq = np.repeat(np.arange(nq), np.array(n_qrels, dtype=np.int64))
        ql = np.array(self._qrels_label, dtype=np.int64)
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
            top_ids=self.top_ids,
        )


def _ideal(qq: np.ndarray, ql: np.ndarray, nq: int, depth: int) -> np.ndarray:
    """Each query's positive labels ``ql`` (query index ``qq``, non-decreasing) sorted descending, cut at ``depth``:
    ``(nq × I)`` int32, ``I`` = the most positive labels of a query, at most ``depth``."""
    if not len(qq):
        return np.zeros((nq, 0), dtype=np.int32)
    top = int(ql.max())
    counts = np.bincount(qq, minlength=nq)
    iwidth = int(min(depth, counts.max()))
    if top <= 16 and iwidth <= 64:
        # few label values: ideal[q, r] = number of values v ≥ 1 with more than r labels ≥ v in query q
        n_ge = np.bincount(qq * (top + 1) + ql, minlength=nq * (top + 1)).reshape(nq, top + 1)
        n_ge = np.cumsum(n_ge[:, :0:-1], axis=1)  # column j: labels ≥ top - j
        ideal = np.zeros((nq, iwidth), dtype=np.int32)
        for r in range(iwidth):
            ideal[:, r] = (n_ge > r).sum(axis=1)
        return ideal
    order = np.lexsort((-ql, qq))
    qq, ql = qq[order], ql[order]
    first = np.searchsorted(qq, np.arange(nq))
    rank_in_q = np.arange(len(qq)) - first[qq]
    ideal = np.zeros((nq, iwidth), dtype=np.int32)
    sel = rank_in_q < iwidth
    ideal[qq[sel], rank_in_q[sel]] = ql[sel]
    return ideal


def _pad(arrays: list[np.ndarray], fill: float | int) -> np.ndarray:
    """Stack 2-D arrays of different widths, padding on the right."""
    width = max(a.shape[1] for a in arrays)
    out = [
        a if a.shape[1] == width else np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill) for a in arrays
    ]
    return np.concatenate(out, axis=0)


def concat_arrays(parts: Sequence[QueryArrays]) -> QueryArrays:
    """The queries of ``parts`` one after the other (all built with the same depth and threshold)."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    top_ids: dict[int, list[str]] = {}
    offset = 0
    for part in parts:
        top_ids.update({q + offset: ids for q, ids in part.top_ids.items()})
        offset += part.n_queries
    return QueryArrays(
        depth=first.depth,
        relevance_threshold=first.relevance_threshold,
        query_ids=[q for p in parts for q in p.query_ids],
        kinds=[k for p in parts for k in p.kinds],
        kind_sources=[k for p in parts for k in p.kind_sources],
        labels=_pad([p.labels for p in parts], 0),
        judged=_pad([p.judged for p in parts], False),
        length=np.concatenate([p.length for p in parts]),
        n_ret=np.concatenate([p.n_ret for p in parts]),
        scores=_pad([p.scores for p in parts], np.nan),
        n_rel=np.concatenate([p.n_rel for p in parts]),
        has_labels=np.concatenate([p.has_labels for p in parts]),
        ideal=_pad([p.ideal for p in parts], 0),
        abstains=np.concatenate([p.abstains for p in parts]),
        top_ids=top_ids,
    )


def from_records(
    records: Iterable[QueryRecord],
    depth: int,
    relevance_threshold: int,
    *,
    abstention_phrases: Sequence[str] | None = None,
    on_record: Callable[[QueryRecord, list[str], dict[str, int] | None], None] | None = None,
) -> QueryArrays:
    """Build the arrays from canonical records (one Python step per retrieved document: the library path).

    ``on_record(record, top_ids, qrels)`` is called for each record after it is added (top_ids: its first
    ``depth`` distinct document ids; qrels: id → label, or None), so a caller can compute per-query extras
    in the same pass.
    """
    from .negative import is_abstention

    builder = ArraysBuilder(depth, relevance_threshold)
    for rec in records:
        seen: dict[str, float | None] = {}
        for doc in rec.retrieved_documents:
            if doc.document_id not in seen:
                seen[doc.document_id] = doc.relevance_score
        ids = list(seen)[:depth]
        qrels = None
        if rec.retrieval_ground_truth is not None:
            qrels = {g.document_id: g.query_relevance_label for g in rec.retrieval_ground_truth}
        abst = -1 if rec.response is None else int(is_abstention(rec.response, abstention_phrases))
        builder.add(
            rec.query_id,
            rec.kind,
            rec.kind_source,
            ids,
            [seen[i] for i in ids],
            qrels,
            n_ret=len(seen),
            abstains=abst,
        )
        if on_record is not None:
            on_record(rec, ids, qrels)
    return builder.build()
