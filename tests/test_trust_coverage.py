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
"""

from __future__ import annotations

import math
from collections import defaultdict

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
MC_SE = math.sqrt(0.95 * 0.05 / REPS)
TOLERANCE = 0.95 - 3 * MC_SE
KINDS = ("judge_only", "human_only", "ppi", "ppi_plus")
MINIMUM = {"judge_only": 0, "human_only": MIN_HUMAN_LABELS, "ppi": MIN_LABELS, "ppi_plus": MIN_LABELS}


def _truths() -> dict[tuple[str, str], float]:
    """(quantity, estimate kind) → the population value it estimates."""
    values = np.array(SCALE)
    judge = P_HUMAN @ JUDGE_GIVEN_HUMAN
    human_truth = {"pass rate": float(P_HUMAN[values >= THRESHOLD].sum()), "mean score": float(P_HUMAN @ values)}
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
    t = judge_trust(
        judge,
        passes(judge, THRESHOLD, True).astype(float),
        labels[None, :],
        np.full((1, ROWS), np.nan),
        threshold=THRESHOLD,
        categories=SCALE,
    )
    return {"pass rate": t.pass_rate, "mean score": t.score_mean}


def test_every_trust_interval_covers_the_truth_and_stays_on_its_scale() -> None:
    human, judge = _runs(np.random.default_rng(SEED))
    truth = _truths()
    scale = {"pass rate": (0.0, 1.0), "mean score": (SCALE[0], SCALE[-1])}
    covered: dict[tuple[str, str, int], int] = defaultdict(int)
    shown: dict[tuple[str, str, int], int] = defaultdict(int)
    wrong: list[str] = []
    for n in LABELS:
        for r in range(REPS):
            for quantity, est in _trust(human[r], judge[r], n).items():
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
