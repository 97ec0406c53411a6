"""PPI / PPI++ against the ppi-python package, a coverage simulation with known truth, and the labelling queue."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ppi_helpers import cross_fitted_by_hand
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from foundry_bridge.metrics.ppi import (
    MIN_HUMAN_LABELS,
    MIN_LABELS,
    estimate_mean,
    labels_for_half_width,
    ppi_mean,
    queue_priority,
    tuned_lambda,
)

ppi_py = pytest.importorskip("ppi_py")


def _biased_judge(rng: np.random.Generator, n: int, p: float = 0.6) -> tuple[np.ndarray, np.ndarray]:
    """Truth ~ Bernoulli(p); the judge passes 35 % of true failures and fails 5 % of true passes (biased up)."""
    y = (rng.random(n) < p).astype(float)
    flip = np.where(y == 1, rng.random(n) < 0.05, rng.random(n) < 0.35)
    return y, np.where(flip, 1 - y, y)


def _scores(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A 1-5 human score and a judge that scores one point high half the time, with noise."""
    y = rng.integers(1, 6, size=n).astype(float)
    f = np.clip(y + (rng.random(n) < 0.5) + np.round(rng.normal(0, 0.7, n)), 1, 5)
    return y, f


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("kind", ["binary", "ordinal"])
def test_ppi_and_ppi_plus_match_ppi_python(seed: int, kind: str) -> None:
    """``interval="normal"`` is ppi-python's estimate and interval to the last digit; the default PPI is its point
    estimate with the small-sample interval (t, n − 1 divisors, two pseudo-rows), a few per cent wider at 150
    labels; the default PPI++ is the cross-fitted one (``ppi_helpers.cross_fitted_by_hand``), close to ppi-python's."""
    rng = np.random.default_rng(seed)
    y, f = _biased_judge(rng, 1200) if kind == "binary" else _scores(rng, 1200)
    yl, fl, fu = y[:150], f[:150], f[150:]
    scale = (0, 1) if kind == "binary" else range(1, 6)
    for lam in (None, 1.0):
        normal = ppi_mean(yl, fl, fu, lam=lam, confidence=0.95, interval="normal")
        assert normal.mean == pytest.approx(float(ppi_py.ppi_mean_pointestimate(yl, fl, fu, lam=lam)[0]), abs=1e-12)
        lo, hi = ppi_py.ppi_mean_ci(yl, fl, fu, alpha=0.05, lam=lam)
        assert (normal.low, normal.high) == pytest.approx((float(lo[0]), float(hi[0])), abs=1e-10)
        ours = ppi_mean(yl, fl, fu, lam=lam, confidence=0.95, scale=scale)
        if lam is None:
            assert ours.mean == pytest.approx(cross_fitted_by_hand(yl, fl, fu), abs=1e-12)
            assert ours.method.endswith(", cross-fitted)")
            assert abs(ours.mean - normal.mean) < 0.25 * normal.half_width
        else:
            assert ours.mean == normal.mean and ours.low < normal.low and ours.high > normal.high
        assert 1.0 < ours.half_width / normal.half_width < 1.06
    human = estimate_mean(np.concatenate([fl, fu]), np.concatenate([yl, np.full(fu.size, np.nan)])).human_only
    expected = stats.t.interval(0.95, yl.size - 1, loc=yl.mean(), scale=stats.sem(yl))  # no scale: plain t
    assert (human.low, human.high) == pytest.approx(expected, abs=1e-10)


def test_cross_fitted_lambda_takes_out_the_small_n_bias_of_ppi_plus() -> None:
    """PPI++ with λ tuned on the same 10 labels it corrects is biased (λ follows the labels' own noise); tuned on
    the other folds it is not. Seeded: 3000 runs of 300 rows (true pass rate 0.65, a judge passing 15 % of the
    human fails), 10 labelled."""
    rng = np.random.default_rng(7)
    truth, reps, n = 0.65, 3000, 10
    y = (rng.random((reps, 300)) < truth).astype(float)
    f = np.where(y == 1, 1.0, (rng.random(y.shape) < 0.15).astype(float))
    in_sample, crossed, covered = np.empty(reps), np.empty(reps), 0
    for r in range(reps):
        yl, fl, fu = y[r, :n], f[r, :n], f[r, n:]
        lam = tuned_lambda(yl, fl, fu)
        in_sample[r] = lam * fu.mean() + (yl - lam * fl).mean()
        est = ppi_mean(yl, fl, fu, scale=(0, 1))
        crossed[r] = est.mean
        covered += est.low <= truth <= est.high
    se = crossed.std(ddof=1) / math.sqrt(reps)
    assert abs(crossed.mean() - truth) <= 2 * se
    assert in_sample.mean() - truth > 5 * in_sample.std(ddof=1) / math.sqrt(reps)  # the bias it removes
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps)


