"""The few distribution functions the trust statistics need.

``t_quantile(p, df)`` is Student's t quantile from ``scipy.special.stdtrit`` (imported when first called: scipy is
a run-time dependency for it, a well-kept library rather than a hand-written inverse incomplete beta). The rest is
pure ``math``: ``normal_sf(z)`` = P(Z > z) = erfc(z/√2)/2; ``normal_quantile(p)`` is ``statistics.NormalDist``'s
inverse CDF; ``binom_cdf(k, n)`` = P(X ≤ k) for X ~ Binomial(n, 1/2)
(McNemar's exact test): summed exactly in integers up to n = 1000, beyond that in log space (log C(n, i) as a
cumulative sum of log((n − i + 1)/i), relative error below 1e-7) so a million discordant pairs stay fast.
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
    if n <= _EXACT_UP_TO:
        return math.comb(n, k) / 2**n
    return math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) - n * math.log(2.0))


def binom_cdf(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if n <= _EXACT_UP_TO:
        return sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    i = np.arange(1, k + 1, dtype=np.float64)
    log_pmf = np.concatenate([[0.0], np.cumsum(np.log(n - i + 1) - np.log(i))]) - n * math.log(2.0)
    top = float(log_pmf.max())
    return min(1.0, math.exp(top) * float(np.exp(log_pmf - top).sum()))


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
