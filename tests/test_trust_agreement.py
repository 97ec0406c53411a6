"""Agreement statistics against scikit-learn and the krippendorff package, and hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from foundry_bridge.dataset.records import GroundTruthLabel, QueryRecord, RetrievedDocument
from foundry_bridge.metrics.agreement import (
    agreement,
    cohen_kappa,
    confusion_matrix,
    context_holds_relevant,
    kappa_interval,
    krippendorff_alpha,
    most_disagreeing,
    weighted_kappa,
)

sklearn_metrics = pytest.importorskip("sklearn.metrics")
krippendorff = pytest.importorskip("krippendorff")


def _scores(seed: int, n: int, noise: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=n)
    judge = np.clip(human + np.round(rng.normal(0.4, noise, size=n)), 1, 5).astype(int)
    return judge, human


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cohen_kappa_matches_scikit_learn_on_pass_fail(seed: int) -> None:
    judge, human = _scores(seed, 200, 1.2)
    jp, hp = (judge >= 3).astype(int), (human >= 3).astype(int)
    assert cohen_kappa(jp, hp) == pytest.approx(sklearn_metrics.cohen_kappa_score(jp, hp), abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_quadratic_weighted_kappa_matches_scikit_learn_on_1_to_5(seed: int) -> None:
    judge, human = _scores(seed, 150, 1.0)
    expected = sklearn_metrics.cohen_kappa_score(judge, human, labels=[1, 2, 3, 4, 5], weights="quadratic")
    assert weighted_kappa(judge, human, categories=range(1, 6)) == pytest.approx(expected, abs=1e-12)
    linear = sklearn_metrics.cohen_kappa_score(judge, human, labels=[1, 2, 3, 4, 5], weights="linear")
    assert weighted_kappa(judge, human, categories=range(1, 6), weights="linear") == pytest.approx(linear, abs=1e-12)


def test_confusion_matrix_matches_scikit_learn_and_drops_missing_rows() -> None:
    judge, human = _scores(3, 80, 1.0)
    expected = sklearn_metrics.confusion_matrix(judge, human, labels=[1, 2, 3, 4, 5])
    assert confusion_matrix(judge, human, categories=range(1, 6)).tolist() == expected.tolist()
    with_nan = np.append(judge.astype(float), np.nan)
    assert confusion_matrix(with_nan, np.append(human, 3), categories=range(1, 6)).tolist() == expected.tolist()


@pytest.mark.parametrize("level", ["ordinal", "nominal", "interval"])
@pytest.mark.parametrize("seed", [0, 1])
def test_krippendorff_alpha_matches_the_krippendorff_package(level: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=40)
    data = np.clip(truth + rng.integers(-1, 2, size=(4, 40)), 1, 5).astype(float)
    data[rng.random(data.shape) < 0.25] = np.nan  # raters skip some rows
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert krippendorff_alpha(data, level=level) == pytest.approx(expected, abs=1e-10)


def test_krippendorff_alpha_hand_case() -> None:
    # two raters in full agreement except one unit: nominal α from the coincidence matrix by hand
    # pairable values: units (1,1),(2,2),(1,2) → o11=2, o22=2, o12=o21=1, n1=n2=3, n=6
    # α = 1 − (n−1)·D_o/D_e = 1 − 5·2 / (2·3·3) = 4/9
    data = [[1, 2, 1], [1, 2, 2]]
    assert krippendorff_alpha(data, level="nominal") == pytest.approx(4 / 9)


def test_kappa_of_an_always_pass_judge_is_zero_beside_its_base_rates() -> None:
    judge = [1] * 10
    human = [1] * 9 + [0]
    result = agreement(judge, human)
    assert result.observed == pytest.approx(0.9)
    assert result.kappa == pytest.approx(0.0)
    assert result.judge_rates == [0.0, 1.0] and result.reference_rates == pytest.approx([0.1, 0.9])
    assert result.weighted_kappa is None
    assert result.confusion == [[0, 0], [1, 9]]


def test_undefined_kappa_is_nan_not_zero() -> None:
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))  # chance agreement is already 1
    assert math.isnan(cohen_kappa([np.nan], [1]))


def test_most_disagreeing_rows_are_sorted_by_gap_then_index() -> None:
    rows = most_disagreeing([5, 1, 3, 5, np.nan], [1, 1, 2, 1, 1], top=3)
    assert [(r.index, r.gap) for r in rows] == [(0, 4.0), (3, 4.0), (2, 1.0)]


def test_agreement_on_the_scale_counts_missing_rows() -> None:
    result = agreement([5, 4, np.nan, 1], [5, 3, 2, 2], categories=range(1, 6))
    assert result.n == 3 and result.n_missing == 1
    assert result.weighted_kappa is not None
    assert [d.index for d in result.disagreements] == [1, 3]


def _record(context: str | None, labels: dict[str, int] | None, docs: dict[str, str | None]) -> QueryRecord:
    return QueryRecord(
        query_id="q",
        context=context,
        retrieved_documents=[RetrievedDocument(document_id=d, content=c) for d, c in docs.items()],
        retrieval_ground_truth=None
        if labels is None
        else [GroundTruthLabel(document_id=d, query_relevance_label=v) for d, v in labels.items()],
    )


def test_context_holds_relevant_reads_the_qrels() -> None:
    docs = {"a": "Leave is 16 weeks.", "b": "Sick leave is 10 days."}
    assert context_holds_relevant(_record("Leave is 16   weeks.\n\nOther.", {"a": 2, "b": 0}, docs)) is True
    assert context_holds_relevant(_record("Sick leave is 10 days.", {"a": 2, "b": 0}, docs)) is False
    assert context_holds_relevant(_record("anything", {"b": 0}, docs)) is False  # no relevant document at all
    assert context_holds_relevant(_record(None, {"a": 2}, docs)) is None
    assert context_holds_relevant(_record("x", None, docs)) is None
    assert context_holds_relevant(_record("x", {"a": 2}, {"a": None})) is None
    assert context_holds_relevant(_record("Sick leave is 10 days.", {"b": 1}, docs), relevance_threshold=2) is False


def test_judge_trust_pools_rater_pairs_and_derives_pass_from_the_threshold() -> None:
    from foundry_bridge.metrics.agreement import judge_trust

    judge = np.array([5, 4, 2, 5, 1, 3, 4, 5, 2, 5], dtype=float)
    judge_pass = (judge >= 3).astype(float)
    humans = np.array(
        [
            [5, 3, 1, 4, 1, 3, np.nan, np.nan, np.nan, np.nan],
            [4, 3, 2, np.nan, 1, 2, 4, np.nan, np.nan, np.nan],
        ]
    )
    got = judge_trust(judge, judge_pass, humans, np.full_like(humans, np.nan), threshold=3, categories=range(1, 6))
    assert got.n_rows == 10 and got.n_labeled == 7 and got.raters == 2
    keep = ~np.isnan(humans.ravel())
    pairs_j, pairs_h = np.tile(judge, 2)[keep].astype(int), humans.ravel()[keep].astype(int)
    expected = sklearn_metrics.cohen_kappa_score(pairs_j, pairs_h, labels=[1, 2, 3, 4, 5], weights="quadratic")
    assert got.on_scale is not None and got.on_scale.weighted_kappa == pytest.approx(expected)
    assert got.on_pass is not None
    assert got.on_pass.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score(pairs_j >= 3, pairs_h >= 3))
    alpha = krippendorff.alpha(reliability_data=humans, level_of_measurement="ordinal")
    assert got.alpha_humans == pytest.approx(alpha)
    with_judge = krippendorff.alpha(reliability_data=np.vstack([humans, judge]), level_of_measurement="ordinal")
    assert got.alpha_with_judge == pytest.approx(with_judge)
    assert got.score_mean is not None and got.score_mean.ppi_plus is not None
    assert got.score_mean.human_only.n_labeled == 7  # the raters' mean per row
    assert got.missing == []


def test_judge_trust_without_verdicts_says_what_is_missing() -> None:
    from foundry_bridge.metrics.agreement import judge_trust

    got = judge_trust([5, 4, 1], [1, 1, 0], np.empty((0, 3)), np.empty((0, 3)), threshold=3)
    assert got.on_scale is None and got.on_pass is None and got.alpha_humans is None and got.n_labeled == 0
    assert got.missing == [
        "no human scores on rows the judge scored",
        "no human pass/fail verdicts on rows the judge scored",
        "Krippendorff's α needs two raters on at least one row",
    ]
    assert got.pass_rate is not None and got.pass_rate.judge_only.mean == pytest.approx(2 / 3)
    assert got.pass_rate.ppi is None


def test_qrels_check_scores_the_retrieval_judge_without_human_work() -> None:
    from foundry_bridge.metrics.agreement import qrels_check

    docs = {"a": "Leave is 16 weeks.", "b": "Sick leave is 10 days."}
    records = [
        _record("Leave is 16 weeks.", {"a": 2}, docs),  # holds a relevant document
        _record("Sick leave is 10 days.", {"a": 2, "b": 0}, docs),  # holds none
        _record("Leave is 16 weeks. Sick leave is 10 days.", {"a": 1}, docs),  # holds one
        _record("Sick leave is 10 days.", {"a": 3}, docs),  # holds none
        _record(None, {"a": 3}, docs),  # unknown: no context
    ]
    judge = [1.0, 1.0, 1.0, 0.0, 1.0]  # passes the second although its context has nothing relevant
    got = qrels_check(records, judge)
    assert got.n == 4 and got.n_missing == 1
    assert got.confusion == [[1, 0], [1, 2]]  # judge rows (fail, pass) × qrels columns (none, relevant)
    assert got.kappa == pytest.approx(sklearn_metrics.cohen_kappa_score([1, 1, 1, 0], [1, 0, 1, 0]))
    assert [d.index for d in got.disagreements] == [1]


def test_judge_noise_recovers_a_known_spread_and_counts_flips() -> None:
    from foundry_bridge.metrics.agreement import judge_noise

    rng = np.random.default_rng(12)
    truth = rng.uniform(1, 5, 3000)
    scores = truth + rng.normal(0, 0.7, (4, 3000))  # the judge's own noise: sd 0.7
    noise = judge_noise(scores)
    assert noise.repeats == 4 and noise.rows == 3000
    assert noise.noise_sd == pytest.approx(0.7, rel=0.03)
    assert noise.alpha_level == "interval"
    small = np.round(scores[:, :300], 1)  # the package builds a values × values matrix: keep it small
    expected = krippendorff.alpha(reliability_data=small, level_of_measurement="interval")
    assert judge_noise(small).alpha == pytest.approx(expected)
    passed = np.array([[1, 1, 0, 1, np.nan], [1, 0, 0, np.nan, np.nan], [1, 1, 0, 0, 1]], dtype=float)
    by_hand = judge_noise(np.ones_like(passed), passed)
    assert by_hand.flip_rate == pytest.approx(2 / 4) and by_hand.flaky == [1, 3]  # row 4 was judged once
    ordinal = np.array([[1, 2, 3, 4, 5, 3], [1, 3, 3, 4, 4, 3], [2, 2, 3, 5, 5, np.nan]])
    assert judge_noise(ordinal).alpha == pytest.approx(
        krippendorff.alpha(reliability_data=ordinal, level_of_measurement="ordinal")
    )


def test_noise_band_holds_the_difference_of_two_runs_of_the_same_system() -> None:
    """Two runs of one system, judged with noise sd 0.8, 3 repeats, 400 rows: the difference of their means falls
    inside the band about 95 % of the time (600 seeded replicates, bounds ±4 standard errors)."""
    from foundry_bridge.metrics.agreement import noise_band

    rng = np.random.default_rng(3)
    truth = rng.uniform(1, 5, 400)
    band = noise_band(0.8, 400, 3)
    assert band == pytest.approx(1.959963984540054 * 0.8 * math.sqrt(2 / 1200))
    inside = 0
    for _ in range(600):
        a = (truth + rng.normal(0, 0.8, (3, 400))).mean(axis=0)
        b = (truth + rng.normal(0, 0.8, (3, 400))).mean(axis=0)
        inside += abs(b.mean() - a.mean()) <= band
    assert 0.91 <= inside / 600 <= 0.99


KAPPA_SEED = 20240624
# a known population: human 1–5 scores P_HUMAN, the judge's score drawn by JUDGE_GIVEN_HUMAN (row: human score)
P_HUMAN = np.array([0.15, 0.20, 0.20, 0.25, 0.20])
JUDGE_GIVEN_HUMAN = np.array(
    [
        [0.60, 0.25, 0.10, 0.05, 0.00],
        [0.10, 0.75, 0.10, 0.05, 0.00],
        [0.00, 0.05, 0.55, 0.35, 0.05],
        [0.00, 0.02, 0.08, 0.60, 0.30],
        [0.00, 0.00, 0.05, 0.25, 0.70],
    ]
)


def _population_kappa(joint: np.ndarray, weights: np.ndarray) -> float:
    """κ of a population from its joint table P[judge, human], by the definition: 1 − Σw·P / Σw·(p_judge ⊗ p_human)."""
    chance = np.outer(joint.sum(axis=1), joint.sum(axis=0))
    return float(1 - (weights * joint).sum() / (weights * chance).sum())


@pytest.mark.parametrize("weighted", [False, True])
def test_kappa_interval_covers_the_population_kappa(weighted: bool) -> None:
    """300 seeded samples of 40 rows from a known population: the 95 % bootstrap interval of κ on pass/fail
    (score ≥ 3) and of quadratic-weighted κ on 1–5 covers the population's κ at least 0.95 − 3 Monte Carlo SE
    (0.912) of the time (measured: 0.923 both), never leaves [−1, 1] and is never of zero width (a sample where
    every row agrees gives κ = 1 in every resample: no interval, counted as a miss)."""
    joint = (P_HUMAN[:, None] * JUDGE_GIVEN_HUMAN).T  # judge × human
    values = np.arange(1.0, 6.0)
    if weighted:
        truth = _population_kappa(joint, (values[:, None] - values[None, :]) ** 2)
    else:
        passed = values >= 3
        two = np.array([[joint[np.ix_(passed == a, passed == b)].sum() for b in (False, True)] for a in (False, True)])
        truth = _population_kappa(two, 1 - np.eye(2))
    rng = np.random.default_rng(KAPPA_SEED + weighted)
    reps, rows = 300, 40
    cells = rng.choice(25, size=(reps, rows), p=joint.ravel())
    judge, human = cells // 5 + 1.0, cells % 5 + 1.0
    covered = 0
    for r in range(reps):
        if weighted:
            low, high = kappa_interval(judge[r], human[r], categories=values, weights="quadratic", seed=r)
        else:
            low, high = kappa_interval(judge[r] >= 3, human[r] >= 3, categories=(0, 1), seed=r)
        if math.isnan(low):  # every resample the same κ (every row agreeing): no interval, counted as a miss
            assert math.isnan(high)
            continue
        assert -1 <= low < high <= 1
        covered += low <= truth <= high
    assert covered / reps >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / reps), (truth, covered / reps)


@pytest.mark.parametrize("weights", [None, "quadratic"])
def test_kappa_interval_is_as_wide_as_the_asymptotic_one_on_many_rows(weights: str | None) -> None:
    """On 600 rows the bootstrap interval's half-width is statsmodels' asymptotic 1.96·SE(κ) within 10 %, around
    the same κ."""
    from statsmodels.stats.inter_rater import cohens_kappa

    joint = (P_HUMAN[:, None] * JUDGE_GIVEN_HUMAN).T
    cells = np.random.default_rng(KAPPA_SEED).choice(25, size=600, p=joint.ravel())
    judge, human = cells // 5 + 1.0, cells % 5 + 1.0
    table = confusion_matrix(judge, human, categories=range(1, 6))
    ref = cohens_kappa(table, wt=weights)
    low, high = kappa_interval(judge, human, categories=range(1, 6), weights=weights)  # type: ignore[arg-type]
    assert (high - low) / 2 == pytest.approx(1.959964 * ref.std_kappa, rel=0.1)
    assert low < ref.kappa < high


def test_kappa_interval_resamples_rows_with_all_their_raters() -> None:
    """Two raters on every row who agree with each other: resampling pairs would treat them as independent rows
    and narrow the interval; resampling rows keeps them together — as wide as one rater's."""
    rng = np.random.default_rng(3)
    judge = rng.integers(0, 2, 30).astype(float)
    human = np.where(rng.random(30) < 0.8, judge, 1 - judge)
    one = kappa_interval(judge, human)
    two = kappa_interval(np.tile(judge, 2), np.tile(human, 2), rows=np.tile(np.arange(30), 2))
    pairs = kappa_interval(np.tile(judge, 2), np.tile(human, 2))
    assert two[1] - two[0] == pytest.approx(one[1] - one[0], rel=0.15)
    assert pairs[1] - pairs[0] < 0.85 * (two[1] - two[0])
