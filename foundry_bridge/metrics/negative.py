"""The negative-query report: what the system did for queries whose answer is not in the corpus.

A query is negative when its data says ``kind: negative``, or — when ``kind`` is absent — when none of its labels
reaches the relevance threshold (``kind_source`` tells which rule applied). Per negative query: documents retrieved,
the top relevance score, how many top-k documents reach ``surface_threshold`` (evidence the system would have
shown), top-k documents that carry a relevant label (a labelling contradiction) and whether the response abstains.

Abstention is a **heuristic**: a case-insensitive search for phrases such as "I don't know" or "couldn't find"
(``DEFAULT_ABSTENTION_PHRASES``, replaceable through the mapping's ``metrics.abstention_phrases``). It misses
abstentions worded otherwise and flags answers that merely contain such a phrase.

The aggregate says how well the top score separates positive from negative queries: the ROC AUC (probability that
a positive query's top score exceeds a negative one's, ties counting half) and, for a few thresholds, the share of
negatives a "abstain when the top score is below t" rule would suppress against the share of positives it would
lose.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._arrays import QueryArrays, RecordLike, check_threshold, from_records
from .abstention import DEFAULT_ABSTENTION_PHRASES, is_abstention

__all__ = [
    "DEFAULT_ABSTENTION_PHRASES",
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
    values = np.concatenate([pos, neg])
    order = np.argsort(values, kind="mergesort")
    sorted_vals = values[order]
    # average ranks (1-based) over ties
    boundaries = np.flatnonzero(np.diff(sorted_vals)) + 1
    starts = np.concatenate(([0], boundaries))
    ends = np.concatenate((boundaries, [len(values)]))
    avg = (starts + ends + 1) / 2.0  # mean of ranks starts+1 .. ends
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(avg, ends - starts)
    u = ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))


def _none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def negative_report_from_arrays(
    arrays: QueryArrays,
    *,
    k: int,
    surface_threshold: float | None = None,
    thresholds: Sequence[float] | None = None,
) -> dict[str, Any]:
    """The report on prebuilt arrays (the ``metrics`` command's fast path). See ``negative_query_report``."""
    if k < 1 or k > arrays.depth:
        raise ValueError(f"k must be between 1 and the arrays' depth {arrays.depth}, got {k}")
    t = arrays.relevance_threshold
    width = min(k, arrays.scores.shape[1])
    scores = arrays.scores[:, :width]
    valid = np.arange(width)[None, :] < arrays.length[:, None]
    with np.errstate(all="ignore"):
        has_score = (valid & ~np.isnan(scores)).any(axis=1)
        top = np.where(has_score, np.nanmax(np.where(valid, scores, -np.inf), axis=1, initial=-np.inf), np.nan)
    surfaced = ((scores >= surface_threshold) & valid).sum(axis=1) if surface_threshold is not None else None
    rel_in_k = (arrays.labels[:, :width] >= t) & valid
    negative = arrays.negative
    neg_idx = np.flatnonzero(negative)

    per_query: list[dict[str, Any]] = []
    for q in neg_idx.tolist():
        ids = arrays.top_ids.get(q, [])
        contradiction = [ids[r] for r in np.flatnonzero(rel_in_k[q]).tolist() if r < len(ids)]
        abst = int(arrays.abstains[q])
        per_query.append(
            {
                "query_id": arrays.query_ids[q],
                "kind_source": arrays.kind_sources[q],
                "rule": "declared kind: negative" if arrays.kind_sources[q] == "declared" else f"no label >= {t}",
                "retrieved": int(arrays.n_ret[q]) if arrays.n_ret[q] >= 0 else int(arrays.length[q]),
                "top_score": _none(top[q]),
                "surfaced": None if surfaced is None else int(surfaced[q]),
                "relevant_labelled_in_top_k": contradiction,
                "abstains": None if abst < 0 else bool(abst),
            }
        )

    n_neg = len(neg_idx)
    with_response = arrays.abstains[negative] >= 0
    abstained = arrays.abstains[negative] == 1
    pos_mask = ~negative
    pos_top = top[pos_mask & has_score]
    neg_top = top[negative & has_score]
    pos_abst = np.flatnonzero(pos_mask & (arrays.abstains == 1))
    pos_with_response = int((pos_mask & (arrays.abstains >= 0)).sum())

    if thresholds is None:
        cand: set[float] = set()
        if surface_threshold is not None:
            cand.add(float(surface_threshold))
        if len(neg_top):
            cand.update(round(float(v), 6) for v in np.quantile(neg_top, [0.5, 0.75, 0.9]))
            cand.add(float(np.nextafter(neg_top.max(), np.inf)))
        thresholds = sorted(cand)
    table = [
        {
            "threshold": float(thr),
            "negatives_suppressed": _none(float((neg_top < thr).mean())) if len(neg_top) else None,
            "positives_lost": _none(float((pos_top < thr).mean())) if len(pos_top) else None,
        }
        for thr in thresholds
    ]
    aggregate: dict[str, Any] = {
        "negatives": n_neg,
        "by_rule": {
            "declared": int((np.array(arrays.kind_sources)[neg_idx] == "declared").sum()) if n_neg else 0,
            "labels": int((np.array(arrays.kind_sources)[neg_idx] == "labels").sum()) if n_neg else 0,
        },
        "surfaced_evidence": (None if surfaced is None or n_neg == 0 else int((surfaced[negative] > 0).sum())),
        "surfaced_share": (None if surfaced is None or n_neg == 0 else float((surfaced[negative] > 0).mean())),
        "labelling_contradictions": sum(1 for row in per_query if row["relevant_labelled_in_top_k"]),
        "with_response": int(with_response.sum()),
        "abstained": int(abstained.sum()),
        "abstention_rate": float(abstained.sum() / with_response.sum()) if with_response.any() else None,
        "positive_abstentions": [arrays.query_ids[q] for q in pos_abst.tolist()],
        "positive_abstention_rate": (len(pos_abst) / pos_with_response) if pos_with_response else None,
        "mean_top_score_negative": _none(float(neg_top.mean())) if len(neg_top) else None,
        "mean_top_score_positive": _none(float(pos_top.mean())) if len(pos_top) else None,
        "top_score_auc": _none(roc_auc(pos_top, neg_top)),
        "auc_queries": {"positive": len(pos_top), "negative": len(neg_top)},
        "thresholds": table,
    }
    return {
        "params": {
            "k": k,
            "relevance_threshold": t,
            "surface_threshold": surface_threshold,
            "top_score": "highest relevance_score among the top-k documents",
            "suppressed": "top score < threshold (the query would be answered with an abstention)",
            "abstention": "heuristic: response contains one of the abstention phrases",
        },
        "per_query": per_query,
        "aggregate": aggregate,
    }


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
