"""The few distribution functions the trust statistics need, in pure ``math`` (no scipy at run time).

``normal_sf(z)`` = P(Z > z) = erfc(z/√2)/2; ``normal_quantile(p)`` inverts the normal CDF by bisection on it
(to 1e-12, ample for interval bounds); ``binom_cdf(k, n)`` = P(X ≤ k) for X ~ Binomial(n, 1/2), summed exactly
in integers (McNemar's exact test; n in the thousands stays exact).
"""

from __future__ import annotations

import math

__all__ = ["binom_cdf", "binom_pmf", "normal_quantile", "normal_sf"]


def normal_sf(z: float) -> float:
    """P(Z > z) for a standard normal Z."""
    return 0.5 * math.erfc(z / math.sqrt(2.0))


def normal_quantile(p: float) -> float:
    """The z with P(Z ≤ z) = p, for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    lo, hi = -40.0, 40.0
    while hi - lo > 1e-12:
        mid = (lo + hi) / 2
        if 1.0 - normal_sf(mid) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def binom_pmf(k: int, n: int) -> float:
    """P(X = k) for X ~ Binomial(n, 1/2)."""
    return math.comb(n, k) / 2**n if 0 <= k <= n else 0.0


def binom_cdf(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Binomial(n, 1/2)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n
