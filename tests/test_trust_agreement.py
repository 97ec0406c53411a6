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
