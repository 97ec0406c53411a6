"""The few distribution functions the trust statistics need.

``t_quantile(p, df)`` (Student's t quantile) and ``binom_cdf(k, n)`` (P(X ≤ k) for X ~ Binomial(n, 1/2),
McNemar's exact test) are ``scipy.special``'s ``stdtrit`` and ``bdtr``, imported when first called (a well-kept
library rather than a hand-written incomplete beta). The rest is pure ``math``: ``normal_sf(z)`` = P(Z > z) =
erfc(z/√2)/2; ``normal_quantile(p)`` is ``statistics.NormalDist``'s inverse CDF; ``binom_pmf`` from log-gamma.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

__all__ = ["average_ranks", "binom_cdf", "binom_pmf", "normal_quantile", "normal_sf", "t_quantile"]

_EXACT_UP_TO = 1000


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    """The z with P(Z ≤ z) = p, for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    return NormalDist().inv_cdf(p)


def t_quantile(p: float, df: float) -> float:
    """The t with P(T ≤ t) = p for Student's T with ``df`` > 0 degrees of freedom (``scipy.special.stdtrit``)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df > 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    from scipy.special import stdtrit

    return float(stdtrit(df, p))


def binom_pmf(k: int, n: int) -> float:
    """P(X = k) for X ~ Binomial(n, 1/2)."""
    if not 0 <= k <= n:
        return 0.0
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0))


def binom_cdf(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2) (``scipy.special.bdtr``)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    from scipy.special import bdtr

    return float(bdtr(k, n, 0.5))


def average_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1-based ranks of ``values``, tied values sharing the mean of their ranks (``scipy.stats.rankdata``'s
    "average"), and the sizes of the tie groups in ascending order of value."""
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    sizes = np.diff(np.append(starts, values.size))
    ranks = np.empty(values.size)
    ranks[order] = np.repeat(starts + (sizes + 1) / 2.0, sizes)
    return ranks, sizes
