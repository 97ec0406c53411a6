"""#24 item 2: the verdict queue samples rows with known probabilities, and the inverse-probability-weighted PPI
mean it feeds is unbiased for the humans' truth — a seeded simulation of a known population.

The population (fixed, ``ROWS`` rows): a human pass/fail with true pass rate 0.65; the first judge passes 15 % of
the rows the human fails (and every row the human passes); a second judge errs on 20 % of rows independently, so
the rows where the judges disagree are rich in the first judge's errors — the rows the queue favours. Each of
``REPS`` repetitions draws the queue (``queue_sample``, its own seed) with E[labels] = ``SIZE`` and estimates the
pass rate from the drawn rows' human labels. Tolerance: |bias| within 2 Monte Carlo standard errors; coverage of
the 95 % interval ≥ 0.92 (0.95 − 3·√(.95·.05/REPS) ≈ 0.914).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from foundry_bridge.metrics.ppi import (
    estimate_mean,
    inclusion_probabilities,
    ipw_ppi_mean,
    queue_priority,
    queue_sample,
)

SEED = 20240624
ROWS = 2000
REPS = 300
SIZE = 100
TRUE_PASS = 0.65


def _population() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    human = (rng.random(ROWS) < TRUE_PASS).astype(float)
    judge = np.where(human == 1, 1.0, (rng.random(ROWS) < 0.15).astype(float))
    other = np.where(rng.random(ROWS) < 0.2, 1 - human, human)
    return human, judge, (judge != other).astype(float)


def _simulate(weighted: bool) -> tuple[float, float, float]:
    human, judge, spread = _population()
    truth = float(human.mean())
    unlabelled = np.full(ROWS, np.nan)
    means, covered = [], 0
    for rep in range(REPS):
        draws = queue_sample(judge, unlabelled, size=SIZE, spread=spread, seed=rep)
        rows = np.array([d.index for d in draws])
        h = np.full(ROWS, np.nan)
        h[rows] = human[rows]
        if weighted:
            pi = np.full(ROWS, np.nan)
            pi[rows] = [d.probability for d in draws]
            est = ipw_ppi_mean(judge, h, pi, scale=(0, 1))
        else:
            ppi = estimate_mean(judge, h, scale=(0, 1)).ppi
            assert ppi is not None
            est = ppi
        means.append(est.mean)
        covered += est.low <= truth <= est.high
    m = np.asarray(means)
    return float(m.mean() - truth), float(m.std(ddof=1) / math.sqrt(REPS)), covered / REPS


def test_queue_probabilities_have_a_floor_and_sum_to_the_size() -> None:
    _human, judge, spread = _population()
    pi = inclusion_probabilities(queue_priority(judge, np.full(ROWS, np.nan), spread=spread), SIZE)
    assert pi.sum() == pytest.approx(SIZE)
    assert pi.min() >= 0.2 * SIZE / ROWS - 1e-12
    assert pi[spread == 1].mean() > pi[spread == 0].mean()  # disagreement rows are favoured


def test_queue_selected_ipw_ppi_mean_is_unbiased_and_covers() -> None:
    bias, se, coverage = _simulate(weighted=True)
    print(f"IPW PPI: bias {bias:+.4f}, MC SE {se:.4f}, coverage {coverage:.3f}")
    assert abs(bias) <= 2 * se
    assert coverage >= 0.92


def test_queue_selected_unweighted_ppi_mean_is_biased() -> None:
    """The same queue's labels through the unweighted PPI (weights ignored): the bias the issue measured."""
    bias, se, coverage = _simulate(weighted=False)
    print(f"unweighted PPI: bias {bias:+.4f}, MC SE {se:.4f}, coverage {coverage:.3f}")
    assert abs(bias) > 2 * se


def test_uniform_audit_sample_has_equal_probabilities() -> None:
    _human, judge, spread = _population()
    draws = queue_sample(judge, np.full(ROWS, np.nan), size=SIZE, spread=spread, audit=True)
    assert {d.probability for d in draws} == {SIZE / ROWS}
    assert all(d.design == "uniform audit" for d in draws)
