"""Comparison statistics a reviewer accepts: paired tests named in every result, effect sizes with intervals,
multiplicity control across metrics × candidates, and a "too few paired queries" verdict.

- McNemar (pass/fail): b = rows A passed and B failed, c = the reverse; exact two-sided p = min(1, 2·P(X ≤
  min(b, c))), X ~ Binomial(b + c, ½); mid-p subtracts P(X = min(b, c)) (Fagerland et al. 2013: closer to the
  nominal level, not conservative).
- Wilcoxon signed-rank (ordinal scores and metrics): zero differences dropped (Wilcoxon's method), average ranks
  for ties; the p-value as ``scipy.stats.wilcoxon``'s default: exact null distribution when there are no ties or
  zeros and n ≤ 50; with ties or zeros and at most 13 pairs, the exact distribution over all sign flips of the
  ranks; otherwise the normal approximation with tie correction and no continuity correction.
- effect sizes (Ihemelandu & Ekstrand, SIGIR'23: at large n every p is small, the size is what matters): the
  mean paired difference B − A with Student's interval ±t₍n−1₎·s/√n, s with the n − 1 divisor (for pass/fail the
  difference of pass rates, s² padded with ½ in each cell of the 2×2 table — Agresti & Min's "Wald+2" — and cut
  to [−1, 1]), the standardized d_z = mean / sd with the interval ±z·√(1/n + d_z²/(2n)), and for Wilcoxon the
  matched-pairs rank-biserial r = (W⁺ − W⁻) / (W⁺ + W⁻).
- multiplicity: Holm's step-down (family-wise error, the default) or Benjamini–Hochberg (false discovery rate)
  adjusted p-values over every (metric, candidate) tested; a comparison with fewer than ``min_n`` paired rows is
  not tested and not counted in the family (its verdict says so). The gate decides on the adjusted p.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from ._dist import binom_cdf, binom_pmf, normal_quantile, normal_sf
from .intervals import clip, padded_variance, t_interval

__all__ = [
    "DEFAULT_MIN_N",
    "Effect",
    "FamilyRow",
    "PairedTest",
    "adjust_pvalues",
    "apply_family",
    "compare_family",
    "mcnemar",
    "paired_effect",
    "paired_test",
    "wilcoxon_signed_rank",
]

DEFAULT_MIN_N = 10
Correction = Literal["holm", "bh"]


@dataclass(frozen=True)
class Effect:
    """B − A: the mean paired difference and d_z, each with its interval; rank-biserial r for Wilcoxon."""

    mean_diff: float
    low: float
    high: float
    d_z: float
    d_low: float
    d_high: float
    rank_biserial: float | None = None


@dataclass(frozen=True)
class PairedTest:
    """One paired comparison: the test used, rows paired, informative rows, statistic, p (None when not tested),
    effect, the adjusted p and decision once ``apply_family`` ran, and a verdict a reader can quote."""

    test: str
    n: int
    n_informative: int  # discordant pairs (McNemar) or non-zero differences (Wilcoxon)
    statistic: float
    p: float | None
    effect: Effect
    verdict: str
    p_adjusted: float | None = None
    correction: str | None = None
    significant: bool | None = None


_MATCHED_PAD = (np.array([0.0, 1.0, -1.0, 0.0]), np.full(4, 0.5))  # B − A in each cell of the 2×2 table, ½ each


def paired_effect(diffs: Any, *, confidence: float = 0.95, matched_proportions: bool = False) -> Effect:
    """The mean of ``diffs`` (B − A per row) with Student's interval mean ± t₍n−1₎·s/√n (s with the n − 1 divisor;
    NaN below two rows), and d_z = mean/sd (sd ddof 0) with ±z·√(1/n + d²/2n). ``matched_proportions`` (pass/fail
    differences in {−1, 0, 1}): s² padded with Agresti & Min's ½ in each cell of the 2×2 table (Statistics in
    Medicine 2005), so a table without discordant pairs still gets an interval of honest width, cut to [−1, 1].
    NaN when there are no rows; d_z is NaN when every difference is equal (sd 0)."""
    d = np.asarray(diffs, dtype=np.float64).ravel()
    n = d.size
    nan = float("nan")
    if n == 0:
        return Effect(nan, nan, nan, nan, nan, nan)
    mean, sd = float(d.mean()), float(d.std())
    low = high = nan
    if n >= 2:
        variance = padded_variance(d, *_MATCHED_PAD) if matched_proportions else float(d.var(ddof=1))
        low, high = t_interval(mean, variance / n, n - 1, confidence=confidence)
        if matched_proportions:
            low, high, _ = clip(low, high, -1.0, 1.0)
    if sd == 0:
        return Effect(mean, low, high, nan, nan, nan)
    z = normal_quantile(0.5 + confidence / 2)
    dz = mean / sd
    dz_half = z * math.sqrt(1 / n + dz * dz / (2 * n))
    return Effect(mean, low, high, dz, dz - dz_half, dz + dz_half)


def _too_few(n: int, min_n: int) -> str | None:
    return f"too few paired queries (n={n} < {min_n}): not tested" if n < min_n else None


def mcnemar(
    a_passed: Any, b_passed: Any, *, mid_p: bool = False, min_n: int = DEFAULT_MIN_N, confidence: float = 0.95
) -> PairedTest:
    """McNemar's exact (or mid-p) test of paired pass/fail verdicts; rows where either side is NaN are left out."""
    a = np.asarray(a_passed, dtype=np.float64).ravel()
    b = np.asarray(b_passed, dtype=np.float64).ravel()
    keep = ~(np.isnan(a) | np.isnan(b))
    pa, pb = a[keep] != 0, b[keep] != 0
    n = int(pa.size)
    worse, better = int(np.count_nonzero(pa & ~pb)), int(np.count_nonzero(~pa & pb))
    name = "McNemar mid-p" if mid_p else "McNemar exact"
    effect = paired_effect(pb.astype(float) - pa.astype(float), confidence=confidence, matched_proportions=True)
    refused = _too_few(n, min_n)
    if refused:
        return PairedTest(name, n, worse + better, float(min(worse, better)), None, effect, refused)
    k, m = min(worse, better), worse + better
    p = 1.0 if m == 0 else min(1.0, 2 * binom_cdf(k, m))
    if mid_p and m:
        p = min(1.0, 2 * binom_cdf(k, m) - binom_pmf(k, m))
    verdict = f"{name}: {better} rows pass only in B, {worse} only in A"
    return PairedTest(name, n, m, float(k), p, effect, verdict)


