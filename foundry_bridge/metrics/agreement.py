"""Agreement between a judge and human verdicts (or the qrels): κ, weighted κ, Krippendorff's α, confusions.

Arrays in, frozen dataclasses out. A row where either side is missing (NaN) is left out of every statistic and
counted in ``n_missing``; a statistic that is undefined (no rows, or chance agreement already 1) is NaN, never 0.

- Cohen's κ = (p_o − p_e) / (1 − p_e), p_o the observed agreement, p_e = Σ_c judge_c · human_c (the marginals).
- weighted κ = 1 − Σ w_ij O_ij / Σ w_ij E_ij, E the product of the marginals; quadratic weights
  w_ij = (v_i − v_j)², linear |v_i − v_j|, on the category *values* (a scale 1–5 keeps its spacing even when a
  level is never used).
- Krippendorff's α = 1 − (n − 1) Σ o_ck δ²_ck / Σ n_c n_k δ²_ck over the coincidence matrix o (each unit with
  m ≥ 2 ratings adds its ordered pairs with weight 1 / (m − 1)); ordinal δ_ck = Σ_{g=c..k} n_g − (n_c + n_k)/2,
  interval δ = v_c − v_k, nominal δ = [c ≠ k]. Units rated once are dropped (they carry no agreement).
- the retrieval judge against the qrels: the context the model received holds a document labelled relevant
  (``context_holds_relevant``), or none — a truth known without any extra human work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .assembly import contains_document, normalize_ws

__all__ = [
    "Agreement",
    "Disagreement",
    "agreement",
    "cohen_kappa",
    "confusion_matrix",
    "context_holds_relevant",
    "krippendorff_alpha",
    "most_disagreeing",
    "weighted_kappa",
]

Weights = Literal["quadratic", "linear"]
Level = Literal["ordinal", "interval", "nominal"]
Scale = Sequence[float] | np.ndarray  # the category values, e.g. range(1, 6)


def _pairs(judge: Any, human: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Both sides as float arrays with the rows missing on either side removed, and how many were removed."""
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    if j.shape != h.shape or j.ndim != 1:
        raise ValueError(f"judge and human must be 1-D arrays of one length, got {j.shape} and {h.shape}")
    keep = ~(np.isnan(j) | np.isnan(h))
    return j[keep], h[keep], int(keep.size - np.count_nonzero(keep))


def _categories(values: Iterable[np.ndarray], categories: Scale | None) -> np.ndarray:
    """The sorted category values: the given scale, or every value seen. A value off the given scale is refused."""
    seen = np.unique(np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in values]))
    seen = seen[~np.isnan(seen)]
    if categories is None:
        return seen
    cats = np.unique(np.asarray(categories, dtype=np.float64))
    off = np.setdiff1d(seen, cats)
    if off.size:
        raise ValueError(f"values {off.tolist()} are not on the scale {cats.tolist()}")
    return cats


def confusion_matrix(judge: Any, human: Any, *, categories: Scale | None = None) -> np.ndarray:
    """Counts ``C[i, j]`` of rows the judge put in category i and the human in category j (rows with a missing side
    left out); categories sorted by value."""
    j, h, _ = _pairs(judge, human)
    cats = _categories([j, h], categories)
    out = np.zeros((cats.size, cats.size), dtype=np.int64)
    np.add.at(out, (np.searchsorted(cats, j), np.searchsorted(cats, h)), 1)
    return out


def _kappa_from(confusion: np.ndarray, weights: np.ndarray) -> float:
    """1 − Σ w·O / Σ w·E (E the outer product of the marginals, same total); NaN when Σ w·E is 0."""
    total = confusion.sum()
    if total == 0:
        return float("nan")
    observed = confusion / total
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    denom = float((weights * expected).sum())
    if denom == 0:
        return float("nan")
    return 1.0 - float((weights * observed).sum()) / denom


def cohen_kappa(judge: Any, human: Any, *, categories: Scale | None = None) -> float:
    """Cohen's κ (unweighted: every disagreement counts the same), e.g. on pass/fail as 1/0."""
    conf = confusion_matrix(judge, human, categories=categories)
    return _kappa_from(conf, 1.0 - np.eye(conf.shape[0]))


def weighted_kappa(judge: Any, human: Any, *, categories: Scale | None = None, weights: Weights = "quadratic") -> float:
    """Weighted κ on an ordinal scale (e.g. the 1–5 judges with ``categories=range(1, 6)``); quadratic by default."""
    j, h, _ = _pairs(judge, human)
    cats = _categories([j, h], categories)
    diff = np.abs(cats[:, None] - cats[None, :])
    w = diff**2 if weights == "quadratic" else diff
    return _kappa_from(confusion_matrix(j, h, categories=cats), w)