def test_tuned_lambda_is_zero_for_a_useless_judge_and_one_for_a_perfect_one() -> None:
    rng = np.random.default_rng(5)
    y = (rng.random(300) < 0.5).astype(float)
    assert tuned_lambda(y, np.ones(300), np.ones(3000)) == 0.0  # a constant judge tells nothing
    assert tuned_lambda(y, y, (rng.random(30000) < 0.5).astype(float)) == pytest.approx(1 / 1.01, rel=0.05)


def test_coverage_simulation_biased_judge_known_truth() -> None:
    """1000 seeded replicates: the 95 % PPI and PPI++ intervals cover the true pass rate near 95 %; the judge-only
    interval (the judge is biased up by ~0.11) almost never does. Bounds are ±4 binomial standard errors."""
    rng = np.random.default_rng(20260101)
    truth, reps = 0.6, 1000
    hits = {"ppi": 0, "ppi_plus": 0, "judge_only": 0, "human_only": 0}
    widths = {"ppi_plus": 0.0, "human_only": 0.0}
    for _ in range(reps):
        y, f = _biased_judge(rng, 2000, truth)
        human = np.full(y.size, np.nan)
        human[:200] = y[:200]
        est = estimate_mean(f, human)
        for name in hits:
            e = getattr(est, name)
            hits[name] += e.low <= truth <= e.high
        widths["ppi_plus"] += est.ppi_plus.half_width / reps
        widths["human_only"] += est.human_only.half_width / reps
    assert 0.92 <= hits["ppi"] / reps <= 0.98
    assert 0.92 <= hits["ppi_plus"] / reps <= 0.98
    assert 0.92 <= hits["human_only"] / reps <= 0.98
    assert hits["judge_only"] / reps < 0.05
    assert widths["ppi_plus"] < widths["human_only"]  # the judge's scores on the other rows buy precision


def test_labels_to_halve_halves_the_interval() -> None:
    rng = np.random.default_rng(11)
    y, f = _scores(rng, 40000)
    human = np.full(y.size, np.nan)
    human[:100] = y[:100]
    est = estimate_mean(f, human)
    assert est.labels_to_halve is not None and est.human_labels_to_halve is not None
    more = est.human_labels_to_halve  # Student's t on today's variance: the t quantile shrinks too, so under 3n
    s = float(np.std(y[:100], ddof=1))

    def half(k: int) -> float:
        return float(stats.t.ppf(0.975, k - 1)) * s / math.sqrt(k)

    assert half(100 + more) <= half(100) / 2 < half(100 + more - 1)
    m = est.labels_to_halve
    human[: 100 + m] = y[: 100 + m]
    after = ppi_mean(y[: 100 + m], f[: 100 + m], f[100 + m :])  # PPI++ tuned again on the larger labelled set
    assert after.half_width / est.ppi_plus.half_width == pytest.approx(0.5, abs=0.08)


def test_estimates_without_labels_say_so() -> None:
    est = estimate_mean([4, 5, np.nan, 3], [np.nan] * 4)
    assert est.ppi is None and est.ppi_plus is None and est.labels_to_halve is None
    assert est.judge_only.mean == pytest.approx(4.0) and est.judge_only.n_unlabeled == 3
    assert math.isnan(est.human_only.mean)
    assert labels_for_half_width(0.1) == 99  # the fewest n with t₍n−1₎·0.5/√n ≤ 0.1 (the normal answer was 97)
    half = [float(stats.t.ppf(0.975, n - 1)) * 0.5 / math.sqrt(n) for n in (98, 99)]
    assert half[1] <= 0.1 < half[0]


def test_queue_priority_is_each_strata_shrunk_residual_sd_doubled_where_judges_disagree() -> None:
    judge = np.array([5, 5, 5, 5, 5, 5, 1, 1, 3, 3], dtype=float)
    human = np.array([5, 4, 5, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, 3], dtype=float)
    spread = np.zeros(10)
    spread[5] = 2.0
    got = queue_priority(judge, human, spread=spread)
    # by hand: residuals of the labelled rows 0, -1, 0, 0 → pooled variance 0.1875; stratum 5: Σ(r − r̄)² = 2/3 over
    # 3 labels; strata 1 (no label) and 3 (one label, residual 0): the pooled variance alone
    five, rest = math.sqrt((2 / 3 + 0.1875) / 3), math.sqrt(0.1875)
    want = [math.nan] * 3 + [five, five, 2 * five, rest, rest, rest, math.nan]
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_coverage_simulation_on_a_1_to_5_scale() -> None:
    """500 seeded replicates of 1500 rows (150 labelled): truth uniform on 1–5 (mean 3), a judge scoring about half
    a point high. PPI++ covers the true mean 91–99 % of the time (±4 standard errors of 95 %), the judge only never."""
    rng = np.random.default_rng(7)
    reps, covered, judge_covered = 500, 0, 0
    for _ in range(reps):
        y, f = _scores(rng, 1500)
        human = np.full(y.size, np.nan)
        human[:150] = y[:150]
        est = estimate_mean(f, human)
        assert est.ppi_plus is not None
        covered += est.ppi_plus.low <= 3.0 <= est.ppi_plus.high
        judge_covered += est.judge_only.low <= 3.0 <= est.judge_only.high
    assert 0.91 <= covered / reps <= 0.99
    assert judge_covered == 0


