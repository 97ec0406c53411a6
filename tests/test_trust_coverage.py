"""Every interval of the trust section keeps its nominal 95 % coverage and stays on its scale: a seeded simulation
of a known population, labelled at random, through the call the report makes (``metrics.agreement.judge_trust``,
as ``report._trust`` calls it).

The population: a human score on 1–5 with P = (.15, .20, .20, .25, .20) — true mean score 3.15, true pass rate
(score ≥ 3) 0.65 — and a judge that scores each row from the human's score by the table ``JUDGE_GIVEN_HUMAN``:
it passes 15 % of the rows the human fails, misses 5 % of the 3s and 2 % of the 4s, and scores about a sixth of a
point high (its own pass rate 0.6875, mean score 3.315). Each repetition draws a run of ``ROWS`` rows and labels
the first n (the rows are independent: the first n are a uniform random sample), n in ``LABELS``.

Tolerance: ``REPS`` repetitions estimate a coverage with a Monte Carlo standard error of √(.95·.05/REPS) ≈ 0.011
at the nominal 0.95; an interval passes when its observed coverage is at least 0.95 − 3 SE ≈ 0.917 (Wilson's own
exact coverage at p = 0.65 is 0.946 at n = 5 and 30). The human-only, PPI and PPI++ intervals target the humans'
truth; the judge-only interval targets the judge's own population mean (it measures the judge, bias included).
Below the minimum labels (5 for human only, 10 for PPI and PPI++) the estimate must carry no interval and say how
many labels it needs.

Several raters (#24 item 3): the same population labelled by a pool of ``POOL`` raters, each labelled row by two of
them (half the rows) or one, chosen at random; a rating is the row's score moved one step up or down with
probability ``RATER_SLIP`` each (``RATER_GIVEN_SCORE``, cut to 1–5), independently per rating. The truth is the
mean rating (and rating ≥ 3) over rows and raters; the intervals, which now add the raters' variance, must keep the
same tolerance.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from foundry_bridge.metrics.agreement import judge_trust
from foundry_bridge.metrics.ppi import MIN_HUMAN_LABELS, MIN_LABELS, MeanEstimates
from foundry_bridge.wire import passes

SEED = 20240624
ROWS = 300
REPS = 400
LABELS = (3, 5, 10, 30, 100)
SCALE = [1.0, 2.0, 3.0, 4.0, 5.0]
THRESHOLD = 3.0
P_HUMAN = np.array([0.15, 0.20, 0.20, 0.25, 0.20])
JUDGE_GIVEN_HUMAN = np.array(  # row: the human's score 1–5; column: the judge's score 1–5
    [
        [0.60, 0.25, 0.10, 0.05, 0.00],
        [0.10, 0.75, 0.10, 0.05, 0.00],
        [0.00, 0.05, 0.55, 0.35, 0.05],
        [0.00, 0.02, 0.08, 0.60, 0.30],
        [0.00, 0.00, 0.05, 0.25, 0.70],
    ]
)
POOL = 4
RATER_SLIP = 0.1
RATER_GIVEN_SCORE = np.array(  # row: the row's score 1–5; column: the rating a rater gives
    [[1 - 2 * RATER_SLIP if i == j else RATER_SLIP if abs(i - j) == 1 else 0.0 for j in range(5)] for i in range(5)]
)
RATER_GIVEN_SCORE[0, 0] += RATER_SLIP  # cut to 1–5: a slip below 1 stays 1
RATER_GIVEN_SCORE[4, 4] += RATER_SLIP
MC_SE = math.sqrt(0.95 * 0.05 / REPS)
TOLERANCE = 0.95 - 3 * MC_SE
KINDS = ("judge_only", "human_only", "ppi", "ppi_plus")
MINIMUM = {"judge_only": 0, "human_only": MIN_HUMAN_LABELS, "ppi": MIN_LABELS, "ppi_plus": MIN_LABELS}


def _truths(raters: bool = False) -> dict[tuple[str, str], float]:
    """(quantity, estimate kind) → the population value it estimates (``raters``: the mean rating of the pool)."""
    values = np.array(SCALE)
    judge = P_HUMAN @ JUDGE_GIVEN_HUMAN
    rated = P_HUMAN @ RATER_GIVEN_SCORE if raters else P_HUMAN
    human_truth = {"pass rate": float(rated[values >= THRESHOLD].sum()), "mean score": float(rated @ values)}
    judge_truth = {"pass rate": float(judge[values >= THRESHOLD].sum()), "mean score": float(judge @ values)}
    return {(q, kind): (judge_truth if kind == "judge_only" else human_truth)[q] for q in human_truth for kind in KINDS}


def _runs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """REPS runs of ROWS rows: the humans' and the judge's scores, drawn from the joint table in one call."""
    joint = (P_HUMAN[:, None] * JUDGE_GIVEN_HUMAN).ravel()
    cells = rng.choice(joint.size, size=(REPS, ROWS), p=joint)
    return (cells // 5 + 1).astype(float), (cells % 5 + 1).astype(float)


def _trust(human: np.ndarray, judge: np.ndarray, n: int) -> dict[str, MeanEstimates | None]:
    """The report's call: the judge's scores and verdicts, one rater's scores on the first n rows (pass/fail
    derived from them at the judge's threshold, as for a verdict file with scores only)."""
    labels = np.full(ROWS, np.nan)
    labels[:n] = human[:n]
    return _judge_trust(judge, labels[None, :])


