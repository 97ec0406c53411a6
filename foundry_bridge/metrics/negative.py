"""The negative-query report: what the system did for queries whose answer is not in the corpus.

A query is negative when its data says ``kind: negative``, or — without ``kind`` — when none of its labels reaches
the relevance threshold (``kind_source`` tells which). Per negative query: documents retrieved, the top relevance
score, top-k documents reaching ``surface_threshold``, relevant-labelled top-k documents (a labelling
contradiction) and whether the response abstains — a **heuristic** phrase search (``DEFAULT_ABSTENTION_PHRASES``,
replaceable through ``metrics.abstention_phrases``). The aggregate: the ROC AUC of the top score between positive
and negative queries (ties half) and, per threshold, the negatives an "abstain below t" rule would suppress
against the positives it would lose. docs/metrics.md and docs/report.md describe the section.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ._arrays import QueryArrays, RecordLike, check_threshold, from_records
from ._dist import average_ranks
from .abstention import DEFAULT_ABSTENTION_PHRASES, is_abstention

__all__ = [
    "DEFAULT_ABSTENTION_PHRASES",
    "NegativeParts",
    "is_abstention",
    "negative_query_report",
    "negative_report_from_arrays",
    "roc_auc",
]


def roc_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P(score of a random positive > score of a random negative), ties counting half (Mann–Whitney U / n₊n₋).

    NaN when either side is empty.
    """
    pos = np.asarray(positive, dtype=np.float64)
    neg = np.asarray(negative, dtype=np.float64)
    n_pos, n_neg = len(pos), len(neg)
    if n_pos == 0 or n_neg == 0:
        return math.nan
    ranks, _ = average_ranks(np.concatenate([pos, neg]))
    u = ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def _none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


class _TopK(NamedTuple):
    """What the report reads of each query's top k: ``top`` = highest score (NaN when no top-k document has one),
    ``surfaced`` = documents with score ≥ the surface threshold (``None`` without one) and ``relevant`` = the
    ``(Q × width)`` mask of top-k documents whose label reaches the relevance threshold."""

    top: np.ndarray
    surfaced: np.ndarray | None
    relevant: np.ndarray


def _top_k(arrays: QueryArrays, k: int, surface_threshold: float | None) -> _TopK:
    width = min(k, arrays.scores.shape[1])
    scores = arrays.scores[:, :width]
    valid = np.arange(width)[None, :] < arrays.length[:, None]
    with np.errstate(all="ignore"):
        has_score = (valid & ~np.isnan(scores)).any(axis=1)
        top = np.where(has_score, np.nanmax(np.where(valid, scores, -np.inf), axis=1, initial=-np.inf), np.nan)
    surfaced = ((scores >= surface_threshold) & valid).sum(axis=1) if surface_threshold is not None else None
    relevant = (arrays.labels[:, :width] >= arrays.relevance_threshold) & valid
    return _TopK(top, surfaced, relevant)


def _per_query(arrays: QueryArrays, tk: _TopK, negative: np.ndarray) -> list[dict[str, Any]]:
    """One row per negative query (see ``negative_query_report``)."""
    rows: list[dict[str, Any]] = []
    labels_rule = f"no label >= {arrays.relevance_threshold}"
    for q in np.flatnonzero(negative).tolist():
        ids = arrays.top_ids.get(q, [])
        source = arrays.kind_sources[q]
        abst = int(arrays.abstains[q])
        rows.append(
            {
                "query_id": arrays.query_ids[q],
                "kind_source": source,
                "rule": "declared kind: negative" if source == "declared" else labels_rule,
                "retrieved": int(arrays.n_ret[q]) if arrays.n_ret[q] >= 0 else int(arrays.length[q]),
                "top_score": _none(tk.top[q]),
                "surfaced": None if tk.surfaced is None else int(tk.surfaced[q]),
                "relevant_labelled_in_top_k": [ids[r] for r in np.flatnonzero(tk.relevant[q]).tolist() if r < len(ids)],
                "abstains": None if abst < 0 else bool(abst),
            }
        )
    return rows


