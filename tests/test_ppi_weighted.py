"""#36 item 5: the weighted trust path — the queue's prefix design, and the three faults of the weighted estimators,
each against a value by hand (scipy's t, statsmodels' Wilson) or an independent simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from foundry_bridge.dataset.verdicts import HumanVerdict, inclusion_array
from foundry_bridge.errors import DatasetError
from foundry_bridge.metrics.ppi import estimate_mean, labelled_prefix, prefix_probabilities

SCALE = (1.0, 2.0, 3.0, 4.0, 5.0)


def test_a_prefix_of_the_key_order_weighted_by_its_threshold_is_unbiased() -> None:
    """Priority sampling by hand: 6 rows of unequal shares, keys u/p, the first 2 by key; Σ y/π with π = min(1,
    p·t), t the third key, averaged over 400,000 draws of u equals Σ y (a row with a large share gets π = 1)."""
    rng = np.random.default_rng(5)
    share = np.array([0.45, 0.2, 0.15, 0.1, 0.06, 0.04])
    y = np.array([1.0, 4.0, 2.0, 5.0, 3.0, 1.0])
    u = rng.random((400_000, share.size))
    keys = u / share
    order = np.argsort(keys, axis=1)
    first, t = order[:, :2], np.take_along_axis(keys, order[:, 2:3], axis=1)
    pi = np.minimum(1.0, share[first] * t)
    total = (y[first] / pi).sum(axis=1)
    assert abs(total.mean() - y.sum()) <= 3 * total.std() / math.sqrt(total.size)
    assert pi.max() == 1.0
    np.testing.assert_allclose(prefix_probabilities(share[[0, 1]], 4.0), [1.0, 0.8])
    assert (prefix_probabilities(share, math.inf) == 1).all()


def test_labels_after_a_gap_are_beyond_the_prefix() -> None:
    assert labelled_prefix([1, 2, 3, 5]) == 3 and labelled_prefix([2, 3]) == 0 and labelled_prefix([3, 1, 2]) == 3
    ids = ["a", "b", "c", "d"]
    rows = [
        HumanVerdict(q, "relevance", 4.0, None, None, i, None, None, (p, 0.25, t))
        for i, (q, p, t) in enumerate([("a", 1, 2.0), ("b", 2, 3.2), ("d", 4, 9.0)])
    ]
    got = inclusion_array(rows, "builtin.relevance", ids)
    np.testing.assert_allclose(got.probability[:2], [0.8, 0.8])  # min(1, 0.25 · 3.2): the key after place 2
    assert np.isnan(got.probability[2:]).all() and got.beyond.tolist() == [False, False, False, True]
    assert got.gap == 3
    twice = [*rows, HumanVerdict("c", "relevance", 4.0, None, None, 9, None, None, (1, 0.25, 2.0))]
    with pytest.raises(DatasetError) as err:
        inclusion_array(twice, "relevance", ids, source="v.jsonl")
    assert err.value.line == 9 and err.value.field == "queue_place" and "two verdict queues" in str(err.value)


def test_queue_weighted_ppi_adds_the_raters_variance() -> None:
    """Two raters 2 points apart on 20 of 40 rows: σ̂²_rater = (1² + 1²)/(2 − 1) = 2, each rater's weight ½, so
    V_raters = 2·(¼ + ¼) = 1 on 1 df. Without a scale the weighted PPI's interval is θ ± t_df·√(V_HT + 1), df
    Satterthwaite's; on 1–5 it spans the scale, as the uniform design's does (width 4.00; it was 0.80)."""
    rng = np.random.default_rng(1)
    judge = rng.integers(1, 6, 40).astype(float)
    human = np.full((2, 40), np.nan)
    human[0, :20], human[1, :20] = 2.0, 4.0
    pi = np.where(np.arange(40) < 20, 0.5, np.nan)
    f, r = judge, 3.0 - judge[:20]
    theta = f.mean() + (r / 0.5).sum() / 40
    v_ht = f.var(ddof=1) / 40 + ((1 - 0.5) / 0.25 * r**2).sum() / 40**2
    df = (v_ht + 1) ** 2 / (v_ht**2 / 19 + 1**2 / 1)
    half = stats.t.ppf(0.975, df) * math.sqrt(v_ht + 1)
    ppi = estimate_mean(judge, human, probability=pi).ppi
    assert ppi is not None
    assert (ppi.mean, ppi.low, ppi.high) == pytest.approx((theta, theta - half, theta + half), rel=1e-9)
    on_scale = estimate_mean(judge, human, scale=SCALE, probability=pi)
    uniform = estimate_mean(judge, human, scale=SCALE)
    for weighted, plain in ((on_scale.ppi, uniform.ppi), (on_scale.ppi_plus, uniform.ppi_plus)):
        assert weighted is not None and plain is not None
        assert weighted.high - weighted.low == pytest.approx(plain.high - plain.low) == pytest.approx(4.0)
        assert "2 raters' variance" in weighted.interval


def _by_hand_variance(y: np.ndarray, w: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Hájek's mean and its with-replacement variance, padded with 2 pseudo-rows of weight mean(w) over the scale."""
    mean = float((w * y).sum() / w.sum())
    spread = (w**2 * (y - mean) ** 2).sum() + w.mean() ** 2 * 2 * ((values - mean) ** 2).mean()
    return mean, float(y.size * spread / ((y.size + 1) * w.sum() ** 2))


