"""Prediction-powered inference of a judge metric's mean (or pass rate) from a few human labels.

``y`` the human verdicts on the n labelled rows, ``f`` the judge's scores on them, ``f_u`` the judge's scores on
the N unlabelled rows. Point estimates: judge-only, human-only, PPI (Angelopoulos et al. 2023) and PPI++ with λ
cross-fitted (``crossfit_folds``; ``interval="normal"`` keeps ``ppi-python``'s in-sample λ). Intervals: Wilson for
a pass rate, Student's t on a scale, padded with ``PSEUDO_ROWS`` pseudo-rows (Agresti & Min), clipped to the scale
(``Estimate.clipped``); inverse-probability weighted under the verdict queue (``ipw_ppi_mean``); several raters
add a crossed random effect (``rater_spread``, Satterthwaite's df). Below ``MIN_HUMAN_LABELS`` / ``MIN_LABELS``
labels: no interval, ``need_labels`` set. The label budget (``labels_to_halve``, ``labels_for_target``,
``labels_for_half_width``) solves the same variance formulas for more labels. docs/trust.md states every formula
and its source; ``tests/test_trust_coverage.py`` checks the coverage by simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ._dist import normal_quantile, t_quantile
from .intervals import PSEUDO_ROWS, clip, padded_variance, t_interval, two_sided, wilson

__all__ = [
    "CROSSFIT_FOLDS",
    "CROSSFIT_SEED",
    "MIN_HUMAN_LABELS",
    "MIN_LABELS",
    "NO_RATERS",
    "QUEUE_FLOOR",
    "QUEUE_SEED",
    "UNIFORM_NOTE",
    "WEIGHTED_NOTE",
    "Estimate",
    "MeanEstimates",
    "QueueDraw",
    "RaterSpread",
    "crossfit_folds",
    "crossfit_lambdas",
    "estimate_mean",
    "fold_count",
    "ipw_ppi_mean",
    "labelled_prefix",
    "labels_for_half_width",
    "ppi_mean",
    "prefix_probabilities",
    "queue_merge",
    "queue_order",
    "queue_priority",
    "queue_sample",
    "rater_mean",
    "rater_spread",
    "tuned_lambda",
]

MIN_HUMAN_LABELS = 5  # fewer labelled rows: no human-only interval ("too few labels")
MIN_LABELS = 10  # fewer labelled rows: no PPI / PPI++ interval

Scale = Sequence[float] | np.ndarray  # the scale's values, e.g. (0, 1) for a pass rate or range(1, 6)


@dataclass(frozen=True)
class Estimate:
    """A mean with its interval: ``mean`` in [``low``, ``high``] at ``confidence``, and what it was computed from.

    ``interval`` names how the interval was made; ``clipped`` is True when it left the scale and was cut to it;
    ``need_labels`` is set (and ``low``/``high`` are NaN) when there were too few labelled rows for an interval:
    the minimum that gives one.
    """

    method: str
    mean: float
    low: float
    high: float
    n_labeled: int
    n_unlabeled: int
    confidence: float
    interval: str = ""
    clipped: bool = False
    need_labels: int | None = None

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


@dataclass(frozen=True)
class RaterSpread:
    """The raters' share of the variance of a mean of row means: ``variance`` = ``sigma2`` · ``weight`` (σ̂²_rater ·
    Σ_r w_r²) on ``df`` = k − 1 degrees of freedom, ``raters`` = k (those sharing a row with another rater)."""

    variance: float
    df: int
    raters: int
    sigma2: float
    weight: float


NO_RATERS = RaterSpread(0.0, 0, 0, 0.0, 0.0)


def rater_mean(matrix: Any) -> np.ndarray:
    """The raters' mean per row of a raters × rows matrix, NaN where nobody rated (no warning): the human value
    of each row for PPI and the labelling priority."""
    matrix = np.atleast_2d(np.asarray(matrix, dtype=np.float64))
    counts = np.count_nonzero(~np.isnan(matrix), axis=0)
    sums = np.nansum(matrix, axis=0)
    return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def rater_spread(ratings: Any, *, iterations: int = 200) -> RaterSpread:
    """The raters' variance component of the mean of the row means of a raters × rows matrix (NaN = not rated; the
    columns: the rows the mean is over). σ̂²_rater = Σ â_r² / (k − 1), â the rater effects of y_rj = μ_j + a_r + e
    fitted by backfitting (alternating row and rater means, Σ â = 0) on the rows rated twice or more; Σ_r w_r² with
    w_r = (1/n)·Σ_j [r rated j] / m_j over every row rated. Fewer than two raters sharing a row: ``NO_RATERS``."""
    m = np.atleast_2d(np.asarray(ratings, dtype=np.float64))
    rated = ~np.isnan(m)
    per_row = rated.sum(axis=0)
    rows = per_row > 0
    n = int(np.count_nonzero(rows))
    multi = per_row >= 2
    who = rated[:, multi].any(axis=1)
    k = int(np.count_nonzero(who))
    if n == 0 or k < 2:
        return NO_RATERS
    w = (rated[:, rows] / per_row[rows]).sum(axis=1) / n
    y, r = np.where(rated, m, 0.0)[who][:, multi], rated[who][:, multi]
    per_rater, per_col = r.sum(axis=1), r.sum(axis=0)
    a = np.zeros(k)
    for _ in range(iterations):
        mu = (np.where(r, y - a[:, None], 0.0)).sum(axis=0) / per_col
        new = (np.where(r, y - mu[None, :], 0.0)).sum(axis=1) / per_rater
        new -= new.mean()
        done = float(np.abs(new - a).max()) < 1e-10
        a = new
        if done:
            break
    sigma2 = float((a**2).sum()) / (k - 1)
    weight = float((w**2).sum())
    return RaterSpread(sigma2 * weight, k - 1, k, sigma2, weight)


def _with_raters(variance: Any, df: Any, raters: RaterSpread) -> Any:
    """Satterthwaite's df (V + V_r)² / (V²/df + V_r²/(k − 1)) of the rows' variance V (on ``df``) plus the raters'
    V_r (on k − 1); ``df`` without the raters' variance. Scalars or arrays."""
    if raters.variance <= 0:
        return df
    total = variance + raters.variance
    return total**2 / (variance**2 / df + raters.variance**2 / raters.df)