def krippendorff_alpha(ratings: Any, *, level: Level = "ordinal", categories: Scale | None = None) -> float:
    """Krippendorff's α of a raters × units matrix (NaN = not rated), at the given level of measurement."""
    data = np.asarray(ratings, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"ratings must be a raters × units matrix, got shape {data.shape}")
    cats = _categories([data], categories)
    counts = np.zeros((data.shape[1], cats.size), dtype=np.float64)
    rated = ~np.isnan(data)
    units = np.nonzero(rated)[1]
    np.add.at(counts, (units, np.searchsorted(cats, data[rated])), 1.0)
    m = counts.sum(axis=1)
    counts = counts[m >= 2]
    inv = 1.0 / (m[m >= 2] - 1.0)
    coincidence = (counts * inv[:, None]).T @ counts - np.diag((counts * inv[:, None]).sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    if n <= 1:
        return float("nan")
    delta = _delta(cats, n_c, level)
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        return float("nan")
    return 1.0 - (n - 1) * float((coincidence * delta).sum()) / expected


def _delta(cats: np.ndarray, n_c: np.ndarray, level: Level) -> np.ndarray:
    """The squared difference δ²_ck of each pair of categories at ``level``."""
    if level == "nominal":
        return 1.0 - np.eye(cats.size)
    if level == "interval":
        return (cats[:, None] - cats[None, :]) ** 2
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    lo = np.minimum.outer(np.arange(cats.size), np.arange(cats.size))
    hi = np.maximum.outer(np.arange(cats.size), np.arange(cats.size))
    between = cum[hi + 1] - cum[lo]  # Σ_{g=lo..hi} n_g
    return (between - (n_c[:, None] + n_c[None, :]) / 2.0) ** 2


@dataclass(frozen=True)
class Disagreement:
    """One row where judge and human differ: its index in the arrays given, both values, |difference|."""

    index: int
    judge: float
    human: float
    gap: float


def most_disagreeing(judge: Any, human: Any, *, top: int = 10) -> list[Disagreement]:
    """The ``top`` rows with the largest |judge − human| (> 0), largest first, ties by index."""
    j = np.asarray(judge, dtype=np.float64)
    h = np.asarray(human, dtype=np.float64)
    gap = np.abs(j - h)
    idx = np.nonzero(~np.isnan(gap) & (gap > 0))[0]
    order = idx[np.lexsort((idx, -gap[idx]))][:top]
    return [Disagreement(int(i), float(j[i]), float(h[i]), float(gap[i])) for i in order]


@dataclass(frozen=True)
class Agreement:
    """A judge against a reference (humans, or the qrels) on the rows both scored.

    ``categories`` label the axes of ``confusion`` (judge rows × reference columns); ``judge_rates`` and
    ``reference_rates`` are the base rates of each category beside them (κ is read against them: a judge that
    always says "pass" agrees 90 % with a reference that passes 90 %, and has κ = 0).
    """

    n: int
    n_missing: int
    observed: float  # fraction of rows in exact agreement
    kappa: float
    weighted_kappa: float | None  # quadratic; None for two categories (pass/fail)
    categories: list[float]
    confusion: list[list[int]]
    judge_rates: list[float]
    reference_rates: list[float]
    disagreements: list[Disagreement]


def agreement(judge: Any, reference: Any, *, categories: Scale | None = None, top: int = 10) -> Agreement:
    """κ, quadratic-weighted κ (when the scale has more than two levels), confusion, base rates, worst rows."""
    j, h, missing = _pairs(judge, reference)
    cats = _categories([j, h], categories)
    conf = confusion_matrix(j, h, categories=cats)
    n = int(conf.sum())
    rates = (conf.sum(axis=1) / n, conf.sum(axis=0) / n) if n else (np.full(cats.size, np.nan),) * 2
    return Agreement(
        n=n,
        n_missing=missing,
        observed=float(np.trace(conf) / n) if n else float("nan"),
        kappa=cohen_kappa(j, h, categories=cats),
        weighted_kappa=weighted_kappa(j, h, categories=cats) if cats.size > 2 else None,
        categories=cats.tolist(),
        confusion=conf.tolist(),
        judge_rates=rates[0].tolist(),
        reference_rates=rates[1].tolist(),
        disagreements=most_disagreeing(judge, reference, top=top),
    )


def context_holds_relevant(record: Any, *, relevance_threshold: int = 1) -> bool | None:
    """Whether the context the model received holds a document the qrels label relevant (≥ threshold).

    ``record`` is a ``QueryRecord`` or alike. ``False`` when the query has labels and none of its relevant
    documents is in the context (or it has no relevant document at all); ``None`` (unknown) when it has no context,
    no labels, or a relevant retrieved document without content. A document is in the context as the assembly
    check defines it (``assembly.contains_document``: whitespace-normalized, a truncated tail counts).
    """
    if record.context is None or record.retrieval_ground_truth is None:
        return None
    relevant = {g.document_id for g in record.retrieval_ground_truth if g.query_relevance_label >= relevance_threshold}
    context = normalize_ws(record.context)
    unknown = False
    for doc in record.retrieved_documents:
        if doc.document_id not in relevant:
            continue
        if doc.content is None:
            unknown = True
        elif contains_document(context, normalize_ws(doc.content)) is not None:
            return True
    return None if unknown else False
