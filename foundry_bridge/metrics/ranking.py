"""Ranking metrics Foundry does not report — rr/MRR, recall, precision, hit, distracting, NDCG, and on request AP/MAP,
R-precision, bpref, judged and the condensed-list variants — for many k at once.

The definitions (trec_eval's where it has one; rank after removing later duplicates, relevant ⇔ label ≥
``relevance_threshold``, which undefined values are NaN, the means by kind or in trec_eval's mode) are each
``MeasureDef.definition`` (``metrics.measures``) and docs/metrics.md. The core (``compute``) is numpy over the
padded arrays of ``_arrays.QueryArrays``: no Python step per document, every k from one cumulative sum.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np

from ._arrays import QueryArrays, RecordLike, from_records
from .measures import ALL_COLUMNS, COLUMNS, Measure, column_names

__all__ = [
    "AVERAGES",
    "METRIC_NAMES",
    "NAN_POLICIES",
    "RankingResult",
    "average",
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
#: averaging modes named after what they reproduce (``average``); ``kind``: the per-kind means only
AVERAGES: tuple[str, ...] = ("trec_eval", "kind")
# the kernels' columns and summary names, from the measure registry (metrics/measures.py)
METRIC_NAMES: tuple[str, ...] = column_names()
# summary order: the higher-is-better measures first, then the lower-is-better ones (distracting)
_SUMMARY_ORDER: tuple[Measure, ...] = tuple(sorted(ALL_COLUMNS, key=lambda m: not m.higher_is_better))
_DEFAULT = frozenset(COLUMNS)
_EVERY_NAME = column_names(every=True)


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


def compute(arrays: QueryArrays, ks: Sequence[int], extra: Iterable[Measure] = ()) -> dict[str, np.ndarray]:
    """Per-query float64 arrays ``"{metric}@{k}"`` for every default metric and k, plus ``n_rel``, plus the
    measures of ``extra`` (``ap@10``, ``ndcg_cond@5``: any column, each at its cutoff).

    ``arrays.depth`` must be at least ``max(ks)`` and every cutoff of ``extra``.
    """
    out = _default_columns(arrays, ks)
    wanted = [m for m in extra if m.key not in out]
    condensed = [m for m in wanted if m.column.endswith("_cond")]
    if condensed:
        short = _condense(arrays)
        cut = sorted({m.cutoff for m in condensed if m.cutoff is not None})
        base_columns = _default_columns(short, cut) if cut else {}
        for m in condensed:
            base = Measure.of(m.name, None, m.cutoff)
            out[m.key] = base_columns[base.key] if base.key in base_columns else _column(short, base)
    for m in wanted:
        if m.key not in out:
            out[m.key] = _column(arrays, m)
    return out


def _condense(arrays: QueryArrays) -> QueryArrays:
    """The arrays with each ranking's unjudged documents removed, the judged ones moved up in order (the condensed
    list: trec_eval ``-J``, pytrec_eval ``judged_docs_only_flag``)."""
    judged = _judged(arrays)
    order = np.argsort(~judged, axis=1, kind="stable")
    judged = np.take_along_axis(judged, order, axis=1)
    labels = np.where(judged, np.take_along_axis(arrays.labels, order, axis=1), 0)
    scores = np.where(judged, np.take_along_axis(arrays.scores, order, axis=1), np.nan)
    return replace(arrays, labels=labels, judged=judged, scores=scores, length=judged.sum(axis=1).astype(np.int64))


def _judged(arrays: QueryArrays) -> np.ndarray:
    """Where a retrieved document is judged: it has a qrels label ≥ 0 (trec_eval reads a negative label, e.g. -1,
    as not judged: for ``judged``, ``bpref`` and the condensed lists)."""
    return arrays.judged & (arrays.labels >= 0)


def _column(arrays: QueryArrays, m: Measure) -> np.ndarray:
    """One measure computed only when asked for (``ap``, ``rprec``, ``bpref``, ``judged``) at its cutoff, or on
    the whole ranking the arrays hold when it has none (an ``uncut`` measure: trec_eval's ``map``, ``bpref``)."""
    k = m.cutoff
    if k is None and m.spec.uncut:
        k = arrays.labels.shape[1]
    elif k is None or arrays.depth < k:
        raise ValueError(f"{m}: needs a cutoff within the arrays' depth {arrays.depth}")
    labels, judged = arrays.labels[:, :k], _judged(arrays)[:, :k]
    rel = labels >= arrays.relevance_threshold
    n_rel = arrays.n_rel.astype(np.float64)
    undefined = arrays.n_rel == 0
    cum_rel = np.cumsum(rel, axis=1, dtype=np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        if m.column == "judged":
            return judged.sum(axis=1) / float(k)
        if m.column == "ap":
            ranks = np.arange(1, labels.shape[1] + 1, dtype=np.float64)
            value = (rel * (cum_rel / ranks)).sum(axis=1) / n_rel
        elif m.column == "rprec":
            upto = np.minimum(arrays.n_rel, labels.shape[1])  # relevant in the top R of the ranking cut at k
            cum0 = np.concatenate([np.zeros((len(upto), 1), np.int64), cum_rel], axis=1)
            value = cum0[np.arange(len(upto)), upto] / n_rel
        elif m.column == "bpref":
            nonrel = judged & ~rel
            above = np.cumsum(nonrel, axis=1, dtype=np.int64) - nonrel  # judged non-relevant ranked above
            n_nonrel = (arrays.n_judged - arrays.n_rel)[:, None]
            r = arrays.n_rel[:, None]
            term = np.where(n_nonrel > 0, 1.0 - np.minimum(above, r) / np.minimum(r, n_nonrel), 1.0)
            value = (rel * term).sum(axis=1) / n_rel
        else:
            raise ValueError(f"{m}: not a column the kernels compute")
    return np.where(undefined, np.nan, value)


def _default_columns(arrays: QueryArrays, ks: Sequence[int]) -> dict[str, np.ndarray]:
    """``compute``'s default columns (``COLUMNS`` at every k) and ``n_rel``."""
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


def average(values: np.ndarray, judged: np.ndarray, mode: str) -> float | None:
    """The mean over queries that ``mode`` reproduces, or None (no query counts; ``propagate`` and a NaN).

    ``trec_eval`` — what trec_eval ``-c``, pytrec_eval's per-query values averaged over the judged queries, and
    ir_measures' means give: the judged queries only (``judged[q]``: the query has a qrels line, any label); an
    undefined value (NaN: no relevant document, e.g. a topic judged only 0) counts as 0; unjudged queries (in the
    run, not in the qrels) are left out. A judged query the run has nothing for is scored on an empty ranking: 0
    (trec_eval ``-c``; without ``-c`` trec_eval leaves it out). A NaN policy (``propagate``, ``drop``,
    ``zerofill``): ``nan_mean`` of every value, ``judged`` ignored. The sum is ``nan_mean``'s (left to right).
    """
    if mode == "trec_eval":
        return nan_mean(values[judged], "zerofill")
    return nan_mean(values, mode)


def _summary_measures(ks: Sequence[int], selected: frozenset[str] | None) -> list[Measure]:
    """The measures a summary holds, in order: for each k, the default columns (or the ``selected`` keys)."""
    every = [measure @ k for k in ks for measure in _SUMMARY_ORDER]
    if selected is None:
        return [m for m in every if Measure.of(m.name, dict(m.params)) in _DEFAULT]
    return [m for m in [*every, *_SUMMARY_ORDER] if m.key in selected]  # then the uncut ones (``ap``)


def summarize(
    columns: dict[str, np.ndarray],
    negative: np.ndarray,
    ks: Sequence[int],
    nan_policy: str,
    selected: frozenset[str] | None = None,
    judged: np.ndarray | None = None,
    average_mode: str = "kind",
) -> dict[str, dict[str, Any]]:
    """Per-kind means: ``{"positive": {...}, "negative": {...}}`` — the two are never averaged together.

    Each holds ``queries``, ``undefined`` (queries with n_rel = 0: rr/recall/precision/hit undefined),
    ``undefined_ndcg`` (ideal DCG = 0), and ``rr@k``, ``recall@k``, ``precision@k``, ``hit@k``, ``ndcg@k``,
    ``ndcg_exp@k``, ``distracting@k`` averaged under ``nan_policy`` (NaN → ``None``): each under its column key,
    the report's name (``rr@10``'s mean is MRR@10). ``selected``: only these column keys (``rr@10``, ``ap@10``)
    are summarized (default: the default columns). ``average_mode="trec_eval"`` adds ``"all"``: every kind
    together, averaged by ``average`` over the ``judged`` queries (``average``, ``queries`` counted, ``left_out`` =
    unjudged, and the means).
    """
    if nan_policy not in NAN_POLICIES:
        raise ValueError(f"nan_policy must be one of {', '.join(NAN_POLICIES)}, got {nan_policy!r}")
    if average_mode not in AVERAGES:
        raise ValueError(f"average must be one of {', '.join(AVERAGES)}, got {average_mode!r}")
    ks = normalize_ks(ks)
    measures = _summary_measures(ks, selected)
    out: dict[str, dict[str, Any]] = {}
    for kind, mask in (("positive", ~negative), ("negative", negative)):
        block: dict[str, Any] = {
            "queries": int(mask.sum()),
            "undefined": int((columns["n_rel"][mask] == 0).sum()),
            "undefined_ndcg": int(np.isnan(columns[f"ndcg@{ks[0]}"][mask]).sum()),
        }
        for at_k in measures:
            block[at_k.key] = nan_mean(columns[at_k.key][mask], nan_policy)
        out[kind] = block
    if average_mode == "trec_eval":
        if judged is None:
            raise ValueError("average 'trec_eval' needs the judged mask")
        head: dict[str, Any] = {"average": average_mode, "queries": int(judged.sum()), "left_out": int((~judged).sum())}
        out["all"] = head | {m.key: average(columns[m.key], judged, average_mode) for m in measures}
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
        if self.selected is None:
            return [f"{m}@{k}" for k in self.params["ks"] for m in METRIC_NAMES]
        cut = [key for k in self.params["ks"] for m in _EVERY_NAME if (key := f"{m}@{k}") in self.selected]
        return cut + [m for m in _EVERY_NAME if m in self.selected]  # the uncut measures (``ap``: the whole list)

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
    average_mode: str = "kind",
) -> RankingResult:
    """Ranking metrics on prebuilt arrays (the ``metrics`` command's fast path).

    ``measures``: output only these (each with a cutoff in ``ks``, see ``measures.expand``); default: the default
    columns. ``average_mode="trec_eval"`` adds the summary ``"all"`` (``summarize``, ``average``).
    """
    ks = normalize_ks(ks)
    selected = None if measures is None else frozenset(m.key for m in measures)
    columns = compute(arrays, ks, [m for m in measures or () if m.column not in METRIC_NAMES])
    summary = summarize(columns, arrays.negative, ks, nan_policy, selected, arrays.has_labels, average_mode)
    params = {
        "ks": list(ks),
        "relevance_threshold": arrays.relevance_threshold,
        "nan_policy": nan_policy,
        **({"average": average_mode} if average_mode != "kind" else {}),
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
