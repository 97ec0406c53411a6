"""Several raters per row (#24 item 3): their disagreement is in the intervals, α carries a bootstrap interval
that equals the krippendorff package's α on each resample."""

from __future__ import annotations

import numpy as np
import pytest

from foundry_bridge.metrics.agreement import alpha_interval, judge_trust, krippendorff_alpha
from foundry_bridge.metrics.ppi import estimate_mean, rater_spread

SCALE = [1.0, 2.0, 3.0, 4.0, 5.0]


def _two_raters(first: float, second: float, rows: int = 20, unlabelled: int = 20) -> np.ndarray:
    h = np.full((2, rows + unlabelled), np.nan)
    h[0, :rows], h[1, :rows] = first, second
    return h


def _judge(size: int) -> np.ndarray:
    j = np.full(size, 3.0)
    j[::3] = 4.0
    return j


def test_raters_who_disagree_on_every_row_widen_the_human_and_ppi_intervals() -> None:
    """Rater A gives 2 and rater B 4 on every row: the row means are all 3 and half the verdicts pass, as when the
    two take turns giving 2 and 4 — but the intervals must not be the same: only the first pair disagrees for good."""
    judge = _judge(40)
    split, agree = _two_raters(2.0, 4.0), _two_raters(2.0, 4.0)
    agree[:, 1:20:2] = agree[::-1, 1:20:2]  # the same ratings, the raters taking turns
    scores = [estimate_mean(judge, h, scale=SCALE) for h in (split, agree)]
    rates = [
        estimate_mean((judge >= 3).astype(float), np.where(np.isnan(h), np.nan, (h >= 3).astype(float)), scale=(0, 1))
        for h in (split, agree)
    ]
    for disagree, agreeing in (scores, rates):
        assert disagree.human_only.mean == agreeing.human_only.mean
        for kind in ("human_only", "ppi", "ppi_plus"):
            d, a = getattr(disagree, kind), getattr(agreeing, kind)
            assert d.low < d.high and d.high - d.low > 2 * (a.high - a.low), (kind, d, a)
    assert scores[0].human_only.low == 1.0 and scores[0].human_only.high == 5.0  # 3 [1, 5]†: unknown until they agree
    assert rates[0].human_only.high - rates[0].human_only.low > 0.9


def test_rater_spread_of_a_complete_design_is_the_rater_effects_variance() -> None:
    """Three raters with effects −1, 0, +1 rate every row: σ̂² = Σa²/(k − 1) = 1, Σw² = 1/3."""
    rows = np.array([1.0, 2.0, 3.0, 2.0, 3.0, 4.0, 2.0, 3.0])
    ratings = np.vstack([rows - 0.5, rows + 0.5, rows + 1.5])
    spread = rater_spread(ratings)
    assert spread.sigma2 == pytest.approx(1.0)
    assert spread.weight == pytest.approx(1 / 3)
    assert spread.variance == pytest.approx(1 / 3) and spread.df == 2


def test_one_rater_per_row_adds_nothing() -> None:
    ratings = np.full((3, 9), np.nan)
    for row in range(9):
        ratings[row % 3, row] = 1.0 + row % 5
    assert rater_spread(ratings).variance == 0.0


krippendorff = pytest.importorskip("krippendorff")


def test_alpha_interval_is_the_percentile_bootstrap_of_the_krippendorff_package() -> None:
    rng = np.random.default_rng(5)
    data = rng.integers(1, 6, (3, 25)).astype(float)
    data[1] = np.clip(data[0] + rng.integers(-1, 2, 25), 1, 5)
    data[2, ::3] = np.nan
    data[1:, 7] = np.nan  # a unit rated once: left out of α and of the resampled units
    assert krippendorff_alpha(data) == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal"), abs=1e-12
    )
    low, high = alpha_interval(data, resamples=300, seed=4)
    units = data[:, (~np.isnan(data)).sum(axis=0) >= 2]
    # units with the same ratings grouped (α sees a unit's ratings only), each group's count in a resample drawn
    # multinomial(units, group sizes / units): the rows of each resample, rebuilt, go to the krippendorff package
    counts = np.stack([(units == v).sum(axis=0) for v in SCALE], axis=1)
    groups, first, sizes = np.unique(counts, axis=0, return_index=True, return_counts=True)
    assert groups.shape[0] < units.shape[1]  # some units do share their ratings
    draws = np.random.default_rng(4).multinomial(units.shape[1], sizes / units.shape[1], size=300)
    each = [
        krippendorff.alpha(
            reliability_data=units[:, np.repeat(first, d)], level_of_measurement="ordinal", value_domain=SCALE
        )
        for d in draws
    ]
    assert (low, high) == pytest.approx(tuple(np.quantile(each, [0.025, 0.975])), abs=1e-9)
    assert low < krippendorff_alpha(data) < high


def test_judge_trust_gives_alpha_its_interval_and_rows() -> None:
    h = _two_raters(2.0, 4.0, rows=12, unlabelled=0)
    h[1, :6] = 2.0
    t = judge_trust(_judge(12), np.ones(12), h, np.full(h.shape, np.nan), threshold=3.0, categories=SCALE)
    assert t.alpha_humans is not None and t.alpha_humans_interval is not None
    assert t.alpha_rows == 12 and t.alpha_with_judge_rows == 12
    low, high = t.alpha_humans_interval
    assert low <= t.alpha_humans <= high and low < high
