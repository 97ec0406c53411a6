"""Confidence intervals for the sample sizes the trust section and ``compare`` meet: from a handful of rows up.

The normal interval is too narrow at small n and collapses when a few labels agree; instead ``wilson`` (a
proportion, possibly fractional), ``mean_t_interval`` and ``t_interval`` (Student's t), ``padded_variance`` (the
n − 1-divisor variance with weighted pseudo-rows: Agresti & Min's pad on pass/fail data), and ``clip`` (to the
scale, and whether it had to be). docs/trust.md states the formulas.
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
