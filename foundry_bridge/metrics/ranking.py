"""Ranking metrics Foundry does not report — rr/MRR, recall, precision, hit, distracting, NDCG — for many k at once.

Definitions (they hold exactly; see docs/metrics.md):

- rank = 1-based position in the query's retrieved list as stored (for TREC runs: trec_eval's order, score
  descending then document id descending). A repeated document id counts at its first position only.
- relevant ⇔ label ≥ ``relevance_threshold`` (≥ 1); unlabelled documents have label 0. ``n_rel`` = qrels documents
  that are relevant, retrieved or not.
- ``rr@k`` = 1/rank of the first relevant document in the top k, else 0. ``recall@k`` = relevant in top k / n_rel.
  ``precision@k`` = relevant in top k / k (also when fewer than k were retrieved). ``hit@k`` = 1 if any relevant in
  the top k. ``distracting@k`` = non-relevant documents ranked above the first relevant one in the top k (all
  retrieved top-k documents when none is relevant).
- ``ndcg@k`` = trec_eval ``ndcg_cut_k``: gain = label for every label > 0 (the threshold does not apply),
  discount 1/log2(rank + 1), ideal = all qrels labels sorted descending, cut at k. ``ndcg_exp@k``: gain 2^label − 1.
- Undefined (NaN, ``null`` in JSON): rr, recall, precision, hit when n_rel = 0; ndcg when the ideal DCG is 0.
  ``distracting`` is always defined.

The core (``compute``) is numpy over the padded arrays of ``_arrays.QueryArrays``: no Python step per document,
every k from one cumulative sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from ._arrays import QueryArrays, RecordLike, from_records
from .measures import COLUMNS, Measure, column_names

__all__ = [
    "METRIC_NAMES",
    "NAN_POLICIES",
    "RankingResult",
    "compute",
    "nan_mean",
    "normalize_ks",
    "ranking_from_arrays",
    "ranking_metrics",
    "summarize",
    "top_grades",
]

NanPolicy = Literal["propagate", "drop", "zerofill"]
NAN_POLICIES: tuple[str, ...] = ("propagate", "drop", "zerofill")
# the kernels' columns and summary names, from the measure registry (metrics/measures.py)
METRIC_NAMES: tuple[str, ...] = column_names()
# summary order: the higher-is-better measures first, then the lower-is-better ones (distracting)
_SUMMARY_ORDER: tuple[Measure, ...] = tuple(sorted(COLUMNS, key=lambda m: not m.higher_is_better))


def normalize_ks(ks: Iterable[int]) -> tuple[int, ...]:
    """Sorted distinct cutoffs; each must be a positive integer."""
    out = sorted({int(k) for k in ks})
    if not out:
        raise ValueError("at least one cutoff k is needed")
    if out[0] < 1:
        raise ValueError(f"cutoffs must be >= 1, got {out[0]}")
    return tuple(out)


def _at(cum: np.ndarray, k: int) -> np.ndarray:
    """Column ``min(k, width) - 1`` of a cumulative array, zeros when the array has no column."""
    width = cum.shape[1]
    if width == 0:
        return np.zeros(cum.shape[0], dtype=cum.dtype)
    return cum[:, min(k, width) - 1]


def compute(arrays: QueryArrays, ks: Sequence[int]) -> dict[str, np.ndarray]:
    """Per-query float64 arrays ``"{metric}@{k}"`` for every metric and k, plus ``n_rel``.

    ``arrays.depth`` must be at least ``max(ks)``.
    """
    ks = normalize_ks(ks)
    if arrays.depth < ks[-1]:
        raise ValueError(f"arrays were built to depth {arrays.depth}, below k={ks[-1]}")
    labels, t = arrays.labels, arrays.relevance_threshold
    width = labels.shape[1]
    ideal = arrays.ideal.astype(np.float64)
    rel = labels >= t
    cum_rel = np.cumsum(rel, axis=1, dtype=np.int64)
    none = np.iinfo(np.int64).max  # "no relevant document": beyond every k
    first = np.where(rel.any(axis=1), rel.argmax(axis=1), none) if width else np.full(labels.shape[0], none)

    disc = 1.0 / np.log2(np.arange(2, max(width, ideal.shape[1]) + 2, dtype=np.float64))
    lin = np.where(labels > 0, labels, 0).astype(np.float64)
    dcg_lin = np.cumsum(lin * disc[:width], axis=1)
    idisc = disc[: ideal.shape[1]]
    idcg_lin = np.cumsum(ideal * idisc, axis=1)
    with np.errstate(over="ignore"):  # 2**label overflows past label 1023: ndcg_exp is then inf/inf = NaN
        dcg_exp = np.cumsum((np.exp2(lin) - 1.0) * disc[:width], axis=1)
        idcg_exp = np.cumsum((np.exp2(ideal) - 1.0) * idisc, axis=1)

    n_rel = arrays.n_rel.astype(np.float64)
    undefined = arrays.n_rel == 0
    length = arrays.length
    out: dict[str, np.ndarray] = {"n_rel": arrays.n_rel}
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in ks:
            hits = _at(cum_rel, k).astype(np.float64)
            in_k = first < k
            rr = np.where(in_k, 1.0 / (first.astype(np.float64) + 1.0), 0.0)
            out[f"rr@{k}"] = np.where(undefined, np.nan, rr)
            out[f"recall@{k}"] = np.where(undefined, np.nan, hits / n_rel)
            out[f"precision@{k}"] = np.where(undefined, np.nan, hits / k)
            out[f"hit@{k}"] = np.where(undefined, np.nan, (hits > 0).astype(np.float64))
            out[f"distracting@{k}"] = np.where(in_k, first, np.minimum(length, k)).astype(np.float64)
            il, ie = _at(idcg_lin, k), _at(idcg_exp, k)
            out[f"ndcg@{k}"] = np.where(il > 0, _at(dcg_lin, k) / il, np.nan)
            out[f"ndcg_exp@{k}"] = np.where(ie > 0, _at(dcg_exp, k) / ie, np.nan)
    return out


def top_grades(arrays: QueryArrays, k: int) -> dict[str, np.ndarray]:
    """Per query (int64): ``found`` = the highest label among the top ``k`` documents (0 when none is labelled
    above 0) and ``best`` = the highest label of its judgments (0 when none is above 0).

    With graded labels, hit@k counts a query as found as soon as any relevant document is in the top k; when
    ``relevance_threshold ≤ found < best`` the best-graded passage was missed all the same (a partial search miss,
    which stage attribution reports: ``report._stages.missed_top_grade``).
    """
    if arrays.depth < k:
        raise ValueError(f"arrays were built to depth {arrays.depth}, below k={k}")
    n = arrays.labels.shape[0]
    top_k = arrays.labels[:, :k]
    found = top_k.max(axis=1, initial=0) if top_k.shape[1] else np.zeros(n, np.int64)
    best = arrays.ideal[:, 0].copy() if arrays.ideal.shape[1] else np.zeros(n, np.int64)
    return {"found": found.astype(np.int64), "best": best.astype(np.int64)}


def nan_mean(values: np.ndarray, nan_policy: str) -> float | None:
    """The mean over queries of a float array whose NaN are undefined values, or None (no mean).

    ``nan_policy``: ``propagate`` — any NaN gives None; ``drop`` — the mean of the defined values (None when there
    is none); ``zerofill`` — NaN counts as 0. No values: None. The sum runs **left to right** in the array's order
    (``np.cumsum``: what Python's ``sum`` of the values gives, not numpy's pairwise ``mean``), then ``+ 0.0`` (no
    -0.0) and ``/ count``: the ``metrics`` summary and the report's aggregates give the same bits, and the report's
    golden files pin them.
    """
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, got {nan_policy!r}")
    nan = np.isnan(values)
    if nan_policy == "zerofill":
        values = np.where(nan, 0.0, values)
    elif nan_policy == "drop":
        values = values[~nan]
    elif nan.any():
        return None
    return float((np.cumsum(values)[-1] + 0.0) / values.size) if values.size else None


def summarize(
    columns: dict[str, np.ndarray],
    negative: np.ndarray,
    ks: Sequence[int],
    nan_policy: str,
    selected: frozenset[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per-kind means: ``{"positive": {...}, "negative": {...}}`` — the two are never averaged together.

    Each holds ``queries``, ``undefined`` (queries with n_rel = 0: rr/recall/precision/hit undefined),
    ``undefined_ndcg`` (ideal DCG = 0), and ``mrr@k``, ``recall@k``, ``precision@k``, ``hit_rate@k``, ``ndcg@k``,
    ``ndcg_exp@k``, ``distracting@k`` averaged under ``nan_policy`` (NaN → ``None``): each measure's
    ``aggregate_key``. ``selected``: only these column keys (``rr@10``) are summarized (default: all).
    """
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, got {nan_policy!r}")
    ks = normalize_ks(ks)
    out: dict[str, dict[str, Any]] = {}
    for kind, mask in (("positive", ~negative), ("negative", negative)):
        block: dict[str, Any] = {
            "queries": int(mask.sum()),
            "undefined": int((columns["n_rel"][mask] == 0).sum()),
            "undefined_ndcg": int(np.isnan(columns[f"ndcg@{ks[0]}"][mask]).sum()),
        }
        for k in ks:
            for measure in _SUMMARY_ORDER:
                at_k = measure @ k
                if selected is not None and at_k.key not in selected:
                    continue
                block[at_k.aggregate_key] = nan_mean(columns[at_k.key][mask], nan_policy)
        out[kind] = block
    return out


