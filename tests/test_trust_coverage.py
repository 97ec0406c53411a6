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

Queue-selected labels (#24 item 2): the same populations, labelled by the product's own verdict queue
(``queue_sample``: Poisson sampling with E[labels] = n, π by the judge's score stratum and by a second judge
disagreeing on pass/fail, floored), each label's π passed to ``judge_trust`` as the report reads it back; one rater,
or the rater pool above. The truth is the run's own humans' mean (the estimand of a design-weighted mean). The
labels actually drawn vary (E[n] = 3 often draws none or two): below each minimum the estimate must say so; an
interval type is scored at an n where it was shown on ``MIN_SHOWN`` runs or more. Every coverage must be at least
0.95 − 3 Monte Carlo SE of its own count (≈ 0.904 on 200 runs), and the corrected means (PPI, PPI++; E[n] ≥ 10)
unbiased within 3 Monte Carlo SE.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable

import numpy as np

from foundry_bridge.metrics.agreement import judge_trust
from foundry_bridge.metrics.ppi import MIN_HUMAN_LABELS, MIN_LABELS, MeanEstimates, queue_sample
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
QUEUE_REPS = 200
MIN_SHOWN = 50  # an interval type shown on fewer runs (the queue drew too few labels) is not scored
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


def _judge_trust(
    judge: np.ndarray, labels: np.ndarray, probability: np.ndarray | None = None
) -> dict[str, MeanEstimates | None]:
    t = judge_trust(
        judge,
        passes(judge, THRESHOLD, True).astype(float),
        labels,
        np.full(labels.shape, np.nan),
        threshold=THRESHOLD,
        categories=SCALE,
        resamples=0,  # α's and κ's bootstraps are not what this checks
        probability=probability,
    )
    return {"pass rate": t.pass_rate, "mean score": t.score_mean}


def _rated(rng: np.random.Generator, human: np.ndarray, n: int | np.ndarray) -> np.ndarray:
    """The POOL × ROWS matrix of ratings of the first n rows (or of the rows given): two random raters on half of
    them, one on the rest."""
    rows = np.arange(n) if isinstance(n, int) else n
    labels = np.full((POOL, ROWS), np.nan)
    raters = np.argsort(rng.random((rows.size, POOL)), axis=1)[:, :2]  # two distinct raters per row, random order
    two = rng.random(rows.size) < 0.5
    ratings = _draw(rng, RATER_GIVEN_SCORE, np.repeat(human[rows], 2).reshape(rows.size, 2))
    labels[raters[:, 0], rows] = ratings[:, 0]
    labels[raters[two, 1], rows[two]] = ratings[two, 1]
    return labels


def _draw(rng: np.random.Generator, table: np.ndarray, given: np.ndarray) -> np.ndarray:
    """A score 1–5 for each cell of ``given`` (a score 1–5) from the row ``given`` of ``table``."""
    cum = np.cumsum(table[given.astype(int) - 1], axis=-1)
    return (rng.random(given.shape)[..., None] > cum[..., :-1]).sum(axis=-1) + 1.0


def test_every_trust_interval_covers_the_truth_and_stays_on_its_scale() -> None:
    human, judge = _runs(np.random.default_rng(SEED))
    _check_coverage(lambda r, n: (_trust(human[r], judge[r], n), _truths()))


def test_intervals_with_one_or_two_raters_per_row_cover_the_mean_rating() -> None:
    rng = np.random.default_rng(SEED + 1)
    human, judge = _runs(rng)
    _check_coverage(lambda r, n: (_judge_trust(judge[r], _rated(rng, human[r], n)), _truths(raters=True)))


Truth = dict[tuple[str, str], float]


def _queue_runs(raters: bool) -> Callable[[int, int], tuple[dict[str, MeanEstimates | None], Truth]]:
    """Runs labelled by the product's own verdict queue (``queue_sample``: Poisson sampling, E[labels] = n, π by
    the judge's score stratum and by a second judge disagreeing on pass/fail, floored), each label's π handed to
    ``judge_trust`` as the report reads it back from the queue file. Truth: the run's own humans' mean (the
    design-based estimand of a weighted mean: the mean over the run's rows of the score — or, with raters, of the
    expected rating; the judge-only interval keeps the judge's population mean)."""
    rng = np.random.default_rng(SEED + 2)
    human, judge = _runs(rng)
    other = _draw(rng, JUDGE_GIVEN_HUMAN, human)  # the second judge, independent given the human score
    spread = (passes(judge, THRESHOLD, True) != passes(other, THRESHOLD, True)).astype(float)
    values = np.array(SCALE)
    rated = RATER_GIVEN_SCORE if raters else np.eye(5)
    expected_score, expected_pass = rated @ values, rated[:, values >= THRESHOLD].sum(axis=1)
    population = _truths()

    def trust(r: int, n: int) -> tuple[dict[str, MeanEstimates | None], Truth]:
        draws = queue_sample(judge[r], np.full(ROWS, np.nan), size=n, spread=spread[r], seed=r + 1000 * n)
        rows = np.array([d.index for d in draws], dtype=np.intp)
        probability = np.full(ROWS, np.nan)
        probability[rows] = [d.probability for d in draws]
        labels = _rated(rng, human[r], rows) if raters else np.full((1, ROWS), np.nan)
        if not raters:
            labels[0, rows] = human[r, rows]
        cells = human[r].astype(int) - 1
        own = {"pass rate": float(expected_pass[cells].mean()), "mean score": float(expected_score[cells].mean())}
        truth = {(q, k): population[q, k] if k == "judge_only" else own[q] for q, k in population}
        return _judge_trust(judge[r], labels, probability), truth

    return trust


def test_queue_selected_intervals_cover_the_runs_truth_and_stay_on_their_scale() -> None:
    _check_coverage(_queue_runs(raters=False), queued=True)


def test_queue_selected_intervals_with_one_or_two_raters_cover_the_mean_rating() -> None:
    _check_coverage(_queue_runs(raters=True), queued=True)


def _check_coverage(
    trust: Callable[[int, int], tuple[dict[str, MeanEstimates | None], Truth]], *, queued: bool = False
) -> None:
    """Coverage of every interval type at every n (``LABELS``; under the queue, the expected n), and on each run:
    every interval on its scale and of non-zero width, and below its minimum (the labels actually drawn) no
    interval but the labels it needs."""
    scale = {"pass rate": (0.0, 1.0), "mean score": (SCALE[0], SCALE[-1])}
    covered: dict[tuple[str, str, int], int] = defaultdict(int)
    shown: dict[tuple[str, str, int], int] = defaultdict(int)
    errors: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    wrong: list[str] = []
    for n in LABELS:
        for r in range(QUEUE_REPS if queued else REPS):
            estimates, truth = trust(r, n)
            for quantity, est in estimates.items():
                assert est is not None
                lo, hi = scale[quantity]
                for kind in KINDS:
                    e = getattr(est, kind)
                    if e is not None and not math.isnan(e.mean):
                        errors[quantity, kind, n].append(e.mean - truth[quantity, kind])
                    minimum = MINIMUM[kind]
                    labelled = est.judge_only.n_labeled
                    if labelled == 0 and kind != "judge_only":
                        continue  # the queue drew no row: no human number at all (the section says so)
                    if labelled < minimum:
                        if e.need_labels != minimum or not (math.isnan(e.low) and math.isnan(e.high)):
                            wrong.append(f"{quantity} {kind} n={labelled}: an interval below {minimum} labels {e}")
                        continue
                    if not lo <= e.low < e.high <= hi:
                        wrong.append(f"{quantity} {kind} n={n}: [{e.low}, {e.high}] off {lo:g}–{hi:g} or zero width")
                    shown[quantity, kind, n] += 1
                    covered[quantity, kind, n] += e.low <= truth[quantity, kind] <= e.high
        if wrong:
            break
    assert not wrong, "\n".join(wrong[:10])
    coverage = {key: covered[key] / shown[key] for key in shown if shown[key] >= MIN_SHOWN}
    table = "\n".join(
        f"{q:10s} {k:10s} n={n:3d}: {c:.3f} ({shown[q, k, n]})" for (q, k, n), c in sorted(coverage.items())
    )
    below = {key: c for key, c in coverage.items() if c < 0.95 - 3 * math.sqrt(0.95 * 0.05 / shown[key])}
    assert not below, f"coverage under 0.95 − 3 Monte Carlo SE:\n{table}"
    expected = {(q, k, n) for q in scale for k in KINDS for n in LABELS if n >= MINIMUM[k]}
    assert expected <= set(coverage)  # every interval type at every n at or above its minimum was checked
    if queued:  # the corrected means are unbiased for the run's truth (E[n] ≥ 10: a run without labels is rare)
        for key in [(q, k, n) for q in scale for k in ("ppi", "ppi_plus") for n in LABELS if n >= MIN_LABELS]:
            err = np.asarray(errors[key])
            se = float(err.std(ddof=1)) / math.sqrt(err.size)
            assert abs(err.mean()) <= 3 * se, (key, err.mean(), se)
