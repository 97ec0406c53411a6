"""Agreement between a judge and human verdicts (or the qrels): κ, weighted κ, Krippendorff's α, confusions.

Arrays in, frozen dataclasses out. A row where either side is missing (NaN) is left out of every statistic and
counted in ``n_missing``; a statistic that is undefined (no rows, or chance agreement already 1) is NaN, never 0.
Intervals of κ and α are percentile intervals of a seeded unit bootstrap (Zapf et al. 2016), every resample one
matrix product; fewer than ``MIN_AGREEMENT_ROWS`` rows are shown greyed. ``context_holds_relevant``: the
retrieval judge against the qrels. docs/trust.md states the formulas and sources.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ..wire import passes
from ._dist import normal_quantile
from .assembly import contains_document, normalize_ws
from .ppi import MeanEstimates, estimate_mean, rater_mean

__all__ = [
    "MIN_AGREEMENT_ROWS",
    "Agreement",
    "Disagreement",
    "JudgeNoise",
    "JudgeTrust",
    "agreement",
    "alpha_interval",
    "cohen_kappa",
    "confusion_matrix",
    "context_holds_relevant",
    "judge_noise",
    "judge_trust",
    "kappa_interval",
    "krippendorff_alpha",
    "most_disagreeing",
    "noise_band",
    "qrels_check",
    "rater_mean",
    "verdict_flips",
    "weighted_kappa",
]

Weights = Literal["quadratic", "linear"]
Level = Literal["ordinal", "interval", "nominal"]
Scale = Sequence[float] | np.ndarray  # the category values, e.g. range(1, 6)
_MAX_CATEGORIES = 2000  # ordinal/nominal α builds a categories² matrix
_MAX_BOOT_CATEGORIES = 50  # the bootstrap holds units × categories² per-unit coincidences
MIN_AGREEMENT_ROWS = 10  # κ / α on fewer rows: greyed, with a warning


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
    cells = np.searchsorted(cats, j) * cats.size + np.searchsorted(cats, h)
    return np.bincount(cells, minlength=cats.size * cats.size).reshape(cats.size, cats.size).astype(np.int64)


def _kappas(confusions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """κ = 1 − Σ w·O / Σ w·E of each of a stack of confusion matrices (… × k × k; E the outer product of the
    marginals, same total), NaN where Σ w·E is 0."""
    total = confusions.sum(axis=(-2, -1))[..., None, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = confusions / total
        expected = observed.sum(axis=-1)[..., :, None] * observed.sum(axis=-2)[..., None, :]
        denom = (weights * expected).sum(axis=(-2, -1))
        kappa = 1.0 - (weights * observed).sum(axis=(-2, -1)) / denom
    return np.where((denom > 0) & np.isfinite(kappa), kappa, np.nan)


def cohen_kappa(judge: Any, human: Any, *, categories: Scale | None = None) -> float:
    """Cohen's κ (unweighted: every disagreement counts the same), e.g. on pass/fail as 1/0."""
    return weighted_kappa(judge, human, categories=categories, weights=None)


def weighted_kappa(
    judge: Any, human: Any, *, categories: Scale | None = None, weights: Weights | None = "quadratic"
) -> float:
    """Weighted κ on an ordinal scale (e.g. the 1–5 judges with ``categories=range(1, 6)``); quadratic by default,
    None: Cohen's unweighted κ."""
    j, h, _ = _pairs(judge, human)
    cats = _categories([j, h], categories)
    return float(_kappas(confusion_matrix(j, h, categories=cats)[None], _disagreement_weights(cats, weights))[0])


def _disagreement_weights(cats: np.ndarray, weights: Weights | None) -> np.ndarray:
    """w_ij: (v_i − v_j)² (quadratic), |v_i − v_j| (linear), or [i ≠ j] (None: Cohen's unweighted κ)."""
    if weights is None:
        return 1.0 - np.eye(cats.size)
    diff = np.abs(cats[:, None] - cats[None, :])
    return diff**2 if weights == "quadratic" else diff