def _default_thresholds(neg_top: np.ndarray, surface_threshold: float | None) -> list[float]:
    """The surface threshold, the negatives' top-score quantiles 0.5/0.75/0.9 (rounded to 6 decimals) and the
    smallest float above their maximum, sorted and distinct."""
    cand: set[float] = set()
    if surface_threshold is not None:
        cand.add(float(surface_threshold))
    if len(neg_top):
        cand.update(round(float(v), 6) for v in np.quantile(neg_top, [0.5, 0.75, 0.9]))
        cand.add(float(np.nextafter(neg_top.max(), np.inf)))
    return sorted(cand)


def _share_below(values: np.ndarray, threshold: float) -> float | None:
    return _none(float((values < threshold).mean())) if len(values) else None


def _mean_or_none(values: np.ndarray) -> float | None:
    return _none(float(values.mean())) if len(values) else None


class NegativeParts:
    """The report built a block of queries at a time: ``add`` each block's arrays in dataset order, then ``report``.

    Per query it keeps the top score, the kind, the abstention and the contradiction flag (11 bytes), per negative
    query the surfaced count and its row, or only the first ``keep`` rows (the counts stay exact). One block gives
    the numbers of the whole arrays: the aggregates are computed on the joined per-query columns."""

    def __init__(self, k: int, surface_threshold: float | None = None, keep: int | None = None) -> None:
        self.k, self.surface_threshold, self.keep = k, surface_threshold, keep
        self.rows: list[dict[str, Any]] = []
        self.n_neg = self.declared = self.labels = 0
        self.surfaced_ids: list[str] = []  # negatives with surfaced evidence (the first ``keep``), and their count
        self.contradiction_ids: list[str] = []  # negatives with a relevant-labelled top-k document (first ``keep``)
        self.n_surfaced = self.n_contradictions = 0
        self.positive_abstentions: list[str] = []
        self.relevance_threshold = 1
        self._top: list[np.ndarray] = []
        self._surfaced: list[np.ndarray] = []
        self._negative: list[np.ndarray] = []
        self._abstains: list[np.ndarray] = []
        self._contradiction: list[np.ndarray] = []

    def add(self, arrays: QueryArrays) -> None:
        if self.k < 1 or self.k > arrays.depth:
            raise ValueError(f"k must be between 1 and the arrays' depth {arrays.depth}, got {self.k}")
        tk = _top_k(arrays, self.k, self.surface_threshold)
        negative = arrays.negative
        rows = _per_query(arrays, tk, negative)
        self.relevance_threshold = arrays.relevance_threshold
        self.n_neg += len(rows)
        self.declared += sum(1 for row in rows if row["kind_source"] == "declared")
        self.labels += sum(1 for row in rows if row["kind_source"] == "labels")
        room = None if self.keep is None else max(self.keep - len(self.rows), 0)
        self.rows.extend(rows if room is None else rows[:room])
        contradiction = np.zeros(len(negative), bool)
        for q, row in zip(np.flatnonzero(negative).tolist(), rows, strict=True):
            if row["relevant_labelled_in_top_k"]:
                contradiction[q] = True
                self.n_contradictions += 1
                self._capped(self.contradiction_ids, row["query_id"])
            if row["surfaced"]:
                self.n_surfaced += 1
                self._capped(self.surfaced_ids, row["query_id"])
        pos_abst = np.flatnonzero(~negative & (arrays.abstains == 1))
        self.positive_abstentions += [arrays.query_ids[q] for q in pos_abst.tolist()]
        self._top.append(tk.top)
        if tk.surfaced is not None:
            self._surfaced.append(tk.surfaced[negative])
        self._negative.append(negative)
        self._abstains.append(np.asarray(arrays.abstains))
        self._contradiction.append(contradiction)

    def _capped(self, ids: list[str], query_id: str) -> None:
        if self.keep is None or len(ids) < self.keep:
            ids.append(query_id)

    def contradiction(self) -> np.ndarray:
        """Per query (every block): a negative query with a relevant-labelled top-k document."""
        return np.concatenate(self._contradiction) if self._contradiction else np.zeros(0, bool)

    def report(self, thresholds: Sequence[float] | None = None) -> dict[str, Any]:
        """``{"params", "per_query", "aggregate"}`` (see ``negative_query_report``)."""
        return {
            "params": {
                "k": self.k,
                "relevance_threshold": self.relevance_threshold,
                "surface_threshold": self.surface_threshold,
                "top_score": "highest relevance_score among the top-k documents",
                "suppressed": "top score < threshold (the query would be answered with an abstention)",
                "abstention": "heuristic: response contains one of the abstention phrases",
            },
            "per_query": self.rows,
            "aggregate": self._aggregate(thresholds),
        }

    def _abstentions(self, negative: np.ndarray) -> dict[str, Any]:
        """Abstention counts of the negatives, and the positive queries that abstained (the heuristic's verdicts)."""
        abstains = np.concatenate(self._abstains) if self._abstains else np.zeros(0, np.int8)
        with_response = abstains[negative] >= 0
        abstained = abstains[negative] == 1
        pos_with_response = int((~negative & (abstains >= 0)).sum())
        n_pos_abst = len(self.positive_abstentions)
        return {
            "with_response": int(with_response.sum()),
            "abstained": int(abstained.sum()),
            "abstention_rate": float(abstained.sum() / with_response.sum()) if with_response.any() else None,
            "positive_abstentions": self.positive_abstentions,
            "positive_abstention_rate": (n_pos_abst / pos_with_response) if pos_with_response else None,
        }

    def _aggregate(self, thresholds: Sequence[float] | None) -> dict[str, Any]:
        """Counts over the negatives, the abstention counts, the top-score separation (means, ROC AUC) and the
        suppressed/lost table (``thresholds``; default ``_default_thresholds``)."""
        n_neg = self.n_neg
        negative = np.concatenate(self._negative) if self._negative else np.zeros(0, bool)
        top = np.concatenate(self._top) if self._top else np.zeros(0)
        surfaced = None
        if self.surface_threshold is not None and n_neg:
            surfaced = np.concatenate(self._surfaced) > 0
        scored = ~np.isnan(top)  # some top-k document has a score
        pos_top, neg_top = top[~negative & scored], top[negative & scored]
        table = [
            {
                "threshold": float(thr),
                "negatives_suppressed": _share_below(neg_top, thr),
                "positives_lost": _share_below(pos_top, thr),
            }
            for thr in (_default_thresholds(neg_top, self.surface_threshold) if thresholds is None else thresholds)
        ]
        return {
            "negatives": n_neg,
            "by_rule": {"declared": self.declared, "labels": self.labels},
            "surfaced_evidence": None if surfaced is None else int(surfaced.sum()),
            "surfaced_share": None if surfaced is None else float(surfaced.mean()),
            "labelling_contradictions": self.n_contradictions,
            **self._abstentions(negative),
            "mean_top_score_negative": _mean_or_none(neg_top),
            "mean_top_score_positive": _mean_or_none(pos_top),
            "top_score_auc": _none(roc_auc(pos_top, neg_top)),
            "auc_queries": {"positive": len(pos_top), "negative": len(neg_top)},
            "thresholds": table,
        }


