"""Paired tests, effect sizes and multiplicity control against scipy and statsmodels, and hand values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from foundry_bridge.metrics.significance import (
    adjust_pvalues,
    apply_family,
    mcnemar,
    paired_effect,
    wilcoxon_signed_rank,
)

stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")
contingency = pytest.importorskip("statsmodels.stats.contingency_tables")


@pytest.mark.parametrize("method,sm", [("holm", "holm"), ("bh", "fdr_bh")])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_adjusted_pvalues_match_statsmodels(method: str, sm: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(12) ** 3, [0.01, 0.01, 1.0]])  # ties and a 1 included
    expected = multitest.multipletests(p, method=sm)[1]
    assert adjust_pvalues(p.tolist(), method) == pytest.approx(expected.tolist(), abs=1e-12)


def _pairs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.random(n) < 0.6
    b = np.where(rng.random(n) < 0.2, ~a, a)
    b |= rng.random(n) < 0.1
    return a, b


@pytest.mark.parametrize("seed,n", [(0, 40), (1, 120), (2, 400)])
def test_mcnemar_exact_matches_statsmodels(seed: int, n: int) -> None:
    a, b = _pairs(seed, n)
    table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    expected = contingency.mcnemar(table, exact=True)
    got = mcnemar(a, b)
    assert got.test == "McNemar exact" and got.n == n
    assert got.p == pytest.approx(expected.pvalue, abs=1e-12)
    assert got.statistic == expected.statistic  # min(b, c)


def test_mcnemar_mid_p_hand_value() -> None:
    # b=1 (A only), c=6 (B only): exact p = 2·P(X ≤ 1 | 7, ½) = 2·8/128 = 0.125; mid-p = 0.125 − 7/128 = 0.0703125
    a = [1] * 1 + [0] * 6 + [1] * 5
    b = [0] * 1 + [1] * 6 + [1] * 5
    assert mcnemar(a, b, min_n=1).p == pytest.approx(0.125)
    got = mcnemar(a, b, mid_p=True, min_n=1)
    assert got.p == pytest.approx(0.0703125) and got.test == "McNemar mid-p"
    # the pass-rate difference (6 − 1)/12; its variance padded with ½ in each cell (Agresti & Min): 14 weighted rows,
    # weighted mean 5/14, Σw·d² = 8, so s² = (8 − 14·(5/14)²)/13 = 87/182; the interval ±t₁₁·√(s²/12)
    half = stats.t.ppf(0.975, 11) * math.sqrt(87 / 182 / 12)
    assert (got.effect.mean_diff, got.effect.low, got.effect.high) == pytest.approx(
        (5 / 12, 5 / 12 - half, 5 / 12 + half)
    )


def test_too_few_paired_queries_is_a_verdict_not_a_p_value() -> None:
    got = mcnemar([1, 0, 1], [0, 0, 0])
    assert got.p is None and got.verdict == "too few paired queries (n=3 < 10): not tested"
    assert wilcoxon_signed_rank([1, 2], [3, 4]).p is None


@pytest.mark.parametrize(
    "case",
    [
        "exact",  # continuous, no ties, n ≤ 50
        "ties_small",  # ordinal, ties, n ≤ 13: exact over sign flips
        "ties_large",  # ordinal 1-5 scores, n = 80: normal approximation with tie correction
        "large",  # continuous, n = 120
        "zeros_small",
    ],
)
def test_wilcoxon_matches_scipy(case: str) -> None:
    rng = np.random.default_rng(7)
    if case == "exact":
        a = rng.random(30)
        b = a + rng.normal(0.1, 0.3, 30)
    elif case == "ties_small":
        a = rng.integers(1, 6, 12).astype(float)
        b = np.clip(a + rng.integers(-1, 3, 12), 1, 5)
        a[0], b[0] = 3, 3  # a zero difference too
    elif case == "ties_large":
        a = rng.integers(1, 6, 80).astype(float)
        b = np.clip(a + rng.integers(-1, 3, 80), 1, 5)
    elif case == "large":
        a = rng.random(120)
        b = a + rng.normal(0.05, 0.3, 120)
    else:
        a = np.array([1.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        b = a + np.array([0, 0.5, -0.2, 1.1, 0.7, 0.3, -0.9, 1.3, 0.0, 0.8, 1.7])
    expected = stats.wilcoxon(b, a)
    got = wilcoxon_signed_rank(a, b, min_n=5)
    method = {"exact": "(exact)", "large": "normal", "ties_large": "normal"}.get(case, "sign flips")
    assert method in got.test
    assert got.p == pytest.approx(float(expected.pvalue), rel=1e-9, abs=1e-12), got.test
    assert min(got.statistic, got.n_informative * (got.n_informative + 1) / 2 - got.statistic) == pytest.approx(
        float(expected.statistic)
    )


def test_wilcoxon_names_its_method_and_gives_rank_biserial() -> None:
    a = np.arange(20, dtype=float)
    b = a + np.where(np.arange(20) < 15, 1.0 + np.arange(20) / 100, -0.5 - np.arange(20) / 100)
    got = wilcoxon_signed_rank(a, b)
    assert got.test == "Wilcoxon signed-rank (exact)"
    w_minus = got.n_informative * (got.n_informative + 1) / 2 - got.statistic
    assert got.effect.rank_biserial == pytest.approx((got.statistic - w_minus) / (got.statistic + w_minus))
    assert "W+=" in got.verdict


@pytest.mark.parametrize("n", [10, 500])
def test_paired_effect_interval_is_students_t(n: int) -> None:
    """mean ± t₍n−1₎·s/√n with s's n − 1 divisor (scipy's t interval), not ±z·sd/√n with the n divisor: at 10
    pairs that normal interval is ≈ 18 % too narrow."""
    rng = np.random.default_rng(3)
    d = rng.normal(0.2, 1.0, n)
    eff = paired_effect(d)
    expected = stats.t.interval(0.95, n - 1, loc=d.mean(), scale=stats.sem(d))
    assert (eff.low, eff.high) == pytest.approx(expected, abs=1e-9)
    dz = d.mean() / d.std()  # d_z and its interval are unchanged
    dz_half = stats.norm.ppf(0.975) * math.sqrt(1 / n + dz**2 / (2 * n))
    assert (eff.d_z, eff.d_low, eff.d_high) == pytest.approx((dz, dz - dz_half, dz + dz_half), abs=1e-9)


def test_family_correction_decides_on_the_adjusted_p() -> None:
    rng = np.random.default_rng(1)
    a = rng.random(60)
    tests = [
        wilcoxon_signed_rank(a, a + 0.2),  # a clear change
        wilcoxon_signed_rank(a, a + rng.normal(0, 0.3, 60)),  # noise
        mcnemar([1, 0], [0, 1]),  # too few: outside the family
    ]
    out = apply_family(tests, method="holm")
    assert out[2].significant is None and out[2].p_adjusted is None
    assert out[0].correction == "Holm over 2"
    expected = multitest.multipletests([tests[0].p, tests[1].p], method="holm")[1]
    assert [out[0].p_adjusted, out[1].p_adjusted] == pytest.approx(expected.tolist())
    assert out[0].significant is True
    assert apply_family(tests, method="bh")[0].correction == "Benjamini-Hochberg over 2"


def test_paired_test_picks_the_test_by_metric_kind() -> None:
    from foundry_bridge.metrics.significance import paired_test

    a, b = _pairs(4, 60)
    assert paired_test(a, b, kind="boolean").test == "McNemar exact"
    assert paired_test(a, b, kind="boolean", mid_p=True).test == "McNemar mid-p"
    rng = np.random.default_rng(4)
    x = rng.random(60)
    assert paired_test(x, x + rng.normal(0, 0.1, 60), kind="continuous").test.startswith("Wilcoxon signed-rank")


@pytest.mark.parametrize("n,k", [(999, 470), (1001, 470), (5000, 2400), (200_000, 99_500)])
def test_binomial_tails_beyond_the_exact_range_match_scipy(n: int, k: int) -> None:
    from foundry_bridge.metrics._dist import binom_cdf, binom_pmf

    assert binom_cdf(k, n) == pytest.approx(float(stats.binom.cdf(k, n, 0.5)), rel=1e-7)
    assert binom_pmf(k, n) == pytest.approx(float(stats.binom.pmf(k, n, 0.5)), rel=1e-7)


def test_mcnemar_on_a_million_rows_matches_statsmodels() -> None:
    rng = np.random.default_rng(9)
    a = rng.random(1_000_000) < 0.5
    b = np.where(rng.random(1_000_000) < 0.01, ~a, a)
    table = [[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]]
    assert mcnemar(a, b).p == pytest.approx(contingency.mcnemar(table, exact=True).pvalue, rel=1e-7)


def test_compare_family_corrects_over_metrics_and_candidates_and_respects_judge_noise() -> None:
    from foundry_bridge.metrics.significance import compare_family

    rng = np.random.default_rng(21)
    base = {"ndcg@10": rng.random(80), "groundedness": rng.integers(1, 6, 80).astype(float)}
    better = {"ndcg@10": base["ndcg@10"] + 0.1, "groundedness": np.clip(base["groundedness"] + 1, 1, 5)}
    same = {"ndcg@10": base["ndcg@10"] + rng.normal(0, 0.05, 80), "groundedness": base["groundedness"].copy()}
    kinds = {"ndcg@10": "continuous", "groundedness": "ordinal"}
    rows = compare_family(base, {"better": better, "same": same}, kinds, noise={"groundedness": 2.0})
    assert [(r.candidate, r.metric) for r in rows] == [
        ("better", "ndcg@10"), ("better", "groundedness"), ("same", "ndcg@10"), ("same", "groundedness"),
    ]  # fmt: skip
    ran = [r.test.p for r in rows if r.test.p is not None]
    expected = multitest.multipletests(ran, method="holm")[1]
    assert [r.test.p_adjusted for r in rows if r.test.p is not None] == pytest.approx(expected.tolist())
    assert rows[0].changed is True and rows[0].within_noise is None
    assert rows[1].test.significant is True and rows[1].within_noise is True and rows[1].changed is False
    assert rows[3].test.p == 1.0 and rows[3].changed is False
    assert all(r.test.correction == "Holm over 4" for r in rows)