def kappa_interval(
    judge: Any,
    reference: Any,
    *,
    categories: Scale | None = None,
    weights: Weights | None = None,
    rows: Any = None,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """The percentile bootstrap interval of Cohen's κ (``weights=None``) or weighted κ: the rows resampled with
    replacement (``_unit_bootstrap``, seeded), each with all its pairs — ``rows`` gives each pair's row when a row
    has several (one pair per rater), else every pair is its own row — and κ of each resample's confusion matrix.
    Resamples whose κ is undefined are left out; (NaN, NaN) with fewer than two rows or two categories, more than
    ``_MAX_BOOT_CATEGORIES`` categories, or most resamples undefined."""
    nan = (float("nan"), float("nan"))
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(reference, dtype=np.float64).ravel()
    unit = np.arange(j.size) if rows is None else np.asarray(rows).ravel()
    if not j.size == h.size == unit.size:
        raise ValueError(f"judge, reference and rows must have one length, got {j.size}, {h.size}, {unit.size}")
    keep = ~(np.isnan(j) | np.isnan(h))
    j, h, unit = j[keep], h[keep], unit[keep]
    cats = _categories([j, h], categories)
    k = cats.size
    if k < 2 or k > _MAX_BOOT_CATEGORIES or np.unique(unit).size < 2:
        return nan
    cell = np.searchsorted(cats, j) * k + np.searchsorted(cats, h)
    if rows is None:  # one pair per row: a unit is its cell
        sizes = np.bincount(cell, minlength=k * k)
        patterns, sizes = np.eye(k * k)[sizes > 0], sizes[sizes > 0]
    else:
        _, index = np.unique(unit, return_inverse=True)
        per_row = np.bincount(index * k * k + cell, minlength=(index.max() + 1) * k * k).reshape(-1, k * k)
        patterns, sizes = np.unique(per_row, axis=0, return_counts=True)
    confusions = _unit_bootstrap(patterns.astype(float), sizes, resamples, seed).reshape(resamples, k, k)
    return _percentile(_kappas(confusions, _disagreement_weights(cats, weights)), resamples, confidence)


def _unit_bootstrap(patterns: np.ndarray, sizes: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """The bootstrap over units, for κ (a unit: a row with its pairs) and α (a unit rated twice or more): each
    resample draws as many units as there are, with replacement, and sums what they add (each unit's row of
    ``patterns``, a units × m array, grouped: identical units once, with their count in ``sizes``). The counts of
    each group in a resample are multinomial(units, sizes / units) — the law of drawing units one by one — so the
    cost grows with the distinct units, not the units (``numpy.random.default_rng(seed).multinomial``, one call).
    Returns resamples × m sums."""
    units = int(sizes.sum())
    counts = np.random.default_rng(seed).multinomial(units, sizes / units, size=resamples)
    return counts @ patterns


def _percentile(values: np.ndarray, resamples: int, confidence: float) -> tuple[float, float]:
    """The two-sided percentile interval of the resamples' statistic, the undefined (NaN) ones left out; (NaN, NaN)
    when most are undefined, or when the interval has no width — every resample gives the same value, as κ = 0
    does for a judge whose verdict never varies: the bootstrap cannot see how far that would hold on other rows,
    and "0 [0, 0]" would claim it knows."""
    nan = (float("nan"), float("nan"))
    values = values[np.isfinite(values)]
    if values.size < resamples / 2:
        return nan
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return (float(low), float(high)) if high > low else nan


def krippendorff_alpha(ratings: Any, *, level: Level = "ordinal", categories: Scale | None = None) -> float:
    """Krippendorff's α of a raters × units matrix (NaN = not rated), at the given level of measurement."""
    data = np.asarray(ratings, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"ratings must be a raters × units matrix, got shape {data.shape}")
    if level == "interval":
        return _interval_alpha(data)
    cats = _categories([data], categories)
    if cats.size > _MAX_CATEGORIES:
        raise ValueError(f"{cats.size} distinct values is too many for {level} α: use level='interval'")
    counts = _unit_counts(data, cats)
    inv = 1.0 / (counts.sum(axis=1) - 1.0)
    coincidence = (counts * inv[:, None]).T @ counts - np.diag((counts * inv[:, None]).sum(axis=0))
    return float(_alphas(coincidence[None], cats, level)[0])


def _alphas(coincidence: np.ndarray, cats: np.ndarray, level: Level) -> np.ndarray:
    """α of each of a stack of coincidence matrices (… × k × k): 1 − (n − 1)·Σ o_ck·δ²_ck / Σ n_c·n_k·δ²_ck, NaN
    where the denominator is 0 (no pairable value, or every value the same)."""
    n_c = coincidence.sum(axis=-1)
    n = n_c.sum(axis=-1)
    delta = _delta(cats, n_c, level)
    expected = (n_c[..., :, None] * n_c[..., None, :] * delta).sum(axis=(-2, -1))
    observed = (coincidence * delta).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def _unit_counts(data: np.ndarray, cats: np.ndarray) -> np.ndarray:
    """units × categories counts of the ratings, units rated twice or more only."""
    rated = ~np.isnan(data)
    cells = np.nonzero(rated)[1] * cats.size + np.searchsorted(cats, data[rated])
    counts = np.bincount(cells, minlength=data.shape[1] * cats.size).reshape(data.shape[1], cats.size).astype(float)
    return counts[counts.sum(axis=1) >= 2]


def alpha_interval(
    ratings: Any,
    *,
    level: Level = "ordinal",
    categories: Scale | None = None,
    resamples: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, float]:
    """The percentile bootstrap interval of Krippendorff's α over units (the units rated twice or more, resampled
    with replacement with all their ratings: ``_unit_bootstrap``, units with the same ratings grouped). Resamples
    whose α is undefined (every rating the same) are left out; (NaN, NaN) when fewer than two units, more than
    ``_MAX_BOOT_CATEGORIES`` categories, or most resamples undefined."""
    nan = (float("nan"), float("nan"))
    data = np.asarray(ratings, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"ratings must be a raters × units matrix, got shape {data.shape}")
    cats = _categories([data], categories)
    if cats.size < 2 or cats.size > _MAX_BOOT_CATEGORIES:
        return nan
    counts = _unit_counts(data, cats)
    units = counts.shape[0]
    if units < 2:
        return nan
    k = cats.size
    patterns, sizes = np.unique(counts, axis=0, return_counts=True)  # units with the same ratings: one group
    per_unit = (patterns[:, :, None] * patterns[:, None, :]) / (patterns.sum(axis=1) - 1)[:, None, None]
    per_unit -= np.einsum("uc,cd->ucd", patterns / (patterns.sum(axis=1) - 1)[:, None], np.eye(k))
    coincidence = _unit_bootstrap(per_unit.reshape(-1, k * k), sizes, resamples, seed).reshape(resamples, k, k)
    return _percentile(_alphas(coincidence, cats, level), resamples, confidence)


def _interval_alpha(data: np.ndarray) -> float:
    """Interval α without a category matrix: Σ o_ck δ² = Σ_u 2·m_u·SS_u / (m_u − 1) and Σ n_c n_k δ² = 2·n·SS over
    the pairable values (SS the sums of squares about the unit's and the pooled mean)."""
    rated = ~np.isnan(data)
    m = rated.sum(axis=0)
    keep = m >= 2
    x, r, m = np.where(rated, data, 0.0)[:, keep], rated[:, keep], m[keep]
    n = float(m.sum())
    if n <= 1:
        return float("nan")
    unit_mean = x.sum(axis=0) / m
    ss_unit = (np.where(r, x - unit_mean, 0.0) ** 2).sum(axis=0)
    pooled = x.sum() / n
    ss_total = float((np.where(r, x - pooled, 0.0) ** 2).sum())
    if ss_total == 0:
        return float("nan")
    return 1.0 - (n - 1) * float((2 * m * ss_unit / (m - 1)).sum()) / (2 * n * ss_total)


def _delta(cats: np.ndarray, n_c: np.ndarray, level: Level) -> np.ndarray:
    """The squared difference δ²_ck of each pair of categories at ``level`` (ordinal: from the category totals
    ``n_c``, one row of them or a stack of rows, one per resample)."""
    if level == "nominal":
        return 1.0 - np.eye(cats.size)
    if level == "interval":
        return (cats[:, None] - cats[None, :]) ** 2
    cum = np.concatenate([np.zeros((*n_c.shape[:-1], 1)), np.cumsum(n_c, axis=-1)], axis=-1)
    lo = np.minimum.outer(np.arange(cats.size), np.arange(cats.size))
    hi = np.maximum.outer(np.arange(cats.size), np.arange(cats.size))
    between = cum[..., hi + 1] - cum[..., lo]  # Σ_{g=lo..hi} n_g
    return (between - (n_c[..., :, None] + n_c[..., None, :]) / 2.0) ** 2


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
    if idx.size > top > 0:  # only the rows that can be in the top: those at least as far apart as the top-th
        cut = np.partition(gap[idx], idx.size - top)[idx.size - top]
        idx = idx[gap[idx] >= cut]
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
    rows: int = -1  # rows with a pair (several raters on a row: fewer than n); -1: n, one pair per row
    kappa_interval: tuple[float, float] | None = None  # 95 % percentile bootstrap over rows (``kappa_interval``)
    weighted_kappa_interval: tuple[float, float] | None = None


def agreement(
    judge: Any,
    reference: Any,
    *,
    categories: Scale | None = None,
    top: int = 10,
    rows: Any = None,
    resamples: int = 1000,
    seed: int = 0,
) -> Agreement:
    """κ, quadratic-weighted κ (when the scale has more than two levels), each with its bootstrap interval over
    rows (``kappa_interval``; ``rows``: each pair's row when a row has several pairs; ``resamples`` = 0: no
    interval), confusion, base rates, worst rows."""
    j, h, missing = _pairs(judge, reference)
    cats = _categories([j, h], categories)
    conf = confusion_matrix(j, h, categories=cats)
    n = int(conf.sum())
    rates = (conf.sum(axis=1) / n, conf.sum(axis=0) / n) if n else (np.full(cats.size, np.nan),) * 2
    weighted = cats.size > 2
    ci: list[tuple[float, float] | None] = [None, None]
    kinds: tuple[Weights | None, ...] = (None, "quadratic") if resamples else ()
    for i, weights in enumerate(kinds):
        if weights is None or weighted:
            ci[i] = kappa_interval(
                judge, reference, categories=cats, weights=weights, rows=rows, resamples=resamples, seed=seed
            )
    return Agreement(
        n=n,
        n_missing=missing,
        observed=float(np.trace(conf) / n) if n else float("nan"),
        kappa=cohen_kappa(j, h, categories=cats),
        weighted_kappa=weighted_kappa(j, h, categories=cats) if weighted else None,
        categories=cats.tolist(),
        confusion=conf.tolist(),
        judge_rates=rates[0].tolist(),
        reference_rates=rates[1].tolist(),
        disagreements=most_disagreeing(judge, reference, top=top),
        rows=n,
        kappa_interval=ci[0],
        weighted_kappa_interval=ci[1],
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


def qrels_check(records: Iterable[Any], judge_passed: Any, *, relevance_threshold: int = 1, top: int = 10) -> Agreement:
    """The retrieval judge's pass/fail (aligned with ``records``, NaN = unscored) against the qrels' answer to "does
    the context hold a relevant document" (``context_holds_relevant``); rows where that is unknown are missing."""
    truth = [context_holds_relevant(r, relevance_threshold=relevance_threshold) for r in records]
    reference = np.array([np.nan if t is None else float(t) for t in truth])
    return agreement(judge_passed, reference, categories=(0.0, 1.0), top=top)


@dataclass(frozen=True)
class JudgeTrust:
    """One judge against the human verdicts on a run: what the report's trust section shows for it.

    ``on_pass`` compares pass/fail, ``on_scale`` the scores (each (judge, rater) pair one observation), both
    ``None`` without such verdicts; ``alpha_humans`` is Krippendorff's ordinal α among the raters (needs two),
    ``alpha_with_judge`` the same with the judge as one more rater (close to ``alpha_humans``: it rates like a
    person), each with its unit-bootstrap interval (``alpha_interval``) and the rows (units rated twice or more)
    it stands on; ``score_mean`` / ``pass_rate`` the four estimates of ``ppi.estimate_mean`` (several raters: their
    variance in the intervals); ``missing`` says in words what could not be computed and why.
    """

    n_rows: int
    n_labeled: int
    raters: int
    on_pass: Agreement | None
    on_scale: Agreement | None
    alpha_humans: float | None
    alpha_with_judge: float | None
    score_mean: MeanEstimates | None
    pass_rate: MeanEstimates | None
    missing: list[str]
    alpha_humans_interval: tuple[float, float] | None = None
    alpha_with_judge_interval: tuple[float, float] | None = None
    alpha_rows: int = 0
    alpha_with_judge_rows: int = 0


def judge_trust(
    judge_score: Any,
    judge_passed: Any,
    human_score: Any,
    human_passed: Any,
    *,
    threshold: float | None = None,
    higher_is_better: bool = True,
    categories: Scale | None = None,
    score_target: float | None = None,
    pass_target: float | None = None,
    resamples: int = 1000,
    probability: Any = None,
) -> JudgeTrust:
    """Agreement, α and the PPI estimates of one judge from aligned arrays: the judge's per-row score and pass
    (1/0, NaN = unscored) and the humans' raters × rows matrices (``dataset.verdicts.human_arrays``; NaN = not
    rated). A human score without a pass verdict passes when it reaches ``threshold`` (the judge's own).
    ``score_target`` / ``pass_target``: half-widths to budget labels for (``MeanEstimates.labels_for_target``);
    ``resamples``: α's and κ's bootstraps (0: no interval); ``probability``: each row's inclusion probability under the
    verdict queue (NaN: unknown), for ``estimate_mean``'s weighted PPI."""
    js, jp = np.asarray(judge_score, dtype=np.float64), np.asarray(judge_passed, dtype=np.float64)
    hs = np.atleast_2d(np.asarray(human_score, dtype=np.float64))
    hp = np.atleast_2d(np.asarray(human_passed, dtype=np.float64))
    if threshold is not None:
        hp = _passed_from_scores(hs, hp, threshold, higher_is_better)
    missing: list[str] = []
    on_scale = _pooled(js, hs, categories, "scores", missing, resamples)
    on_pass = _pooled(jp, hp, None, "pass/fail verdicts", missing, resamples)
    rated = ~np.isnan(hs)
    alpha_h = alpha_j = ci_h = ci_j = None
    rows_h = rows_j = 0
    if hs.shape[0] >= 2 and np.count_nonzero(rated.sum(axis=0) >= 2):
        with_judge = np.vstack([hs, js[None, :]])
        alpha_h = krippendorff_alpha(hs, categories=categories)
        alpha_j = krippendorff_alpha(with_judge, categories=categories)
        rows_h = int(np.count_nonzero(rated.sum(axis=0) >= 2))
        rows_j = int(np.count_nonzero((~np.isnan(with_judge)).sum(axis=0) >= 2))
        if resamples:
            ci_h = alpha_interval(hs, categories=categories, resamples=resamples)
            ci_j = alpha_interval(with_judge, categories=categories, resamples=resamples)
    else:
        missing.append("Krippendorff's α needs two raters on at least one row")
    scales = ((js, hs, categories, score_target), (jp, hp, (0.0, 1.0), pass_target))  # score; pass rate on [0, 1]
    means = [estimate_mean(j, h, scale=scale, target=target, probability=probability) for j, h, scale, target in scales]
    labeled = int(np.count_nonzero((rated | ~np.isnan(hp)).any(axis=0))) if hs.size else 0
    return JudgeTrust(
        js.size,
        labeled,
        hs.shape[0],
        on_pass,
        on_scale,
        alpha_h,
        alpha_j,
        means[0],
        means[1],
        missing,
        ci_h,
        ci_j,
        rows_h,
        rows_j,
    )


def _passed_from_scores(hs: np.ndarray, hp: np.ndarray, threshold: float, higher_is_better: bool) -> np.ndarray:
    """The pass verdicts, a cell without one taken from the score (``wire.passes``: ≥ threshold, or ≤ when lower
    is better; an unrated cell, NaN, stays without a verdict)."""
    with np.errstate(invalid="ignore"):
        derived = passes(hs, threshold, higher_is_better, nan="unknown")
    if hp.shape != hs.shape:
        return derived
    return np.where(np.isnan(hp), derived, hp)


def _pooled(
    judge: np.ndarray, humans: np.ndarray, categories: Scale | None, what: str, missing: list[str], resamples: int
) -> Agreement | None:
    """``agreement`` over every (judge, rater) pair of a row, or None (noted in ``missing``) without any; a
    disagreement's ``index`` is its row (one row may appear once per rater); κ's bootstrap resamples rows, each
    with all its pairs."""
    if humans.size == 0 or not np.count_nonzero(~np.isnan(humans) & ~np.isnan(judge)[None, :]):
        missing.append(f"no human {what} on rows the judge scored")
        return None
    row_of = np.tile(np.arange(judge.size), humans.shape[0])
    pooled = agreement(
        np.tile(judge, humans.shape[0]), humans.ravel(), categories=categories, rows=row_of, resamples=resamples
    )
    rows = [replace(d, index=d.index % judge.size) for d in pooled.disagreements]  # a pair's row, not its position
    paired = int(np.count_nonzero((~np.isnan(humans) & ~np.isnan(judge)[None, :]).any(axis=0)))
    return replace(pooled, disagreements=rows, rows=paired)


@dataclass(frozen=True)
class JudgeNoise:
    """A judge against itself over K repeats of the same rows (``run --repeats K``).

    ``noise_sd`` = √(mean over rows of the within-row variance, ddof 1): the spread of one score around the row's
    mean; ``flip_rate`` the share of rows whose pass verdict was not the same in every repeat, ``flaky`` those rows
    (at most ``top``, by index); ``alpha`` Krippendorff's α with the repeats as raters (1: deterministic), ordinal
    on a scale, interval for continuous scores. Rows scored fewer than twice are left out (``rows`` counts the
    others).
    """

    repeats: int
    rows: int
    noise_sd: float
    flip_rate: float | None
    flaky: list[int]
    alpha: float
    alpha_level: str  # ordinal for a scale (≤ 20 values, or categories given), else interval


def judge_noise(scores: Any, passed: Any = None, *, top: int = 20, categories: Scale | None = None) -> JudgeNoise:
    """The noise of a judge from a repeats × rows matrix of its scores (NaN = that repeat did not score the row)
    and, optionally, of its pass verdicts (1/0/NaN)."""
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    counts = np.count_nonzero(~np.isnan(s), axis=0)
    twice = counts >= 2
    sub = s[:, twice]
    with np.errstate(invalid="ignore", divide="ignore"):
        variance = np.nanvar(sub, axis=0, ddof=1) if sub.size else np.empty(0)
    noise = math.sqrt(float(variance.mean())) if variance.size else float("nan")
    flip_rate, flaky = None, []
    if passed is not None:
        seen, flipped = verdict_flips(np.atleast_2d(np.asarray(passed, dtype=np.float64)))
        flip_rate = float(np.count_nonzero(flipped) / np.count_nonzero(seen)) if seen.any() else None
        flaky = np.nonzero(flipped)[0][:top].tolist()
    level: Level = "ordinal" if categories is not None or np.unique(s[~np.isnan(s)]).size <= 20 else "interval"
    alpha = krippendorff_alpha(s, level=level, categories=categories)
    return JudgeNoise(s.shape[0], int(np.count_nonzero(twice)), noise, flip_rate, flaky, alpha, level)


def verdict_flips(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Of a raters (or repeats, or judges) × rows matrix of 1/0/NaN verdicts: the rows with two or more verdicts,
    and those whose verdicts are not all the same."""
    seen = np.count_nonzero(~np.isnan(p), axis=0) >= 2
    high = np.where(np.isnan(p), -np.inf, p).max(axis=0)
    low = np.where(np.isnan(p), np.inf, p).min(axis=0)
    return seen, seen & (high != low)


def noise_band(noise_sd: float, n_rows: int, repeats: int = 1, *, confidence: float = 0.95) -> float:
    """The half-width z·noise_sd·√(2 / (n·K)) inside which the difference of two runs' means (n paired rows, each
    row's score the mean of K repeats) is the judge's own noise alone: ``compare`` calls a smaller |Δ| "no change"."""
    if n_rows <= 0 or repeats <= 0:
        return float("nan")
    return normal_quantile(0.5 + confidence / 2) * noise_sd * math.sqrt(2.0 / (n_rows * repeats))
