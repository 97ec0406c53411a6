"""The judge-labelled means corrected by human labels (``judged.compare_with_human``, as ``metrics --human-qrels``
calls it) cover the truth and are unbiased: a seeded simulation of a known population.

The population: each query has ``DOCS`` = 20 documents with true grades 0–3 drawn with P = (.55, .20, .15, .10);
the system ranks them by grade + N(0, 1.5²) noise and returns the top ``K`` = 10. The judge grades each returned
document from its true grade by the table ``JUDGE`` (it is right 50–80 % of the time, errs by one grade mostly);
it sees only the returned documents, as ``judge-docs`` does, so its recall@10 is relevant-returned over
relevant-returned: ≈ 1, a large bias only the human labels can correct. The humans know every document's true
grade. The truth (nDCG@10 and recall@10, relevant ⇔ grade ≥ 1, undefined → 0) is the mean over 400,000 queries,
computed here by hand in numpy (not by the project's kernels): its Monte Carlo error (< 0.0005) is far below the
tolerances. Each repetition draws a population of ``QUERIES`` queries and labels the first n (the queries are
independent: a uniform random sample), n in ``LABELS``.

Tolerance: ``REPS`` repetitions estimate a coverage with a Monte Carlo standard error of √(.95·.05/REPS) ≈ 0.018;
an interval passes when its coverage is at least 0.95 − 3 SE ≈ 0.897, and an estimator is unbiased when its mean
error is within 3 Monte Carlo SE of its own spread (plus the truth's error). Observed (seed 7): coverage 0.92–0.98,
|bias| ≤ 0.003.

Queue-drawn labels (seed 8): the first ``PRIOR`` queries labelled, the query queue of ``metrics --queue-out``
(``judged.query_queue``) drawn over the rest, its first n lines labelled, read back (``queue_line``,
``queue_inclusion``) and weighted. Those estimators are design-based: the truth is each population's own mean
(all its queries labelled, by hand), the same tolerances. Observed: coverage 0.90–1.00, |bias| ≤ 0.003 (against the
400,000-query mean PPI at n = 100 covered 0.88: the weighted intervals are for the queries at hand).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from foundry_bridge.judged import compare_with_human, query_queue, queue_inclusion, queue_line
from foundry_bridge.metrics.ppi import WEIGHTED_NOTE

P_TRUE = (0.55, 0.20, 0.15, 0.10)
JUDGE = np.array([[0.80, 0.15, 0.05, 0.0], [0.25, 0.50, 0.20, 0.05], [0.05, 0.20, 0.55, 0.20], [0.0, 0.05, 0.25, 0.70]])
DOCS, K, QUERIES, REPS = 20, 10, 150, 150
LABELS = (10, 30, 100)
SEED = 7


def _draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """True grades (n × DOCS), the ranked top-K document indices, their true grades, the judge's grades."""
    grades = rng.choice(4, size=(n, DOCS), p=P_TRUE)
    order = np.argsort(-(grades + rng.normal(0, 1.5, size=(n, DOCS))), axis=1)[:, :K]
    ranked = np.take_along_axis(grades, order, axis=1)
    judge = (rng.random((n, K))[..., None] > JUDGE.cumsum(axis=1)[ranked]).sum(axis=-1)
    return grades, order, ranked, judge


def _truth(grades: np.ndarray, ranked: np.ndarray) -> dict[str, float]:
    """nDCG@K (gain = grade, 1/log2(rank + 1), ideal over all the query's grades) and recall@K by hand."""
    disc = 1 / np.log2(np.arange(2, K + 2))
    dcg, ideal = (ranked * disc).sum(axis=1), (-np.sort(-grades, axis=1)[:, :K] * disc).sum(axis=1)
    relevant = (grades >= 1).sum(axis=1)
    ndcg = np.where(ideal > 0, dcg / np.maximum(ideal, 1e-300), 0.0)
    recall = np.where(relevant > 0, (ranked >= 1).sum(axis=1) / np.maximum(relevant, 1), 0.0)
    return {f"ndcg@{K}": float(ndcg.mean()), f"recall@{K}": float(recall.mean())}


def _repetition(rng: np.random.Generator, n: int) -> dict[str, dict[str, dict[str, float]]]:
    grades, order, _, judge = _draw(rng, QUERIES)
    rankings = {f"q{i}": [(float(K - r), f"d{order[i, r]}") for r in range(K)] for i in range(QUERIES)}
    judged = {f"q{i}": {f"d{order[i, r]}": int(judge[i, r]) for r in range(K)} for i in range(QUERIES)}
    human = {f"q{i}": {f"d{d}": int(grades[i, d]) for d in range(DOCS)} for i in range(n)}
    return compare_with_human(rankings, judged, human, ks=(K,), threshold=1, resamples=0)["corrected"]


