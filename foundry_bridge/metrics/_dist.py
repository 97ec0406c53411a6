"""The few distribution functions the trust statistics need, in pure ``math`` (no scipy at run time).

``normal_sf(z)`` = P(Z > z) = erfc(z/√2)/2; ``normal_quantile(p)`` inverts the normal CDF by bisection on it
(to 1e-12, ample for interval bounds); ``t_quantile(p, df)`` is Student's t quantile: for df ≤ 100 the bisection of
the exact finite-series CDF of integer df (Abramowitz & Stegun 26.7.3–4, with θ = atan(t/√df)), above it the
Cornish–Fisher expansion in 1/df up to df⁻⁴ (A&S 26.7.5; error below 1e-9 there);
``binom_cdf(k, n)`` = P(X ≤ k) for X ~ Binomial(n, 1/2) (McNemar's exact test): summed exactly in
integers up to n = 1000, beyond that in log space (log C(n, i) as a cumulative sum of log((n − i + 1)/i), relative
error below 1e-7) so a million discordant pairs stay fast.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

__all__ = ["binom_cdf", "binom_pmf", "normal_quantile", "normal_sf", "t_quantile"]

_EXACT_UP_TO = 1000
_T_SERIES_UP_TO = 100


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


def _t_central(t: float, df: int) -> float:
    """P(|T| ≤ t) for t ≥ 0 and T ~ Student t with integer ``df`` (the finite series in cos θ, θ = atan(t/√df))."""
    theta = math.atan(t / math.sqrt(df))
    c2, s = math.cos(theta) ** 2, math.sin(theta)
    if df % 2 == 0:  # sin θ · (1 + ½cos²θ + (1·3)/(2·4)cos⁴θ + … up to cos^(df−2)θ)
        term = total = 1.0
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term = total = math.cos(theta)  # (2/π)(θ + sin θ (cos θ + (2/3)cos³θ + … up to cos^(df−2)θ))
    for j in range(1, (df - 1) // 2):
        term *= c2 * (2 * j) / (2 * j + 1)
        total += term
    return 2 / math.pi * (theta + s * total)


@lru_cache(maxsize=1024)
def t_quantile(p: float, df: int) -> float:
    """The t with P(T ≤ t) = p for Student's t with ``df`` ≥ 1 degrees of freedom, 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if df < 1:
        raise ValueError(f"df must be ≥ 1, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    if df > _T_SERIES_UP_TO:
        x = normal_quantile(p)
        x2 = x * x
        g1 = (x2 + 1) * x / 4
        g2 = ((5 * x2 + 16) * x2 + 3) * x / 96
        g3 = (((3 * x2 + 19) * x2 + 17) * x2 - 15) * x / 384
        g4 = ((((79 * x2 + 776) * x2 + 1482) * x2 - 1920) * x2 - 945) * x / 92160
        return x + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4
    target = 2 * p - 1
    lo, hi = 0.0, 1.0
    while _t_central(hi, df) < target:
        hi *= 2
    while hi - lo > 1e-12 * max(1.0, hi):
        mid = (lo + hi) / 2
        if _t_central(mid, df) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


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
