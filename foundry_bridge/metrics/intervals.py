"""Confidence intervals for the sample sizes the trust section and ``compare`` meet: from a handful of rows up.

The large-sample normal interval (mean ± z·sd/√n, sd with the n divisor) is too narrow at small n — ≈ 18 %
narrower than Student's at n = 10 — and collapses to zero width when a few labels happen to agree. Instead:

- ``wilson(successes, n)``: the Wilson score interval of a proportion (Wilson, *JASA* 1927; recommended for small n
  by Brown, Cai & DasGupta, *Statistical Science* 2001): centre (x + z²/2)/(n + z²), half-width
  z/(n + z²)·√(x(n − x)/n + z²/4). Inside [0, 1] by construction and never of zero width; ``successes`` may be
  fractional (a row's pass verdict averaged over raters).
- ``mean_t_interval(values)``: mean ± t₍n−1₎·s/√n, s with the n − 1 divisor (Student's t; n ≥ 2).
- ``t_interval(centre, variance, df)``: centre ± t₍df₎·√variance, the building block of both.
- ``padded_variance(values, pseudo_values, pseudo_weights)``: the n − 1-divisor variance of the values with a few
  weighted pseudo-rows added, Σw(v − v̄_w)² / (Σw − 1). The trust statistics add ``PSEUDO_ROWS`` = 2 rows spread
  evenly over the scale (see ``metrics.ppi``): on pass/fail data that is Agresti & Min's ½ in each cell of the 2×2
  table (*Statistics in Medicine* 2005, "Wald+2" for matched proportions), so a few labels that all agree still
  give an interval of honest width, and the pad's weight vanishes as 1/n.
- ``clip(low, high, lo, hi)``: an interval cut to its scale, and whether it had to be (the report says so).
- ``satterthwaite(parts)``: the degrees of freedom of a sum of independent variance estimates V = Σ Vᵢ, each on
  dfᵢ: (Σ Vᵢ)² / Σ (Vᵢ² / dfᵢ) (Satterthwaite, *Biometrics Bulletin* 1946) — used when the raters' variance (on
  k − 1 df) is added to the rows' (on n − 1).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._dist import normal_quantile, t_quantile

__all__ = [
    "PSEUDO_ROWS",
    "clip",
    "mean_t_interval",
    "padded_variance",
    "satterthwaite",
    "t_interval",
    "two_sided",
    "wilson",
]

PSEUDO_ROWS = 2.0  # the pad's total weight: Agresti & Min's ½ per cell of a 2×2 table


def two_sided(confidence: float) -> float:
    """The upper tail point 0.5 + confidence/2 of a two-sided interval (0.975 at 95 %)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return 0.5 + confidence / 2


def wilson(successes: float, n: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n`` (NaN, NaN when n = 0)."""
    if n <= 0:
        return float("nan"), float("nan")
    z = normal_quantile(two_sided(confidence))
    z2 = z * z
    x = min(max(float(successes), 0.0), float(n))
    centre = (x + z2 / 2) / (n + z2)
    half = z / (n + z2) * math.sqrt(x * (n - x) / n + z2 / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def t_interval(centre: float, variance: float, df: float, *, confidence: float = 0.95) -> tuple[float, float]:
    """centre ± t₍df₎·√variance (``variance`` of the estimate, not of one row)."""
    half = t_quantile(two_sided(confidence), df) * math.sqrt(max(variance, 0.0))
    return centre - half, centre + half


def mean_t_interval(values: Any, *, confidence: float = 0.95) -> tuple[float, float]:
    """Student's interval of the mean of ``values``: mean ± t₍n−1₎·s/√n, s with the n − 1 divisor (NaN, NaN when
    n < 2; zero width only when every value is the same)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size < 2:
        return float("nan"), float("nan")
    return t_interval(float(v.mean()), float(v.var(ddof=1)) / v.size, v.size - 1, confidence=confidence)


def padded_variance(values: np.ndarray, pseudo_values: np.ndarray, pseudo_weights: np.ndarray) -> float:
    """Σw(v − v̄_w)² / (Σw − 1) over ``values`` (weight 1 each) and the weighted pseudo-rows."""
    v = np.concatenate([values, pseudo_values])
    w = np.concatenate([np.ones(values.size), pseudo_weights])
    total = float(w.sum())
    mean = float((w * v).sum()) / total
    return float((w * (v - mean) ** 2).sum()) / (total - 1)


def clip(low: float, high: float, lo: float, hi: float) -> tuple[float, float, bool]:
    """[low, high] cut to [lo, hi], and whether a bound was cut."""
    cut = low < lo or high > hi
    return max(low, lo), min(high, hi), cut


def satterthwaite(parts: list[tuple[float, float]]) -> float:
    """(Σ Vᵢ)² / Σ (Vᵢ² / dfᵢ) over (Vᵢ, dfᵢ) with Vᵢ > 0 (inf when no part has variance: the normal limit)."""
    live = [(v, df) for v, df in parts if v > 0 and df > 0]
    if not live:
        return math.inf
    return sum(v for v, _ in live) ** 2 / sum(v * v / df for v, df in live)