@pytest.fixture(scope="module")
def runs() -> tuple[dict[str, float], dict[int, list[dict[str, dict[str, dict[str, float]]]]]]:
    rng = np.random.default_rng(SEED)
    grades, _, ranked, _ = _draw(rng, 400_000)
    return _truth(grades, ranked), {n: [_repetition(rng, n) for _ in range(REPS)] for n in LABELS}


@pytest.mark.parametrize("n", LABELS)
@pytest.mark.parametrize("estimator", ["ppi", "ppi_plus", "human_only"])
def test_corrected_means_cover_the_truth_and_are_unbiased(runs: tuple, n: int, estimator: str) -> None:
    truth, by_n = runs
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / REPS)
    for metric, theta in truth.items():
        estimates = [rep[metric][estimator] for rep in by_n[n]]
        covered = np.mean([e["low"] <= theta <= e["high"] for e in estimates])
        assert covered >= floor, (metric, n, estimator, covered)
        means = np.array([e["mean"] for e in estimates])
        error = means.mean() - theta
        assert abs(error) <= 3 * means.std(ddof=1) / math.sqrt(REPS) + 0.001, (metric, n, estimator, error)
        assert all(e["low"] >= 0.0 and e["high"] <= 1.0 for e in estimates if estimator == "human_only")


def test_the_judge_alone_is_biased_where_the_correction_is_not(runs: tuple) -> None:
    """The judge's own recall@10 sees only the returned documents: far above the truth, outside its intervals."""
    truth, by_n = runs
    judge_only = np.mean([rep[f"recall@{K}"]["judge_only"]["mean"] for rep in by_n[30]])
    assert judge_only - truth[f"recall@{K}"] > 0.2


# -- queue-drawn labels: the query queue of `metrics --queue-out`, its first n lines labelled -------------------
PRIOR = 10  # queries labelled before the queue is drawn (the first ones: a uniform sample): the queue's strata


def _queue_repetition(rng: np.random.Generator, n: int) -> tuple[dict[str, Any], dict[str, float]]:
    """A population, ``PRIOR`` queries labelled, the queue (``judged.query_queue``, as `metrics --queue-out` writes
    it, a fresh seed) over the rest, its first ``n`` lines labelled, read back (``queue_inclusion``) and weighted;
    and the population's own means (every query labelled), by hand."""
    grades, order, ranked, judge = _draw(rng, QUERIES)
    rankings = {f"q{i}": [(float(K - r), f"d{order[i, r]}") for r in range(K)] for i in range(QUERIES)}
    judged = {f"q{i}": {f"d{order[i, r]}": int(judge[i, r]) for r in range(K)} for i in range(QUERIES)}
    truth = {f"q{i}": {f"d{d}": int(grades[i, d]) for d in range(DOCS)} for i in range(QUERIES)}
    prior = {q: truth[q] for q in list(truth)[:PRIOR]}
    lines = query_queue(rankings, judged, prior, k=K, threshold=1, seed=int(rng.integers(2**31)))
    human = prior | {line["query_id"]: truth[line["query_id"]] for line in lines[:n]}
    read = [queue_line(d, "queue", i) for i, d in enumerate(lines, 1)]
    inclusion = queue_inclusion(read, human, rankings)
    assert inclusion.prefix == n and not inclusion.beyond and len(inclusion.probability) == n + PRIOR
    corrected = compare_with_human(
        rankings, judged, human, ks=(K,), threshold=1, resamples=0, probability=inclusion.probability
    )["corrected"]
    return corrected, _truth(grades, ranked)


@pytest.fixture(scope="module")
def queued() -> dict[int, list[tuple[dict[str, Any], dict[str, float]]]]:
    rng = np.random.default_rng(SEED + 1)
    return {n: [_queue_repetition(rng, n) for _ in range(REPS)] for n in LABELS}


@pytest.mark.parametrize("n", LABELS)
@pytest.mark.parametrize("estimator", ["ppi", "ppi_plus", "human_only"])
def test_queue_drawn_labels_weighted_back_cover_the_truth_and_are_unbiased(
    queued: dict, n: int, estimator: str
) -> None:
    """The estimand of the weighted (design-based) estimators is the mean the humans would give the population's
    queries, all labelled: each repetition's own truth."""
    floor = 0.95 - 3 * math.sqrt(0.95 * 0.05 / REPS)
    for metric in (f"ndcg@{K}", f"recall@{K}"):
        assert all(rep[metric]["design"] == WEIGHTED_NOTE for rep, _ in queued[n])
        estimates = [(rep[metric][estimator], truth[metric]) for rep, truth in queued[n]]
        covered = np.mean([e["low"] <= theta <= e["high"] for e, theta in estimates])
        errors = np.array([e["mean"] - theta for e, theta in estimates])
        assert covered >= floor, (metric, n, estimator, covered)
        assert abs(errors.mean()) <= 3 * errors.std(ddof=1) / math.sqrt(REPS) + 0.001, (metric, n, estimator)
