"""Prediction-powered inference of a judge metric's mean (or pass rate) from a few human labels.

Notation: ``y`` the human verdicts on the n labelled rows, ``f`` the judge's scores on the same rows, ``f_u`` the
judge's scores on the N rows nobody labelled (the unlabelled rows only: a labelled row is not counted twice).

- judge-only mean: mean(f ∪ f_u), with its CLT interval — it measures the judge, bias included.
- human-only mean: mean(y) ± z · sd(y) / √n (the classical estimate; ignores the judge).
- PPI (Angelopoulos et al., *Science* 2023): θ = mean(f_u) − mean(f − y), the judge's mean corrected by the
  rectifier measured on the labelled rows; variance sd(f_u)²/N + sd(y − f)²/n.
- PPI++ (Angelopoulos, Duchi, Zrnic, arXiv 2311.01453): θ_λ = mean(y) + λ·(mean(f_u) − mean(f)), variance
  λ²·sd(f_u)²/N + sd(y − λf)²/n, with the power-tuned λ = Cov(y, f) / ((1 + n/N) · Var(f ∪ f_u)) clipped to
  [0, 1] (λ = 0 is the human-only mean, λ = 1 plain PPI): never wider than either, asymptotically.

Standard deviations are population (ddof 0) and Var(f ∪ f_u) is ddof 1, as in the ``ppi-python`` package; the
intervals are normal (z) intervals. ``labels_to_halve`` solves for the fewest more labels (taken from the
unlabelled rows, so N shrinks as n grows) after which the PPI++ interval is half as wide, λ re-tuned for each
count (the variances and covariance held at today's estimates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._dist import normal_quantile

__all__ = [
    "Estimate",
    "MeanEstimates",
    "QueuePick",
    "estimate_mean",
    "labelling_priority",
    "labels_for_half_width",
    "ppi_mean",
    "tuned_lambda",
]


@dataclass(frozen=True)
class Estimate:
    """A mean with its interval: ``mean`` in [``low``, ``high``] at ``confidence``, and what it was computed from."""

    method: str
    mean: float
    low: float
    high: float
    n_labeled: int
    n_unlabeled: int
    confidence: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return normal_quantile(0.5 + confidence / 2)


def _arrays(y: Any, f: Any, f_u: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    yy, ff, uu = (np.asarray(a, dtype=np.float64).ravel() for a in (y, f, f_u))
    if yy.shape != ff.shape:
        raise ValueError(f"y and f must have one length (the labelled rows), got {yy.size} and {ff.size}")
    if np.isnan(yy).any() or np.isnan(ff).any() or np.isnan(uu).any():
        raise ValueError("NaN in the verdicts: leave unscored rows out before estimating")
    return yy, ff, uu


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


def ppi_mean(y: Any, f: Any, f_u: Any, *, lam: float | None = None, confidence: float = 0.95) -> Estimate:
    """The prediction-powered mean and interval: ``lam=None`` tunes λ (PPI++), ``lam=1`` is plain PPI."""
    yy, ff, uu = _arrays(y, f, f_u)
    n, big_n = yy.size, uu.size
    if n == 0 or big_n == 0:
        raise ValueError(f"PPI needs labelled and unlabelled rows, got n={n}, N={big_n}")
    lam_ = tuned_lambda(yy, ff, uu) if lam is None else float(lam)
    mean = float(lam_ * uu.mean() + (yy - lam_ * ff).mean())
    sd = math.sqrt(float(np.var(lam_ * uu)) / big_n + float(np.var(yy - lam_ * ff)) / n)
    z = _z(confidence)
    method = f"PPI++ (λ={lam_:.3f})" if lam is None else f"PPI (λ={lam_:g})"
    return Estimate(method, mean, mean - z * sd, mean + z * sd, n, big_n, confidence)


def _clt(values: np.ndarray, method: str, n_labeled: int, n_unlabeled: int, confidence: float) -> Estimate:
    if values.size == 0:
        nan = float("nan")
        return Estimate(method, nan, nan, nan, n_labeled, n_unlabeled, confidence)
    mean = float(values.mean())
    half = _z(confidence) * float(values.std()) / math.sqrt(values.size)
    return Estimate(method, mean, mean - half, mean + half, n_labeled, n_unlabeled, confidence)


@dataclass(frozen=True)
class MeanEstimates:
    """One judge metric's mean four ways, λ, and the labels that would halve the intervals.

    ``labels_to_halve``: more human labels after which the PPI++ interval is half as wide (None: not even labelling
    every row would, or fewer than two labels yet);
    ``human_labels_to_halve``: the same for the human-only interval (3·n: width ∝ 1/√n).
    """

    judge_only: Estimate
    human_only: Estimate
    ppi: Estimate | None
    ppi_plus: Estimate | None
    lam: float | None
    labels_to_halve: int | None
    human_labels_to_halve: int | None


def estimate_mean(judge: Any, human: Any, *, confidence: float = 0.95) -> MeanEstimates:
    """Every estimate of the mean from aligned arrays over all rows: ``judge`` (NaN = unscored, left out) and
    ``human`` (NaN = not labelled). With no labelled row only the judge-only mean is set."""
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(human, dtype=np.float64).ravel()
    if j.shape != h.shape:
        raise ValueError(f"judge and human must have one length, got {j.size} and {h.size}")
    scored = ~np.isnan(j)
    labeled = scored & ~np.isnan(h)
    y, f, f_u = h[labeled], j[labeled], j[scored & np.isnan(h)]
    n, big_n = y.size, f_u.size
    judge_only = _clt(j[scored], "judge only", n, big_n, confidence)
    human_only = _clt(y, "human only", n, big_n, confidence)
    if n < 2 or big_n == 0:
        return MeanEstimates(judge_only, human_only, None, None, None, None, 3 * n if n else None)
    lam = tuned_lambda(y, f, f_u)
    plus = ppi_mean(y, f, f_u, confidence=confidence)
    halve = _labels_to_halve(y, f, f_u, lam)
    plain = ppi_mean(y, f, f_u, lam=1.0, confidence=confidence)
    return MeanEstimates(judge_only, human_only, plain, plus, lam, halve, 3 * n)


def _labels_to_halve(y: np.ndarray, f: np.ndarray, f_u: np.ndarray, lam: float) -> int | None:
    """The fewest m (moved from the unlabelled rows) whose PPI++ variance is a quarter of today's, λ re-tuned at each
    m: V(m) = λ²·s_f²/(N − m) + (s_y² − 2λ·c + λ²·s_f²)/(n + m) at λ = c / (s_f²·(1 + (n + m)/(N − m))) clipped to
    [0, 1] (c = Cov(y, f), s_f² = Var(f) over every row, s_y² = Var(y)): λ = 0 is the human-only interval."""
    n, big_n = y.size, f_u.size
    target = (float(np.var(lam * f_u)) / big_n + float(np.var(y - lam * f)) / n) / 4
    s_f = float(np.var(np.concatenate([f, f_u])))
    s_y = float(np.var(y))
    c = float(np.mean((y - y.mean()) * (f - f.mean())))
    m = np.arange(1, big_n, dtype=np.float64)
    lab, unl = n + m, big_n - m
    lam_m = np.clip(c / (s_f * (1 + lab / unl)), 0.0, 1.0) if s_f > 0 else np.zeros_like(m)
    variance = lam_m**2 * s_f / unl + (s_y - 2 * lam_m * c + lam_m**2 * s_f) / lab
    ok = np.nonzero(variance <= target)[0]
    return int(m[ok[0]]) if ok.size else None


def labels_for_half_width(half_width: float, *, sd: float = 0.5, confidence: float = 0.95) -> int:
    """Human labels for a human-only interval of ±``half_width``: ⌈(z·sd / half_width)²⌉; ``sd=0.5`` is the worst
    case of a pass rate (what to tell a team with no labels yet: ±0.1 needs 97)."""
    if half_width <= 0:
        raise ValueError(f"half_width must be > 0, got {half_width}")
    return math.ceil((_z(confidence) * sd / half_width) ** 2)


@dataclass(frozen=True)
class QueuePick:
    """One row to label next: its index, why, and its rank (1 = first)."""

    index: int
    rank: int
    reason: str
    spread: float


def labelling_priority(
    judge: Any, human: Any, *, spread: Any = None, limit: int = 50, prior_variance: float = 0.25
) -> list[QueuePick]:
    """The unlabelled rows whose label would most narrow the PPI interval, best first.

    Rows are stratified by the judge's score (its distinct values; a judge with more than 10 values in deciles).
    The rectifier's variance is Σ_b w_b² σ_b² / n_b, so one more label in stratum b removes about
    w_b² σ̃_b² / ((n_b + 1)(n_b + 2)) (w_b the stratum's share of the rows, n_b its labels, σ̃_b² the residual
    variance y − f there, shrunk toward the pooled one — ``prior_variance`` with no labels at all). The queue is
    filled greedily; inside a stratum rows whose judges disagree (``spread``: e.g. max − min across judges or
    repeats, NaN = unknown) come first, then by index. A queue row's ``reason`` names which applied.
    """
    j = np.asarray(judge, dtype=np.float64).ravel()
    h = np.asarray(human, dtype=np.float64).ravel()
    s = np.zeros_like(j) if spread is None else np.nan_to_num(np.asarray(spread, dtype=np.float64).ravel())
    strata = _stratum_state(j, h, s, prior_variance)
    picks: list[QueuePick] = []
    while len(picks) < limit:
        live = [st for st in strata if st.todo]
        if not live:
            break
        best = max(live, key=lambda st: _gain(st.share, st.variance, st.labels))  # first of equals: lowest score
        row = best.todo.pop()
        best.labels += 1
        why = f"judges disagree (spread {s[row]:g})" if s[row] > 0 else f"narrows the interval (judge score {j[row]:g})"
        picks.append(QueuePick(row, len(picks) + 1, why, float(s[row])))
    return picks


@dataclass
class _Stratum:
    share: float  # w_b: the stratum's share of the scored rows
    variance: float  # σ̃_b²
    labels: int  # n_b, grown as the queue fills
    todo: list[int]  # unlabelled rows, the next one last


def _stratum_state(j: np.ndarray, h: np.ndarray, s: np.ndarray, prior_variance: float) -> list[_Stratum]:
    """Each judge-score stratum's share, shrunk residual variance, label count and queue (next row last)."""
    scored = ~np.isnan(j)
    labels = np.full(j.size, -1)
    labels[scored] = _strata(j[scored])
    labeled = scored & ~np.isnan(h)
    resid = h - j
    pooled = float(np.var(resid[labeled])) if np.count_nonzero(labeled) > 1 else prior_variance
    total = int(np.count_nonzero(scored)) or 1
    out: list[_Stratum] = []
    for b in np.unique(labels[scored]):
        members = np.nonzero(labels == b)[0]
        done = members[labeled[members]]
        ss = float(((resid[done] - resid[done].mean()) ** 2).sum()) if done.size else 0.0
        todo = members[~labeled[members]]
        order = todo[np.lexsort((todo, -s[todo]))][::-1]  # spread descending, then index ascending, popped from the end
        out.append(_Stratum(members.size / total, (ss + pooled) / max(1, done.size), int(done.size), order.tolist()))
    return out


def _gain(share: float, variance: float, n_b: int) -> float:
    return share**2 * variance / ((n_b + 1) * (n_b + 2))


def _strata(scores: np.ndarray) -> np.ndarray:
    """Stratum index of each score: its distinct value, or its decile when there are more than 10 values."""
    values = np.unique(scores)
    if values.size <= 10:
        return np.searchsorted(values, scores)
    edges = np.unique(np.quantile(scores, np.linspace(0.1, 0.9, 9)))
    return np.searchsorted(edges, scores, side="right")