@dataclass
class RankingResult:
    """Per-query metric columns, per-kind summary and the parameters that produced them.

    ``columns`` maps ``"rr@10"``-style names to float arrays aligned with ``query_ids``; ``per_query`` is the same
    as a list of dicts (NaN → ``None``), built on first access. ``selected`` limits the output to these column
    keys (``metrics --measure``); ``None``: every measure at every k.
    """

    query_ids: Sequence[str]
    kinds: Sequence[str]
    kind_sources: Sequence[str]
    columns: dict[str, np.ndarray]
    summary: dict[str, dict[str, Any]]
    params: dict[str, Any] = field(default_factory=dict)
    selected: frozenset[str] | None = None

    @property
    def metric_keys(self) -> list[str]:
        """Per-query metric keys in output order: for each k, the registry's columns (the selected ones)."""
        keys = [f"{m}@{k}" for k in self.params["ks"] for m in METRIC_NAMES]
        return keys if self.selected is None else [key for key in keys if key in self.selected]

    def column_lists(self) -> tuple[list[str], list[list[Any]]]:
        """The per-query keys and one value list per key, metrics as floats (NaN kept)."""
        cols = [self.query_ids, self.kinds, self.kind_sources, self.columns["n_rel"].tolist()]
        keys = ["query_id", "kind", "kind_source", "n_rel", *self.metric_keys]
        return keys, cols + [self.columns[key].tolist() for key in self.metric_keys]

    @cached_property
    def per_query(self) -> list[dict[str, Any]]:
        keys, cols = self.column_lists()
        cols[4:] = [[None if v != v else v for v in col] for col in cols[4:]]  # NaN → None
        return [dict(zip(keys, row, strict=True)) for row in zip(*cols, strict=True)]

    def to_dict(self) -> dict[str, Any]:
        """``{"params", "per_query", "summary"}``, JSON-ready."""
        return {"params": self.params, "per_query": self.per_query, "summary": self.summary}