def _signed_ranks(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """Average ranks of |d| (zeros already removed), the tie-group sizes, and whether there are ties."""
    absd = np.abs(d)
    order = np.argsort(absd, kind="stable")
    sorted_abs = absd[order]
    starts = np.concatenate([[True], sorted_abs[1:] != sorted_abs[:-1]])
    group = np.cumsum(starts) - 1
    sizes = np.bincount(group)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    avg = first + (sizes + 1) / 2.0  # 1-based average rank of each group
    ranks = np.empty(d.size)
    ranks[order] = avg[group]
    return ranks, sizes, bool((sizes > 1).any())


def _exact_tail(r_plus: float, n: int) -> float:
    """2·min(P(T ≥ ⌊r⁺⌋), P(T ≤ ⌈r⁺⌉)) under the exact null of the signed-rank sum of ranks 1..n, capped at 1."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    pmf = counts / counts.sum()
    upper = float(pmf[math.floor(r_plus) :].sum())
    lower = float(pmf[: math.ceil(r_plus) + 1].sum())
    return min(1.0, 2 * min(upper, lower))


def _flip_tail(ranks: np.ndarray, signs: np.ndarray) -> float:
    """2·min(P(T ≤ t), P(T ≥ t)) over every sign flip of the (tied, average) ranks, t the observed W⁺."""
    m = ranks.size
    codes = np.arange(2**m, dtype=np.int64)
    positive = (codes[:, None] >> np.arange(m, dtype=np.int64)) & 1
    null = positive @ ranks
    observed = float(ranks[signs > 0].sum())
    tol = 1e-9 * max(1.0, float(ranks.sum()))
    return min(1.0, 2 * min(float(np.mean(null <= observed + tol)), float(np.mean(null >= observed - tol))))


def wilcoxon_signed_rank(
    a: Any, b: Any, *, min_n: int = DEFAULT_MIN_N, confidence: float = 0.95, max_exact: int = 50
) -> PairedTest:
    """Wilcoxon's signed-rank test of B − A (NaN rows left out); the method used is named in ``test``."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    keep = ~(np.isnan(x) | np.isnan(y))
    diffs = y[keep] - x[keep]
    n = int(diffs.size)
    effect = paired_effect(diffs, confidence=confidence)
    d = diffs[diffs != 0]
    m = int(d.size)
    refused = _too_few(n, min_n)
    if refused or m == 0:
        verdict = refused or "Wilcoxon signed-rank: every paired difference is 0"
        return PairedTest("Wilcoxon signed-rank", n, m, 0.0, None if refused else 1.0, effect, verdict)
    ranks, sizes, ties = _signed_ranks(d)
    r_plus, r_minus = float(ranks[d > 0].sum()), float(ranks[d < 0].sum())
    effect = replace(effect, rank_biserial=(r_plus - r_minus) / (r_plus + r_minus))
    if not ties and m == n and n <= max_exact:
        name, p = "Wilcoxon signed-rank (exact)", _exact_tail(r_plus, m)
    elif n <= 13:
        name, p = "Wilcoxon signed-rank (exact over sign flips, ties)", _flip_tail(ranks, np.sign(d))
    else:
        mean = m * (m + 1) / 4
        se = math.sqrt((m * (m + 1) * (2 * m + 1) - float((sizes**3 - sizes).sum()) / 2) / 24)
        name, p = "Wilcoxon signed-rank (normal approximation)", min(1.0, 2 * normal_sf(abs(r_plus - mean) / se))
    return PairedTest(name, n, m, r_plus, p, effect, f"{name}: W+={r_plus:g}, W-={r_minus:g} over {m} pairs")


def paired_test(
    a: Any,
    b: Any,
    *,
    kind: Literal["boolean", "ordinal", "continuous"],
    min_n: int = DEFAULT_MIN_N,
    mid_p: bool = False,
    confidence: float = 0.95,
) -> PairedTest:
    """The test a metric's kind calls for: McNemar for pass/fail (``boolean``), Wilcoxon signed-rank for ordinal
    judge scores and continuous metrics; the result names it."""
    if kind == "boolean":
        return mcnemar(a, b, mid_p=mid_p, min_n=min_n, confidence=confidence)
    return wilcoxon_signed_rank(a, b, min_n=min_n, confidence=confidence)


def adjust_pvalues(pvalues: Sequence[float], method: Correction = "holm") -> list[float]:
    """Holm step-down or Benjamini–Hochberg adjusted p-values, in the input order, monotone and capped at 1.

    Holm: sorted p₍ᵢ₎ (i = 1..m) → max_{j ≤ i} (m − j + 1)·p₍ⱼ₎. BH: min_{j ≥ i} m·p₍ⱼ₎ / j.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif method == "bh":
        adj = np.minimum.accumulate((m * ranked / np.arange(1, m + 1))[::-1])[::-1]
    else:
        raise ValueError(f"method must be 'holm' or 'bh', got {method!r}")
    out = np.empty(m)
    out[order] = np.minimum(adj, 1.0)
    return out.tolist()


def apply_family(tests: Sequence[PairedTest], *, method: Correction = "holm", alpha: float = 0.05) -> list[PairedTest]:
    """Every test with its adjusted p and decision (adjusted p < ``alpha``), the family being the tests that were
    run (p not None); the others pass through with ``significant=None``."""
    ran = [(i, t.p) for i, t in enumerate(tests) if t.p is not None]
    adjusted = adjust_pvalues([p for _, p in ran], method)
    label = "Holm" if method == "holm" else "Benjamini-Hochberg"
    out = list(tests)
    for (i, _), q in zip(ran, adjusted, strict=True):
        out[i] = replace(tests[i], p_adjusted=q, correction=f"{label} over {len(ran)}", significant=q < alpha)
    return out


@dataclass(frozen=True)
class FamilyRow:
    """One (candidate, metric) of a comparison: its test after the family correction, and whether the change is
    inside the judge's own noise (then it is not a change, whatever p says)."""

    candidate: str
    metric: str
    test: PairedTest
    within_noise: bool | None  # None when no noise band was given for the metric

    @property
    def changed(self) -> bool:
        """Significant after correction and outside the judge's noise: what a CI gate should act on."""
        return bool(self.test.significant) and not self.within_noise


def compare_family(
    baseline: Mapping[str, Any],
    candidates: Mapping[str, Mapping[str, Any]],
    kinds: Mapping[str, Literal["boolean", "ordinal", "continuous"]],
    *,
    method: Correction = "holm",
    alpha: float = 0.05,
    min_n: int = DEFAULT_MIN_N,
    noise: Mapping[str, float] | None = None,
) -> list[FamilyRow]:
    """Every candidate against the baseline on every metric (per-query arrays aligned on the same queries, NaN =
    missing), the test picked by the metric's kind, corrected over the whole family of metrics × candidates.
    ``noise``: metric → band (``agreement.noise_band``) inside which |Δ mean| is judge noise."""
    keys = [(c, m) for c in candidates for m in baseline if m in candidates[c]]
    tests = [paired_test(baseline[m], candidates[c][m], kind=kinds[m], min_n=min_n) for c, m in keys]
    corrected = apply_family(tests, method=method, alpha=alpha)
    rows = []
    for (cand, metric), test in zip(keys, corrected, strict=True):
        band = None if noise is None else noise.get(metric)
        inside = None if band is None else bool(abs(test.effect.mean_diff) <= band)
        rows.append(FamilyRow(cand, metric, test, inside))
    return rows