def test_weighted_human_only_with_every_probability_one_has_a_width() -> None:
    """Every drawn label with π = 1: no ZeroDivisionError on the pass rate (Wilson on Korn & Graubard's n*,
    statsmodels' Wilson on the same n*), and not "3.333 [3.333, 3.333]" on 1–5 (t₅ by hand)."""
    judge = np.array([3, 4, 3, 3, 4, 3, 5, 2, 4, 1.0])
    human = np.array([3, 4, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan])
    pi = np.where(np.isnan(human), np.nan, 1.0)
    score = estimate_mean(judge, human, scale=SCALE, probability=pi).human_only
    mean, variance = _by_hand_variance(human[:6], np.ones(6), np.array(SCALE))
    half = stats.t.ppf(0.975, 5) * math.sqrt(variance)
    assert (score.mean, score.low, score.high) == pytest.approx((10 / 3, 10 / 3 - half, 10 / 3 + half), rel=1e-9)
    assert mean == pytest.approx(10 / 3)
    passed = np.array([1, 1, 0, 1, 1, 1, 1, 0, 1, 1.0])
    hp = np.array([1, 1, 0, 1, 1, 1, np.nan, np.nan, np.nan, np.nan])
    rate = estimate_mean(passed, hp, scale=(0, 1), probability=pi).human_only
    p, v = _by_hand_variance(hp[:6], np.ones(6), np.array([0.0, 1.0]))
    n_star = min(6, p * (1 - p) / v * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 5)) ** 2)
    low, high = proportion_confint(p * n_star, n_star, alpha=0.05, method="wilson")
    assert (rate.mean, rate.low, rate.high) == pytest.approx((5 / 6, low, high), rel=1e-9)
    assert rate.high - rate.low > 0.3


def test_with_one_unlabelled_row_the_interval_keeps_its_estimate() -> None:
    """12 labels (human 1, judge 0, π = 0.9) and one unlabelled row the judge passes: θ = 1/13 + 12/(0.9·13) =
    1.103 leaves [0, 1]. It is moved to 1 and its interval with it: [1 − half, 1], half = t₁₁·√V by hand (the
    Horvitz–Thompson terms plus the pseudo-rows: 2·mean over the 2×2 grid of (y − f)² = 1, weight (1/0.9)²) —
    not [1, 1], which excluded the estimate."""
    judge = np.r_[np.zeros(12), 1.0]
    human = np.r_[np.ones(12), np.nan]
    pi = np.r_[np.full(12, 0.9), np.nan]
    ppi = estimate_mean(judge, human, scale=(0, 1), probability=pi).ppi
    assert ppi is not None
    variance = judge.var(ddof=1) / 13 + (12 * 0.1 / 0.81 + (1 / 0.9) ** 2 * 1.0) / 13**2
    half = stats.t.ppf(0.975, 11) * math.sqrt(variance)
    assert (ppi.mean, ppi.low, ppi.high) == pytest.approx((1.0, 1.0 - half, 1.0), rel=1e-9)
    assert ppi.clipped and ppi.low < ppi.mean <= ppi.high