def ranking_from_arrays(
    arrays: QueryArrays,
    *,
    ks: Sequence[int] = (10,),
    nan_policy: str = "propagate",
    measures: Sequence[Measure] | None = None,
) -> RankingResult:
    """Ranking metrics on prebuilt arrays (the ``metrics`` command's fast path).

    ``measures``: output only these (each with a cutoff in ``ks``, see ``measures.expand``); default: all.
    """
    ks = normalize_ks(ks)
    selected = None if measures is None else frozenset(m.key for m in measures)
    columns = compute(arrays, ks)
    summary = summarize(columns, arrays.negative, ks, nan_policy, selected)
    params = {
        "ks": list(ks),
        "relevance_threshold": arrays.relevance_threshold,
        "nan_policy": nan_policy,
        "rank": "position in the retrieved list after removing later duplicates (TREC runs: score desc, docid desc)",
        "ndcg_gain": "ndcg: label (every label > 0); ndcg_exp: 2^label - 1",
    }
    return RankingResult(arrays.query_ids, arrays.kinds, arrays.kind_sources, columns, summary, params, selected)


def ranking_metrics(
    records: Iterable[RecordLike],
    *,
    ks: Sequence[int] = (10,),
    relevance_threshold: int = 1,
    nan_policy: NanPolicy = "propagate",
) -> RankingResult:
    """rr, recall, precision, hit, distracting, ndcg, ndcg_exp at every k in ``ks`` for each record.

    ``records`` keep their own ``kind``; positives and negatives are summarized separately. See the module
    docstring for the exact definitions and the NaN rules.
    """
    ks = normalize_ks(ks)
    arrays = from_records(records, ks[-1], relevance_threshold)  # checks the threshold first
    return ranking_from_arrays(arrays, ks=ks, nan_policy=nan_policy)