def negative_report_from_arrays(
    arrays: QueryArrays,
    *,
    k: int,
    surface_threshold: float | None = None,
    thresholds: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The report on prebuilt arrays (the ``metrics`` command's fast path). See ``negative_query_report``."""
    parts = NegativeParts(k, surface_threshold)
    parts.add(arrays)
    return parts.report(thresholds)


def negative_query_report(
    records: Iterable[RecordLike],
    *,
    k: int,
    relevance_threshold: int,
    surface_threshold: float | None = None,
    abstention_phrases: Sequence[str] | None = None,
    thresholds: Sequence[float] | None = None,
) -> dict[str, Any]:
    """``{"params", "per_query", "aggregate"}`` for the negative queries among ``records``.

    ``per_query`` (negatives only): ``query_id``, ``kind_source``/``rule`` (which rule classified it), ``retrieved``
    (distinct documents), ``top_score`` (highest ``relevance_score`` in the top k), ``surfaced`` (top-k documents with
    score ≥ ``surface_threshold``; ``None`` without a threshold), ``relevant_labelled_in_top_k`` (ids: a labelling
    contradiction), ``abstains`` (heuristic; ``None`` without a response). ``aggregate``: counts, surfaced share,
    abstention rate, positive queries that abstained, ROC AUC of the top score (positive vs negative) and the
    suppressed/lost table for ``thresholds`` (default: ``surface_threshold`` and the negatives' top-score
    quantiles 0.5/0.75/0.9 and just above their maximum).
    """
    check_threshold(relevance_threshold)
    arrays = from_records(records, k, relevance_threshold, abstention_phrases=abstention_phrases)
    return negative_report_from_arrays(arrays, k=k, surface_threshold=surface_threshold, thresholds=thresholds)