def _judge_trust(judge: np.ndarray, labels: np.ndarray) -> dict[str, MeanEstimates | None]:
    t = judge_trust(
        judge,
        passes(judge, THRESHOLD, True).astype(float),
        labels,
        np.full(labels.shape, np.nan),
        threshold=THRESHOLD,
        categories=SCALE,
        resamples=0,  # α's bootstrap is not what this checks
    )
    return {"pass rate": t.pass_rate, "mean score": t.score_mean}


def _rated(rng: np.random.Generator, human: np.ndarray, n: int) -> np.ndarray:
    """The POOL × ROWS matrix of ratings of the first n rows: two random raters on half of them, one on the rest."""
    labels = np.full((POOL, ROWS), np.nan)
    raters = np.argsort(rng.random((n, POOL)), axis=1)[:, :2]  # two distinct raters per row, in random order
    two = rng.random(n) < 0.5
    cum = np.cumsum(RATER_GIVEN_SCORE[human[:n].astype(int) - 1], axis=1)  # n × 5
    ratings = (rng.random((n, 2))[:, :, None] > cum[:, None, :-1]).sum(axis=2) + 1.0
    rows = np.arange(n)
    labels[raters[:, 0], rows] = ratings[:, 0]
    labels[raters[two, 1], rows[two]] = ratings[two, 1]
    return labels


def test_every_trust_interval_covers_the_truth_and_stays_on_its_scale() -> None:
    human, judge = _runs(np.random.default_rng(SEED))
    _check_coverage(_truths(), lambda r, n: _trust(human[r], judge[r], n))


def test_intervals_with_one_or_two_raters_per_row_cover_the_mean_rating() -> None:
    rng = np.random.default_rng(SEED + 1)
    human, judge = _runs(rng)
    _check_coverage(_truths(raters=True), lambda r, n: _judge_trust(judge[r], _rated(rng, human[r], n)))


def _check_coverage(
    truth: dict[tuple[str, str], float], trust: Callable[[int, int], dict[str, MeanEstimates | None]]
) -> None:
    scale = {"pass rate": (0.0, 1.0), "mean score": (SCALE[0], SCALE[-1])}
    covered: dict[tuple[str, str, int], int] = defaultdict(int)
    shown: dict[tuple[str, str, int], int] = defaultdict(int)
    wrong: list[str] = []
    for n in LABELS:
        for r in range(REPS):
            for quantity, est in trust(r, n).items():
                assert est is not None
                lo, hi = scale[quantity]
                for kind in KINDS:
                    e = getattr(est, kind)
                    minimum = MINIMUM[kind]
                    if n < minimum:
                        if e.need_labels != minimum or not (math.isnan(e.low) and math.isnan(e.high)):
                            wrong.append(f"{quantity} {kind} n={n}: an interval below {minimum} labels {e}")
                        continue
                    if not lo <= e.low < e.high <= hi:
                        wrong.append(f"{quantity} {kind} n={n}: [{e.low}, {e.high}] off {lo:g}–{hi:g} or zero width")
                    shown[quantity, kind, n] += 1
                    covered[quantity, kind, n] += e.low <= truth[quantity, kind] <= e.high
        if wrong:
            break
    assert not wrong, "\n".join(wrong[:10])
    coverage = {key: covered[key] / shown[key] for key in shown}
    table = "\n".join(f"{q:10s} {k:10s} n={n:3d}: {c:.3f}" for (q, k, n), c in sorted(coverage.items()))
    assert min(coverage.values()) >= TOLERANCE, f"coverage under {TOLERANCE:.3f}:\n{table}"
    expected = {(q, k, n) for q in scale for k in KINDS for n in LABELS if n >= MINIMUM[k]}
    assert set(coverage) == expected  # every interval type at every n at or above its minimum was checked