def test_three_agreeing_labels_give_no_interval_but_say_how_many_labels_are_needed() -> None:
    """Three passing labels used to print human-only and PPI++ "1 [1, 1]" (λ = 0 when the labels have no variance)
    and "1 more label would halve" it. Below the minimum there is no interval, only the labels it needs; at the
    minimum, ten labels that all agree give an interval of honest width inside [0, 1]."""
    judge = np.array([1.0] * 12 + [0.0] * 4)
    human = np.full(judge.size, np.nan)
    human[:3] = 1.0
    est = estimate_mean(judge, human, scale=(0, 1))
    assert est.human_only.need_labels == MIN_HUMAN_LABELS == 5 and math.isnan(est.human_only.low)
    assert est.ppi_plus is not None and est.ppi is not None
    assert est.ppi_plus.need_labels == est.ppi.need_labels == MIN_LABELS == 10
    assert math.isnan(est.ppi_plus.low) and math.isnan(est.ppi_plus.high)
    assert est.ppi_plus.mean == pytest.approx(
        float(ppi_py.ppi_mean_pointestimate(np.ones(3), np.ones(3), judge[3:])[0])
    )
    assert est.labels_to_halve is None
    human[:10] = 1.0
    est = estimate_mean(judge, human, scale=(0, 1))
    assert est.lam == 0.0 and est.ppi_plus is not None  # no variance in the labels: PPI++ is the human mean
    for e in (est.human_only, est.ppi_plus, est.ppi):
        assert e is not None and 0.0 <= e.low < e.high <= 1.0 and e.high - e.low > 0.1, e
    lo, hi = proportion_confint(10, 10, method="wilson")
    assert (est.human_only.low, est.human_only.high) == pytest.approx((lo, hi))


def test_pass_rates_take_wilson_and_scores_a_padded_t_clipped_to_the_scale() -> None:
    """The judge-only pass rate is statsmodels' Wilson interval; a 1–5 mean of five 5s is Student's t (4 df) on the
    variance padded with 2 pseudo-rows spread over 1…5 (weight 0.4 each), cut at 5 and marked clipped."""
    judge = np.array([1.0] * 11 + [0.0] * 3)
    est = estimate_mean(judge, np.full(judge.size, np.nan), scale=(0, 1))
    assert (est.judge_only.low, est.judge_only.high) == pytest.approx(proportion_confint(11, 14, method="wilson"))
    assert est.judge_only.interval == "Wilson score" and not est.judge_only.clipped
    scores = np.array([5.0] * 5 + [3.0] * 5)
    human = np.full(10, np.nan)
    human[:5] = 5.0
    est = estimate_mean(scores, human, scale=range(1, 6))
    pad = np.arange(1.0, 6.0)
    values, weights = np.concatenate([np.full(5, 5.0), pad]), np.concatenate([np.ones(5), np.full(5, 0.4)])
    centre = (weights * values).sum() / weights.sum()
    s2 = (weights * (values - centre) ** 2).sum() / (weights.sum() - 1)
    low = 5.0 - stats.t.ppf(0.975, 4) * math.sqrt(s2 / 5)
    assert (est.human_only.low, est.human_only.high) == pytest.approx((low, 5.0))
    assert est.human_only.clipped and est.human_only.interval == "t, 4 df, 2 pseudo-rows"


def test_labels_for_target_gives_an_interval_that_wide() -> None:
    """The budget for a PPI++ pass rate ±0.05 on 4000 rows, from 100 labels (averaged over 5 draws: 100 labels
    estimate the judge–human agreement with noise); labelling that many rows of fresh draws of the same population
    gives intervals of ±0.05 on average (within 10 %), and 30 % fewer labels do not."""
    rng = np.random.default_rng(21)
    budgets = []
    for _ in range(5):
        y, f = _biased_judge(rng, 4000)
        human = np.full(y.size, np.nan)
        human[:100] = y[:100]
        need = estimate_mean(f, human, scale=(0, 1), target=0.05).labels_for_target
        assert need is not None and 100 < need < 4000
        budgets.append(need)
    need = round(float(np.mean(budgets)))

    def mean_half(labels: int) -> float:
        halves = []
        for _ in range(30):
            yy, ff = _biased_judge(rng, 4000)
            halves.append(ppi_mean(yy[:labels], ff[:labels], ff[labels:], scale=(0, 1)).half_width)
        return float(np.mean(halves))

    assert mean_half(need) == pytest.approx(0.05, rel=0.1)
    assert mean_half(int(need * 0.7)) > 0.05