def _df_text(df: float) -> str:
    return str(int(df)) if float(df).is_integer() else f"{df:.1f}"


def _raters_note(raters: RaterSpread) -> str:
    return f", {raters.raters} raters' variance" if raters.variance > 0 else ""


def _t_estimate(
    method: str,
    mean: float,
    variance: float,
    counts: tuple[int, int],
    confidence: float,
    v: np.ndarray | None,
    raters: RaterSpread,
    *,
    n: int,
    design: str = "",
    pad: bool = True,
) -> Estimate:
    """``mean`` ± t₍df₎·√(``variance`` + the raters'), df = n − 1 or Satterthwaite's with the raters
    (``_with_raters``), moved and cut to the scale ``v`` (``_on_scale``); ``interval`` names the df, the
    ``design``, the pseudo-rows (``pad``, with a scale) and the raters."""
    df = _with_raters(variance, n - 1, raters)
    low, high = t_interval(mean, variance + raters.variance, df, confidence=confidence)
    pseudo = f", {PSEUDO_ROWS:g} pseudo-rows" if pad and v is not None else ""
    how = f"t, {_df_text(df)} df{design}{pseudo}" + _raters_note(raters)
    mean, low, high, cut = _on_scale(mean, low, high, v)
    return Estimate(method, mean, low, high, *counts, confidence, how, cut)


def _z(confidence: float) -> float:
    return normal_quantile(two_sided(confidence))


