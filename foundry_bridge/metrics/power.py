"""Power of the gate's paired test: the smallest effect it detects at the current n, the queries a given Δ needs.

The gate tests paired differences d = candidate − baseline (sign-flip for continuous metrics, Wilcoxon for ordinal,
McNemar for pass/fail; ``metrics.significance``). Their power is planned with the paired t test, the test they
approximate at moderate n: with standardized effect d_z = Δ / s (s: the sd of the paired differences, n − 1
divisor) and df = n − 1, the two-sided power at level α is

    P(T' > t₁₋α/₂) + P(T' < −t₁₋α/₂),   T' ~ noncentral t(df, nc = d_z·√n)   (``scipy.stats.nct``),

the same formula as statsmodels' ``TTestPower``. ``min_detectable_dz`` solves power(d_z) = target for d_z at the
current n; ``queries_needed`` solves it for the smallest whole n (at least 2). A raw Δ is d_z·s. Quirks: for a
pass/fail metric s is the sd of the −1/0/+1 differences, so the numbers are the t approximation to McNemar's exact
test; with s = 0 (every difference equal) no effect size is defined and both return ``None``.
"""

from __future__ import annotations

import math

from foundry_bridge.metrics._dist import t_quantile

__all__ = ["POWER", "min_detectable_delta", "min_detectable_dz", "paired_power", "queries_needed"]

POWER = 0.80
_MAX_N = 10_000_000


def paired_power(d_z: float, n: int, alpha: float) -> float:
    """Two-sided power of the paired t test at level ``alpha`` with ``n`` pairs and standardized effect ``d_z``."""
    if n < 2:
        raise ValueError(f"power needs at least 2 pairs, got {n}")
    from scipy.stats import nct

    df = n - 1
    crit = t_quantile(1.0 - alpha / 2.0, df)
    nc = abs(d_z) * math.sqrt(n)
    return float(nct.sf(crit, df, nc) + nct.cdf(-crit, df, nc))


def min_detectable_dz(n: int, alpha: float, power: float = POWER) -> float | None:
    """The d_z with ``paired_power(d_z, n, alpha)`` = ``power`` (bisection to 1e-10); ``None`` below 2 pairs."""
    if n < 2:
        return None
    lo, hi = 0.0, 1.0
    while paired_power(hi, n, alpha) < power:
        hi *= 2.0
    while hi - lo > 1e-10:
        mid = (lo + hi) / 2.0
        if paired_power(mid, n, alpha) < power:
            lo = mid
        else:
            hi = mid
    return hi


def min_detectable_delta(n: int, sd: float | None, alpha: float, power: float = POWER) -> float | None:
    """The smallest |Δ| detected with ``power`` at ``n`` pairs: ``min_detectable_dz`` × ``sd``; ``None`` when the
    sd is unknown or 0."""
    dz = min_detectable_dz(n, alpha, power)
    if dz is None or sd is None or not sd > 0 or math.isnan(sd):
        return None
    return dz * sd


def queries_needed(delta: float, sd: float | None, alpha: float, power: float = POWER) -> int | None:
    """The fewest paired queries (≥ 2) whose test detects |``delta``| with ``power``: the first n with
    ``paired_power(delta / sd, n, alpha)`` ≥ ``power`` (doubling, then bisection on n); ``None`` when ``delta``
    or ``sd`` is 0 or unknown."""
    if sd is None or not sd > 0 or math.isnan(sd) or delta == 0 or math.isnan(delta):
        return None
    d_z = abs(delta) / sd
    hi = 2
    while paired_power(d_z, hi, alpha) < power:
        if hi >= _MAX_N:
            return None
        hi *= 2
    lo = max(2, hi // 2)
    if paired_power(d_z, lo, alpha) >= power:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if paired_power(d_z, mid, alpha) >= power:
            hi = mid
        else:
            lo = mid
    return hi