def _arrays(y: Any, f: Any, f_u: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    yy, ff, uu = (np.asarray(a, dtype=np.float64).ravel() for a in (y, f, f_u))
    if yy.shape != ff.shape:
        raise ValueError(f"y and f must have one length (the labelled rows), got {yy.size} and {ff.size}")
    if np.isnan(yy).any() or np.isnan(ff).any() or np.isnan(uu).any():
        raise ValueError("NaN in the verdicts: leave unscored rows out before estimating")
    return yy, ff, uu


def _scale_values(scale: Scale | None, *arrays: np.ndarray) -> np.ndarray | None:
    """The scale's sorted distinct values (None: no scale); a value of ``arrays`` outside its range is refused."""
    if scale is None:
        return None
    v = np.unique(np.asarray(scale, dtype=np.float64))
    if v.size < 2 or np.isnan(v).any():
        raise ValueError(f"a scale needs two or more values, got {list(scale)}")
    for a in arrays:
        off = a[(a < v[0]) | (a > v[-1])]
        if off.size:
            raise ValueError(f"value {off[0]:g} is outside the scale {v[0]:g}–{v[-1]:g}")
    return v


def _is_rate(v: np.ndarray | None) -> bool:
    return v is not None and v.size == 2 and v[0] == 0.0 and v[1] == 1.0


def _grid(v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pseudo-rows: human and judge values over the k × k grid of scale values, each of weight PSEUDO_ROWS/k²."""
    gy, gf = (g.ravel() for g in np.meshgrid(v, v, indexing="ij"))
    return gy, gf, np.full(gy.size, PSEUDO_ROWS / gy.size)


def _scale_variance(y: np.ndarray, v: np.ndarray | None) -> float:
    """s²(y): the n − 1-divisor variance, padded with the pseudo-rows' human values when there is a scale."""
    if v is None:
        return float(y.var(ddof=1))
    gy, _, w = _grid(v)
    return padded_variance(y, gy, w)


def _per_fold(lams: np.ndarray, variance_at: Callable[[float], float]) -> float:
    """Σ_k (share of the rows whose λ is λ_k) · ``variance_at``(λ_k): a cross-fitted sum's variance with each
    fold's λ held fixed, every variance estimated on all the rows (a fold's few rows would be noisy, and the spread
    of the λ_k·f_i across folds is not noise of the estimate). One λ: ``variance_at``(λ)."""
    values, counts = np.unique(lams, return_counts=True)
    return float(sum(c / lams.size * variance_at(float(lam)) for lam, c in zip(values, counts, strict=True)))


def _var1(values: np.ndarray) -> float:
    return float(values.var(ddof=1)) if values.size > 1 else 0.0


def tuned_lambda(y: Any, f: Any, f_u: Any) -> float:
    """PPI++'s variance-minimizing λ = Cov(y, f) / ((1 + n/N) · Var(f ∪ f_u)), clipped to [0, 1]."""
    yy, ff, uu = _arrays(y, f, f_u)
    n, big_n = yy.size, uu.size
    if n < 2 or big_n == 0:
        return 0.0
    var_all = float(np.var(np.concatenate([ff, uu]), ddof=1))
    if var_all == 0:
        return 0.0
    cov = float(np.mean((yy - yy.mean()) * (ff - ff.mean())))
    return float(np.clip(cov / ((1 + n / big_n) * var_all), 0.0, 1.0))


CROSSFIT_FOLDS = 5  # PPI++'s λ is tuned on held-out folds: min(5, n) of them (n the labels), at least 2
CROSSFIT_SEED = 0  # the folds' permutation: the same rows give the same folds (and the same report)


def fold_count(labels: int) -> int:
    """K = min(``CROSSFIT_FOLDS``, n), at least 2: five folds from 5 labels up (each λ tuned on 80 % of the labels),
    leave-one-out below."""
    return min(CROSSFIT_FOLDS, max(2, labels))


def crossfit_folds(size: int, labels: int) -> np.ndarray:
    """The fold (0…K−1, K = ``fold_count(labels)``) of each of ``size`` rows: a seeded permutation
    (``numpy.random.default_rng(CROSSFIT_SEED).permutation(size)``) dealt round-robin, so the folds differ in size
    by one at most."""
    return np.random.default_rng(CROSSFIT_SEED).permutation(size) % fold_count(labels)


def crossfit_lambdas(
    y: np.ndarray, f: np.ndarray, f_u: np.ndarray, fold_y: np.ndarray, fold_u: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each labelled and each unlabelled row's λ, tuned (``tuned_lambda``) on the rows of the *other* folds only —
    labelled and unlabelled — so a row's λ is independent of the row it corrects (cross-prediction-powered
    inference: Zrnic & Candès, *PNAS* 2024, arXiv:2309.16598, here for λ rather than the predictor)."""
    k = int(max(fold_y.max(initial=0), fold_u.max(initial=0))) + 1
    lams = np.array([tuned_lambda(y[fold_y != i], f[fold_y != i], f_u[fold_u != i]) for i in range(k)])
    return lams[fold_y], lams[fold_u]


def _uniform_lambdas(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted λ of labels taken as a uniform sample: labelled and unlabelled rows each dealt into the folds."""
    n = y.size
    return crossfit_lambdas(y, f, f_u, crossfit_folds(n, n), crossfit_folds(f_u.size, n))


def _method(lam: float, tuned: bool) -> str:
    return f"PPI++ (λ={lam:.3f}, cross-fitted)" if tuned else f"PPI (λ={lam:g})"


def ppi_mean(
    y: Any,
    f: Any,
    f_u: Any,
    *,
    lam: float | None = None,
    confidence: float = 0.95,
    scale: Scale | None = None,
    interval: Literal["t", "normal"] = "t",
    raters: RaterSpread = NO_RATERS,
) -> Estimate:
    """The prediction-powered mean and interval: ``lam=None`` tunes λ (PPI++), ``lam=1`` is plain PPI.

    ``interval="t"`` (two labels or more): t₍n−1₎, n − 1 divisors, the pseudo-row pad and clipping when ``scale``
    is given, plus the ``raters``' variance (Satterthwaite's df); ``interval="normal"``: ``ppi-python``'s
    large-sample interval, θ ± z·√(λ²·sd(f_u)²/N + sd(y − λf)²/n) with the n divisor, unclipped."""
    yy, ff, uu = _arrays(y, f, f_u)
    n, big_n = yy.size, uu.size
    if n == 0 or big_n == 0:
        raise ValueError(f"PPI needs labelled and unlabelled rows, got n={n}, N={big_n}")
    v = _scale_values(scale, yy, ff, uu)
    if interval == "normal":
        lam_ = tuned_lambda(yy, ff, uu) if lam is None else float(lam)
        mean = float(lam_ * uu.mean() + (yy - lam_ * ff).mean())
        method = f"PPI++ (λ={lam_:.3f})" if lam is None else _method(lam_, False)
        half = _z(confidence) * math.sqrt(float(np.var(lam_ * uu)) / big_n + float(np.var(yy - lam_ * ff)) / n)
        return Estimate(method, mean, mean - half, mean + half, n, big_n, confidence, "normal (ppi-python's)")
    if n < 2:
        raise ValueError("the t interval needs two labelled rows or more")
    lams = _uniform_lambdas(yy, ff, uu) if lam is None else (np.full(n, lam), np.full(big_n, lam))
    return _ppi_t(yy, ff, uu, lams, lam is None, confidence, v, raters)


def _ppi_t(
    yy: np.ndarray,
    ff: np.ndarray,
    uu: np.ndarray,
    lams: tuple[np.ndarray, np.ndarray],
    tuned: bool,
    confidence: float,
    v: np.ndarray | None,
    raters: RaterSpread,
) -> Estimate:
    """``ppi_mean``'s t interval from each labelled and unlabelled row's λ (``lams``)."""
    n, big_n = yy.size, uu.size
    lam_y, lam_u = lams
    mean = _uniform_point(yy, ff, uu, lam_y, lam_u)
    method = _method(float(lam_y.mean()), tuned)
    s2_u = _var1(uu)
    s_y, c, s_f = _padded_moments(yy, ff, v)  # s²(y − λf), padded, = s_y − 2λc + λ²s_f at every λ
    variance = _per_fold(lam_u, lambda lam_: lam_**2 * s2_u) / big_n
    variance += _per_fold(lam_y, lambda lam_: s_y - 2 * lam_ * c + lam_**2 * s_f) / n
    return _t_estimate(method, mean, variance, (n, big_n), confidence, v, raters, n=n)


def _uniform_point(y: np.ndarray, f: np.ndarray, f_u: np.ndarray, lam_y: np.ndarray, lam_u: np.ndarray) -> float:
    """θ = mean over the unlabelled rows of λ_k·f + mean over the labelled rows of (y − λ_k·f), λ_k each row's."""
    return float((lam_u * f_u).mean() + (y - lam_y * f).mean())


def _on_scale(mean: float, low: float, high: float, v: np.ndarray | None) -> tuple[float, float, float, bool]:
    """The estimate and [low, high] on the scale, and whether either had to move: a θ off the scale (PPI's can
    leave it: it subtracts the judge's measured error) is moved to the scale's nearest end and its interval moves
    with it, then the interval is cut to the scale. So the interval holds its estimate and keeps a positive width;
    the truth is on the scale, so the moved θ is no farther from it and an interval that covered it still does."""
    if v is None:
        return mean, low, high, False
    lo, hi = float(v[0]), float(v[-1])
    moved = min(max(mean, lo), hi)
    low, high, cut = clip(low + moved - mean, high + moved - mean, lo, hi)
    return moved, low, high, cut or moved != mean


def _too_few(
    method: str, mean: float, counts: tuple[int, int], confidence: float, need: int | None = MIN_LABELS
) -> Estimate:
    """The point estimate without an interval (NaN bounds), and the labels an interval needs."""
    nan = float("nan")
    return Estimate(method, mean, nan, nan, *counts, confidence, need_labels=need)


def _single(
    values: np.ndarray,
    method: str,
    counts: tuple[int, int],
    confidence: float,
    v: np.ndarray | None,
    minimum: int,
    raters: RaterSpread = NO_RATERS,
) -> Estimate:
    """One mean with its interval (Wilson for a pass rate, padded t on a scale, plain t without one; the
    ``raters``' variance added: Wilson on Korn & Graubard's effective n, t on Satterthwaite's df); fewer than
    ``minimum`` values: no interval, ``need_labels`` = ``minimum``."""
    if values.size == 0:
        return _too_few(method, float("nan"), counts, confidence, None)
    mean = float(values.mean())
    if values.size < max(minimum, 2):
        return _too_few(method, mean, counts, confidence, minimum if minimum > 1 else None)
    if _is_rate(v):
        if raters.variance > 0 and 0 < mean < 1:
            n_star = _effective_n(mean, values.size, mean * (1 - mean) / values.size, raters, confidence)
            low, high = wilson(mean * n_star, n_star, confidence=confidence)
            how = f"Wilson score, effective n {n_star:.3g} ({raters.raters} raters' variance)"
            return Estimate(method, mean, low, high, *counts, confidence, how)
        low, high = wilson(float(values.sum()), values.size, confidence=confidence)
        return Estimate(method, mean, low, high, *counts, confidence, "Wilson score")
    variance = _scale_variance(values, v) / values.size
    return _t_estimate(method, mean, variance, counts, confidence, v, raters, n=values.size)


def _weighted_single(
    y: np.ndarray,
    pi: np.ndarray,
    counts: tuple[int, int],
    confidence: float,
    v: np.ndarray | None,
    raters: RaterSpread = NO_RATERS,
) -> Estimate:
    """The human-only mean of labels the queue drew with probabilities π: Hájek's weighted mean ȳ = Σ(w·y)/Σw,
    w = 1/π — on the scale, like any weighted mean — with the with-replacement variance V = n/(n − 1) · Σ w_i² ·
    (y_i − ȳ)² / N̂², N̂ = Σw (Särndal, Swensson & Wretman, *Model Assisted Survey Sampling* 1992, §2.9 and §5.7:
    no finite-population factor, so labels drawn with π = 1 still vary). With equal π it is the unweighted s²/n.
    On a scale V is padded like the unweighted means: ``PSEUDO_ROWS`` pseudo-rows spread over the scale's values,
    each of the labels' mean weight, so V = n·(Σ w²(y − ȳ)² + 2·w̄²·mean((v − ȳ)²)) / ((n + 1)·N̂²) — equal π give
    exactly the unweighted padded variance. Plus the raters' variance; a pass rate's interval is Wilson on Korn &
    Graubard's effective n (n itself when ȳ is 0 or 1), a mean's t₍df₎ clipped to the scale. Fewer than
    ``MIN_HUMAN_LABELS`` labels: no interval."""
    method = "human only, inverse-probability weighted"
    if y.size == 0:
        return _too_few(method, float("nan"), counts, confidence, None)
    w = 1.0 / pi
    mean = float((w * y).sum() / w.sum())
    n = y.size
    if n < MIN_HUMAN_LABELS:
        return _too_few(method, mean, counts, confidence, MIN_HUMAN_LABELS)
    spread, rows = float((w**2 * (y - mean) ** 2).sum()), float(n)
    if v is not None:
        spread += float(w.mean()) ** 2 * PSEUDO_ROWS * float(((v - mean) ** 2).mean())
        rows += PSEUDO_ROWS
    variance = n * spread / ((rows - 1) * float(w.sum()) ** 2)
    if _is_rate(v):
        n_star = _effective_n(mean, n, variance, raters, confidence)
        low, high = wilson(mean * n_star, n_star, confidence=confidence)
        return Estimate(method, mean, low, high, *counts, confidence, f"Wilson score, effective n {n_star:.3g}")
    return _t_estimate(method, mean, variance, counts, confidence, v, raters, n=n, design=", Hájek")


def _effective_n(p: float, n: int, variance: float, raters: RaterSpread, confidence: float) -> float:
    """Korn & Graubard's effective n of a proportion p whose variance is ``variance`` plus the raters':
    n* = p(1 − p)/V · (z/t_df)², V the sum, df Satterthwaite's; at most n, and n when p is 0 or 1."""
    if not 0 < p < 1:
        return float(n)
    df = _with_raters(variance, n - 1, raters)
    z = _z(confidence)
    return min(float(n), p * (1 - p) / (variance + raters.variance) * (z / t_quantile(two_sided(confidence), df)) ** 2)


@dataclass(frozen=True)
class MeanEstimates:
    """One judge metric's mean four ways, λ, and the label budget.

    ``labels_to_halve``: more human labels after which the PPI++ interval is half as wide or less (None: not even
    labelling every row would, or fewer than ``MIN_LABELS`` labels yet); ``human_labels_to_halve``: the same for
    the human-only interval (Student's t on today's variance); ``labels_for_target``: labels in all (today's
    included) for a PPI++ interval of ±``target`` (the human-only one when every scored row is labelled; with no
    label yet the worst case, ``labels_for_half_width``) — None when no count of rows reaches it (the raters'
    variance alone is wider: more raters are needed, not more rows); ``raters``: the raters' variance component;
    ``lam``: PPI++'s λ, the mean over the labelled rows of their folds' cross-fitted λ_k.
    """

    judge_only: Estimate
    human_only: Estimate
    ppi: Estimate | None
    ppi_plus: Estimate | None
    lam: float | None
    labels_to_halve: int | None
    human_labels_to_halve: int | None
    target: float | None = None
    labels_for_target: int | None = None
    raters: RaterSpread = NO_RATERS
    design: str | None = None


def estimate_mean(
    judge: Any,
    human: Any,
    *,
    confidence: float = 0.95,
    scale: Scale | None = None,
    target: float | None = None,
    probability: Any = None,
) -> MeanEstimates:
    """Every estimate of the mean from aligned arrays over all rows: ``judge`` (NaN = unscored, left out) and
    ``human`` (NaN = not labelled): one value per row, or a raters × rows matrix (the row's value is the raters'
    mean, their disagreement is added to the intervals: ``rater_spread``). ``scale``: the values a verdict can take —
    (0, 1) for a pass rate (Wilson intervals), e.g. range(1, 6) for a 1–5 score (padded t intervals clipped to 1–5);
    None: plain t intervals, no clipping. With no labelled row only the judge-only mean is set; PPI and PPI++ are
    None when every scored row is labelled (nothing to correct). ``target``: a half-width to budget labels for.

    ``probability``: each row's inclusion probability under the queue that chose it (NaN: unknown). When every
    labelled row has one, PPI and PPI++ are ``ipw_ppi_mean`` (λ = 1, and λ tuned for it and cross-fitted), the
    human-only mean is Hájek's weighted mean (``_weighted_single``) and ``design`` names the weighting; otherwise
    the labels are treated as a uniform random sample (``design`` = ``UNIFORM_NOTE`` — the report prints it beside
    the estimate) and the unweighted estimators above apply."""
    j = np.asarray(judge, dtype=np.float64).ravel()
    given = np.asarray(human, dtype=np.float64)
    h = rater_mean(given) if given.ndim == 2 else given.ravel()
    if j.shape != h.shape:
        raise ValueError(f"judge and human must have one length, got {j.size} and {h.size}")
    scored = ~np.isnan(j)
    labeled = scored & ~np.isnan(h)
    y, f, f_u = h[labeled], j[labeled], j[scored & np.isnan(h)]
    v = _scale_values(scale, y, j[scored])
    raters = rater_spread(given[:, labeled]) if given.ndim == 2 and y.size else NO_RATERS
    n, big_n = y.size, f_u.size
    judge_only = _single(j[scored], "judge only", (n, big_n), confidence, v, 1)
    human_only = _single(y, "human only", (n, big_n), confidence, v, MIN_HUMAN_LABELS, raters)
    budget = _Budget(y, f, f_u, v, raters, confidence)
    human_halve = budget.human_to_halve()
    need = None if target is None else budget.for_target(target)
    out = MeanEstimates(judge_only, human_only, None, None, None, None, human_halve, target, need, raters)
    if n == 0 or big_n == 0:
        return out
    pi = None if probability is None else np.asarray(probability, dtype=np.float64).ravel()
    if pi is not None and not np.isnan(pi[labeled]).any():
        pi = np.where(labeled, pi, np.nan)
        return replace(
            out,
            human_only=_weighted_single(y, pi[labeled], (n, big_n), confidence, v, raters),
            ppi=ipw_ppi_mean(j, h, pi, confidence=confidence, scale=v, raters=raters),
            ppi_plus=ipw_ppi_mean(j, h, pi, lam=None, confidence=confidence, scale=v, raters=raters),
            lam=_ipw_lambdas(j[scored], labeled[scored], h[scored], pi[scored])[1],
            design=WEIGHTED_NOTE,
        )
    lam_y, lam_u = _uniform_lambdas(y, f, f_u)
    lam = float(lam_y.mean())
    out = replace(out, lam=lam, design=UNIFORM_NOTE)
    if n < MIN_LABELS:
        plain = _too_few(_method(1.0, False), float(f_u.mean() + (y - f).mean()), (n, big_n), confidence)
        plus = _too_few(_method(lam, True), _uniform_point(y, f, f_u, lam_y, lam_u), (n, big_n), confidence)
        return replace(out, ppi=plain, ppi_plus=plus)
    plus = _ppi_t(y, f, f_u, (lam_y, lam_u), True, confidence, v, raters)
    plain = ppi_mean(y, f, f_u, lam=1.0, confidence=confidence, scale=v, raters=raters)
    return replace(out, ppi=plain, ppi_plus=plus, labels_to_halve=budget.ppi_to_halve())


def _padded_moments(y: np.ndarray, f: np.ndarray, v: np.ndarray | None) -> tuple[float, float, float]:
    """s²(y), Cov(y, f), s²(f) over the labelled rows (n − 1 divisor), padded like the interval's variance."""
    if v is None:
        c = float(np.cov(y, f, ddof=1)[0, 1])
        return float(y.var(ddof=1)), c, float(f.var(ddof=1))
    gy, gf, pw = _grid(v)
    w = np.concatenate([np.ones(y.size), pw])
    yy, ff = np.concatenate([y, gy]), np.concatenate([f, gf])
    total = float(w.sum())
    dy, df = yy - (w * yy).sum() / total, ff - (w * ff).sum() / total
    s_y, c, s_f = ((w * a * b).sum() / (total - 1) for a, b in ((dy, dy), (dy, df), (df, df)))
    return float(s_y), float(c), float(s_f)


def _t_half(variance: np.ndarray, df: np.ndarray, confidence: float) -> np.ndarray:
    """t₍df₎·√variance, element-wise (``scipy.special.stdtrit``)."""
    from scipy.special import stdtrit

    return np.asarray(stdtrit(df, two_sided(confidence))) * np.sqrt(np.maximum(variance, 0.0))


@dataclass(frozen=True)
class _Budget:
    """The label budget of one mean from today's labelled rows: the PPI++ variance V(m) after m more labels, and
    the human-only one (both with the raters' variance, which more rows do not shrink)."""

    y: np.ndarray
    f: np.ndarray
    f_u: np.ndarray
    v: np.ndarray | None
    raters: RaterSpread
    confidence: float

    def _human(self, labels: np.ndarray) -> np.ndarray:
        """Half-width of the human-only mean at each count of labels: t₍df₎·√(s²/n' + V_raters)."""
        s2 = _scale_variance(self.y, self.v)
        variance = s2 / labels
        return _t_half(
            variance + self.raters.variance, _with_raters(variance, labels - 1, self.raters), self.confidence
        )

    def human_to_halve(self) -> int | None:
        """More labels after which the human-only half-width is half today's (None: none yet, or unreachable)."""
        n = self.y.size
        if n < 2:
            return None
        today = float(self._human(np.array([float(n)]))[0])
        found = self._first(float(n + 1), float(n + max(64 * n, 10_000)), lambda k: self._human(k) <= today / 2)
        return None if found is None else found - n

    @staticmethod
    def _first(low: float, high: float, ok: Callable[[np.ndarray], np.ndarray]) -> int | None:
        """The fewest whole k in [low, high] with ok(k): ``ok`` on 256 log-spaced counts, then on every count
        between the last that failed and the first that held."""
        grid = np.unique(np.round(np.geomspace(low, high, 256)))
        hit = np.nonzero(ok(grid))[0]
        if not hit.size:
            return None
        start = grid[hit[0] - 1] + 1 if hit[0] > 0 else low
        dense = np.arange(start, grid[hit[0]] + 1)
        return int(dense[np.nonzero(ok(dense))[0][0]])

    def _ppi(self, m: np.ndarray) -> np.ndarray:
        """V(m) = λ_m²·s_u²/(N − m) + (s_y² − 2λ_m·c + λ_m²·s_f²)/(n + m), λ_m = c₀ / (v₀·(1 + (n + m)/(N − m)))
        clipped to [0, 1] (c₀ = Cov(y, f), v₀ = Var(f ∪ f_u), as ``tuned_lambda``); s_u² = s²(f_u) and s_y², c,
        s_f² the padded moments of the labelled rows, so V(0) is today's interval's variance (raters' excluded)."""
        y, f, f_u = self.y, self.f, self.f_u
        n, big_n = y.size, f_u.size
        s_u = _var1(f_u)
        s_y, c, s_f = _padded_moments(y, f, self.v)
        v0 = float(np.var(np.concatenate([f, f_u]), ddof=1))
        c0 = float(np.mean((y - y.mean()) * (f - f.mean())))
        lab, unl = n + m, big_n - m
        lam = np.clip(c0 / (v0 * (1 + lab / unl)), 0.0, 1.0) if v0 > 0 else np.zeros_like(m)
        return np.asarray(lam**2 * s_u / unl + (s_y - 2 * lam * c + lam**2 * s_f) / lab)

    def ppi_to_halve(self) -> int | None:
        """The fewest m (moved from the unlabelled rows) whose PPI++ variance, raters' included, is a quarter of
        today's (None: not even labelling every row would)."""
        big_n = self.f_u.size
        today = float(self._ppi(np.zeros(1))[0]) + self.raters.variance
        m = np.arange(1, big_n, dtype=np.float64)
        ok = np.nonzero(self._ppi(m) + self.raters.variance <= today / 4)[0]
        return int(m[ok[0]]) if ok.size else None

    def for_target(self, half_width: float) -> int | None:
        """Labels in all for a half-width of at most ``half_width``: the PPI++ interval's t₍df₎·√(V(m) +
        V_raters), from ``MIN_LABELS`` up to every scored row but one; every scored row labelled: the human-only
        interval's. With fewer than two labels: ``labels_for_half_width`` (the worst case on a pass rate, else the
        judge's own spread as the guess of the humans'). None when no count reaches it."""
        if half_width <= 0:
            raise ValueError(f"half_width must be > 0, got {half_width}")
        n, big_n = self.y.size, self.f_u.size
        if n < 2:
            pool = np.concatenate([self.f, self.f_u])
            sd = 0.5 if _is_rate(self.v) else (float(pool.std(ddof=1)) if pool.size > 1 else 0.0)
            return labels_for_half_width(half_width, sd=sd, confidence=self.confidence) if sd > 0 else None
        start = max(n, MIN_LABELS)
        if big_n > 0 and start < n + big_n:
            m = np.arange(start - n, big_n, dtype=np.float64)
            variance = self._ppi(m)
            half = _t_half(
                variance + self.raters.variance, _with_raters(variance, n + m - 1, self.raters), self.confidence
            )
            ok = np.nonzero(half <= half_width)[0]
            if ok.size:
                return int(n + m[ok[0]])
        every = float(n + big_n)
        return int(every) if float(self._human(np.array([every]))[0]) <= half_width else None


def labels_for_half_width(half_width: float, *, sd: float = 0.5, confidence: float = 0.95) -> int:
    """Human labels for a human-only interval of ±``half_width`` with no label yet: the fewest n with
    t₍n−1₎·sd/√n ≤ ``half_width`` (Student's t); ``sd=0.5`` is the worst case of a pass rate (±0.1 needs 99, ±0.05
    needs 387)."""
    if half_width <= 0:
        raise ValueError(f"half_width must be > 0, got {half_width}")
    n = max(2, math.ceil((_z(confidence) * sd / half_width) ** 2))  # the normal answer, a lower bound
    while t_quantile(two_sided(confidence), n - 1) * sd / math.sqrt(n) > half_width:
        n += 1
    return n


def _stratum_state(j: np.ndarray, h: np.ndarray, prior_variance: float) -> list[tuple[float, np.ndarray]]:
    """Each judge-score stratum's residual variance y − f, shrunk toward the pooled one (``prior_variance`` with no
    labels at all): (Σ(r − r̄)² + pooled) / max(1, n_b), and its unlabelled scored rows."""
    scored = ~np.isnan(j)
    labels = np.full(j.size, -1)
    labels[scored] = _strata(j[scored])
    labeled = scored & ~np.isnan(h)
    resid = h - j
    pooled = float(np.var(resid[labeled])) if np.count_nonzero(labeled) > 1 else prior_variance
    out = []
    for b in np.unique(labels[scored]):
        members = np.nonzero(labels == b)[0]
        done = members[labeled[members]]
        ss = float(((resid[done] - resid[done].mean()) ** 2).sum()) if done.size else 0.0
        out.append(((ss + pooled) / max(1, done.size), members[~labeled[members]]))
    return out


def _strata(scores: np.ndarray) -> np.ndarray:
    """Stratum index of each score: its distinct value, or its decile when there are more than 10 values."""
    values = np.unique(scores)
    if values.size <= 10:
        return np.searchsorted(values, scores)
    edges = np.unique(np.quantile(scores, np.linspace(0.1, 0.9, 9)))
    return np.searchsorted(edges, scores, side="right")


# -- the queue's own design: an order whose every prefix is a probability sample, and the IPW estimator ----------

QUEUE_FLOOR = 0.2  # every candidate row's size measure is at least this share of the candidates' mean one
QUEUE_SEED = 24  # the queue's default seed: the same run and seed give the same queue
UNIFORM_NOTE = "labels with no inclusion probability: treated as a uniform sample"
WEIGHTED_NOTE = "labels weighted by 1/(the queue's inclusion probability)"


@dataclass(frozen=True)
class QueueDraw:
    """One row of the queue's order: its index, its place (1 = label first), its uniform draw ``u`` and its share
    p = size / Σ size of its judge's candidates' size measure (its key is u / p), the key of the row after it in
    the order (``next_key``; inf: none), its inclusion probability when the queue it was cut from is labelled
    (``probability``), the design and why it was favoured."""

    index: int
    place: int
    u: float
    share: float
    next_key: float
    probability: float
    design: str
    reason: str

    @property
    def key(self) -> float:
        return self.u / self.share


def prefix_probabilities(share: Any, threshold: float) -> np.ndarray:
    """The inclusion probability of each row of a labelled prefix of the queue's order: π_i = min(1, p_i·t), t the
    key of the first row not labelled (inf: every candidate labelled, π = 1). Priority sampling (Duffield, Lund &
    Thorup, *J. ACM* 2007; the order is Ohlsson's sequential Poisson sampling, 1998): given every other row's key, a
    row is in the first n exactly when u_i < p_i·τ_i, τ_i the n-th smallest of the other keys — and then τ_i = t —
    so Σ y_i/π_i over the prefix is unbiased for Σ y, and the weighted rows are uncorrelated: the Poisson-sampling
    variance estimator applies to every prefix, whatever its length."""
    p = np.asarray(share, dtype=np.float64)
    return np.ones_like(p) if math.isinf(threshold) else np.minimum(1.0, p * threshold)


def labelled_prefix(place: Any) -> int:
    """n, the length of the longest run 1, 2, …, n in the queue places of the labelled rows (0: place 1 is not
    labelled): the prefix that is a probability sample. A label at a later place follows a gap."""
    seen = np.unique(np.asarray(place, dtype=np.int64))
    run = np.nonzero(seen != np.arange(1, seen.size + 1))[0]
    return int(run[0]) if run.size else int(seen.size)


def queue_priority(judge: Any, human: Any, *, spread: Any = None, prior_variance: float = 0.25) -> np.ndarray:
    """Each unlabelled scored row's priority (NaN: labelled or unscored): σ̃_b, the shrunk residual sd of its
    judge-score stratum (``_strata``; Neyman allocation puts labels in proportion to w_b·σ_b), times (1 + spread), so
    rows whose judges disagree count double."""
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(human, dtype=np.float64).ravel()
    s = np.zeros_like(j) if spread is None else np.nan_to_num(np.asarray(spread, dtype=np.float64).ravel())
    out = np.full(j.size, np.nan)
    for variance, rows in _stratum_state(j, h, prior_variance):
        out[rows] = math.sqrt(variance) * (1.0 + (s[rows] > 0))
    return out


def queue_order(
    judge: Any, human: Any, *, spread: Any = None, seed: int = QUEUE_SEED, audit: bool = False
) -> list[QueueDraw]:
    """The unlabelled scored rows in the queue's order: row i's key is u_i / p_i, u_i uniform on (0, 1)
    (``numpy.random.default_rng(seed)``, one per row), p_i its share of the size measure — ``queue_priority``
    floored at ``QUEUE_FLOOR`` × the candidates' mean (``audit``: 1 for every row, a uniform sample) — smallest key
    first (``probability`` 1: every row). Any prefix is a probability sample (``queue_merge``)."""
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(human, dtype=np.float64).ravel()
    u = np.random.default_rng(seed).random(j.size)
    x = np.where(~np.isnan(j) & np.isnan(h), 1.0, np.nan) if audit else queue_priority(j, h, spread=spread)
    live = np.nonzero(~np.isnan(x))[0]
    if not live.size:
        return []
    x = np.maximum(x[live], QUEUE_FLOOR * float(x[live].mean()))
    share = x / x.sum()
    order = np.lexsort((live, u[live] / share))
    keys = np.append((u[live] / share)[order], math.inf)
    s = np.zeros_like(j) if spread is None else np.nan_to_num(np.asarray(spread, dtype=np.float64).ravel())
    design = "uniform audit" if audit else "priority (judge-score strata, disagreement)"
    out = []
    for place, k in enumerate(order, 1):
        i = int(live[k])
        why = (
            "uniform audit" if audit else f"judges disagree (spread {s[i]:g})" if s[i] > 0 else f"judge score {j[i]:g}"
        )
        out.append(QueueDraw(i, place, float(u[i]), float(share[k]), float(keys[place]), 1.0, design, why))
    return out


def queue_merge(orders: Sequence[Sequence[QueueDraw]], size: int) -> list[tuple[int, QueueDraw]]:
    """The first ``size`` lines of one queue made of several judges' orders (``queue_order``), as (judge's position,
    draw): merged by key — the keys share one scale (about t rows of each order have a key below t), so the first n
    lines hold about n / judges of each — each draw's ``place`` its line (1 = first), ``next_key`` the key of the
    line after it (inf: none), ``probability`` its π when the first ``size`` lines are labelled. A prefix of the
    merged order is a prefix of the keys of all the rows together, so ``prefix_probabilities`` with the key of the
    first line not labelled holds for every judge's rows."""
    merged = sorted(((d.key, k, d.place, d) for k, order in enumerate(orders) for d in order), key=lambda t: t[:3])
    keys = [t[0] for t in merged] + [math.inf]
    size = max(0, min(size, len(merged)))
    out = []
    for line, (_, k, _, d) in enumerate(merged[:size], 1):
        pi = float(prefix_probabilities(d.share, keys[size]))
        out.append((k, replace(d, place=line, next_key=keys[line], probability=pi)))
    return out


def queue_sample(
    judge: Any, human: Any, *, size: float, spread: Any = None, seed: int = QUEUE_SEED, audit: bool = False
) -> list[QueueDraw]:
    """The first ``size`` rows (rounded) of ``queue_order``, each with its π in that prefix: what labelling the
    first ``size`` lines of a one-judge queue gives."""
    order = queue_order(judge, human, spread=spread, seed=seed, audit=audit)
    return [d for _, d in queue_merge([order], round(size))]


def _ipw_tuned_lambda(y: np.ndarray, f: np.ndarray, pi: np.ndarray, f_all: np.ndarray) -> float:
    """The λ minimising the weighted estimate's variance λ²·s²(f)/N + (1/N²)·Σ c_i·(y_i − λf_i)², c = (1 − π)/π²:
    λ = Σ c·f·y / (N·s²(f) + Σ c·f²) over the labelled rows (y, f, π) and the scored rows ``f_all`` (N of them),
    clipped to [0, 1] — under inverse-probability weights a label's error counts 1/π² times, so λ leans to 1 where
    the judge is close to the humans."""
    c = (1 - pi) / pi**2
    denominator = f_all.size * _var1(f_all) + float((c * f * f).sum())
    if y.size < 2 or denominator <= 0:
        return 0.0
    return float(np.clip(float((c * f * y).sum()) / denominator, 0.0, 1.0))


def _ipw_lambdas(f_all: np.ndarray, lab: np.ndarray, y_all: np.ndarray, pi_all: np.ndarray) -> tuple[np.ndarray, float]:
    """Each scored row's cross-fitted λ under the queue's design: every scored row dealt into the folds by its
    position (``crossfit_folds``, blind to which rows were drawn, so a row's λ is independent of its own draw), λ_k
    ``_ipw_tuned_lambda`` on the rows outside fold k; and the labelled rows' mean λ."""
    folds = crossfit_folds(f_all.size, int(np.count_nonzero(lab)))
    lams = np.zeros(int(folds.max(initial=0)) + 1)
    for k in range(lams.size):
        train = folds != k
        used = lab & train
        lams[k] = _ipw_tuned_lambda(y_all[used], f_all[used], pi_all[used], f_all[train])
    lam = lams[folds]
    return lam, float(lam[lab].mean()) if lab.any() else 0.0


def ipw_ppi_mean(
    judge: Any,
    human: Any,
    probability: Any,
    *,
    lam: float | None = 1.0,
    confidence: float = 0.95,
    scale: Scale | None = None,
    raters: RaterSpread = NO_RATERS,
) -> Estimate:
    """PPI under the queue's own design (active statistical inference, Zrnic & Candès, ICML 2024, arXiv:2403.03208):
    over the N scored rows, θ̂ = λ·mean(f) + (1/N)·Σ_labelled (y_i − λf_i)/π_i — unbiased for the humans' mean for
    any fixed λ when row i was labelled with probability π_i > 0 (Poisson sampling, or a prefix of the queue's
    order: ``prefix_probabilities``). Variance: λ²·s²(f)/N (the judge's mean) + (1/N²)·Σ_labelled (1 − π_i)/π_i² ·
    (y_i − λf_i)² (Horvitz–Thompson's unbiased estimator under either design; on a scale plus ``PSEUDO_ROWS``
    pseudo-rows over the scale × scale grid, each of weight mean(1/π)² with no (1 − π): agreeing labels, or labels
    drawn with π = 1, keep a width) + the ``raters``' variance; t interval
    (n − 1 df, Satterthwaite's with the raters), clipped to the scale (``clipped`` says so). ``judge``,
    ``human`` (NaN: not labelled), ``probability`` (π of each labelled row) are aligned over all rows; unscored rows
    (NaN judge) are left out. Fewer than ``MIN_LABELS`` labels: the point estimate, no interval.

    ``lam=None``: PPI++, λ tuned for this estimator's variance (``_ipw_tuned_lambda``) and cross-fitted
    (``_ipw_lambdas``): θ̂ = (1/N)·Σ_all λ_k(i)·f_i + (1/N)·Σ_labelled
    (y_i − λ_k(i)·f_i)/π_i, each row's λ tuned on the other folds — unbiased, since a row's λ does not depend on its
    own draw or label; the variance's first term is then Σ_k (N_k/N)·λ_k²·s²(f)/N (``_per_fold``)."""
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(human, dtype=np.float64).ravel()
    pi = np.asarray(probability, dtype=np.float64).ravel()
    scored = ~np.isnan(j)
    lab = scored & ~np.isnan(h)
    f_all, y, f, p = j[scored], h[lab], j[lab], pi[lab]
    if np.isnan(p).any() or (p <= 0).any() or (p > 1).any():
        raise ValueError("every labelled row needs an inclusion probability in (0, 1]")
    v = _scale_values(scale, y, f_all)
    big_n, n = f_all.size, y.size
    if lam is None:
        lam_all, lam_bar = _ipw_lambdas(f_all, lab[scored], h[scored], pi[scored])
        method = f"PPI++, inverse-probability weighted (λ={lam_bar:.3f}, cross-fitted)"
    else:
        lam_all = np.full(big_n, float(lam))
        method = f"PPI, inverse-probability weighted (λ={lam:.3g})"
    lam_y = lam_all[lab[scored]]
    r = y - lam_y * f
    mean = float((lam_all * f_all).mean() + (r / p).sum() / big_n)
    if n < MIN_LABELS:
        return _too_few(method, mean, (n, big_n - n), confidence)
    s2_f = _var1(f_all)
    errors = float(((1 - p) / p**2 * r**2).sum())
    if v is not None:  # the pseudo-rows, each of the labels' mean weight 1/π: agreeing labels or π = 1 keep a width
        gy, gf, gw = _grid(v)
        errors += float((1 / p).mean()) ** 2 * _per_fold(lam_y, lambda lam_: float((gw * (gy - lam_ * gf) ** 2).sum()))
    variance = _per_fold(lam_all, lambda lam_: lam_**2 * s2_f) / big_n + errors / big_n**2
    counts = (n, big_n - n)
    return _t_estimate(
        method, mean, variance, counts, confidence, v, raters, n=n, design=", Horvitz–Thompson", pad=False
    )
