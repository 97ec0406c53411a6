"""The negative-query report and the abstention heuristic, on the benefits sample and by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from foundry_bridge.dataset import read_records
from foundry_bridge.dataset.records import GroundTruthLabel, QueryRecord, RetrievedDocument
from foundry_bridge.mapping import load_mapping
from foundry_bridge.metrics import is_abstention, negative_query_report
from foundry_bridge.metrics.negative import roc_auc


@pytest.fixture
def sample(benefits_jsonl: Path) -> list[QueryRecord]:
    return list(read_records(benefits_jsonl, load_mapping(None)))


def test_sample_negative_report(sample: list[QueryRecord]) -> None:
    report = negative_query_report(sample, k=10, relevance_threshold=1, surface_threshold=0.6)
    rows = {row["query_id"]: row for row in report["per_query"]}
    assert set(rows) == {"n01", "n02", "n03"}
    # n01 / n02 declared negative; n03 has no kind and no label >= 1
    assert rows["n01"]["kind_source"] == "declared" and rows["n03"]["kind_source"] == "labels"
    assert rows["n03"]["rule"] == "no label >= 1"
    # n02 surfaced two passages above 0.6 (0.78, 0.64) and answered anyway
    assert rows["n02"]["surfaced"] == 2 and rows["n02"]["top_score"] == 0.78 and rows["n02"]["abstains"] is False
    assert rows["n01"]["surfaced"] == 0 and rows["n03"]["surfaced"] == 0
    # n01 and n03 abstain
    assert rows["n01"]["abstains"] is True and rows["n03"]["abstains"] is True
    assert rows["n01"]["retrieved"] == 3 and rows["n03"]["retrieved"] == 2
    assert all(row["relevant_labelled_in_top_k"] == [] for row in rows.values())
    agg = report["aggregate"]
    assert agg["negatives"] == 3 and agg["by_rule"] == {"declared": 2, "labels": 1}
    assert agg["surfaced_evidence"] == 1 and agg["surfaced_share"] == pytest.approx(1 / 3)
    assert agg["abstained"] == 2 and agg["abstention_rate"] == pytest.approx(2 / 3)
    assert "q08" in agg["positive_abstentions"]  # evidence in the context, yet the answer abstained


def test_sample_top_score_auc_by_pairwise_count(sample: list[QueryRecord]) -> None:
    tops = {r.query_id: max(d.relevance_score for d in r.retrieved_documents) for r in sample}
    neg = [tops[q] for q in ("n01", "n02", "n03")]
    pos = [v for q, v in tops.items() if q.startswith("q")]
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    report = negative_query_report(sample, k=10, relevance_threshold=1, surface_threshold=0.6)
    assert report["aggregate"]["top_score_auc"] == pytest.approx(wins / (len(pos) * len(neg)))
    table = {row["threshold"]: row for row in report["aggregate"]["thresholds"]}
    # abstaining below 0.6 suppresses n01 (0.41) and n03 (0.52) and loses no positive (lowest positive top: 0.61)
    assert table[0.6]["negatives_suppressed"] == pytest.approx(2 / 3)
    assert table[0.6]["positives_lost"] == 0.0


def test_roc_auc_ties_count_half() -> None:
    assert roc_auc(np.array([1.0, 1.0]), np.array([1.0])) == 0.5
    assert roc_auc(np.array([2.0, 3.0]), np.array([1.0])) == 1.0
    assert roc_auc(np.array([0.0]), np.array([1.0, 2.0])) == 0.0
    rng = np.random.default_rng(0)
    pos, neg = rng.integers(0, 5, 40).astype(float), rng.integers(0, 5, 30).astype(float)
    brute = np.mean([(p > n) + 0.5 * (p == n) for p in pos for n in neg])
    assert roc_auc(pos, neg) == pytest.approx(brute)
    assert np.isnan(roc_auc(pos, np.array([])))


def test_labelling_contradiction_and_no_threshold() -> None:
    rec = QueryRecord(
        query_id="n",
        kind="negative",
        retrieved_documents=[RetrievedDocument(document_id=d, relevance_score=s) for d, s in (("a", 0.9), ("b", 0.2))],
        retrieval_ground_truth=[GroundTruthLabel(document_id="b", query_relevance_label=2)],
        response="Here is the answer.",
    )
    report = negative_query_report([rec], k=10, relevance_threshold=1)
    row = report["per_query"][0]
    assert row["relevant_labelled_in_top_k"] == ["b"]
    assert row["surfaced"] is None and row["abstains"] is False
    assert report["aggregate"]["labelling_contradictions"] == 1
    assert report["aggregate"]["top_score_auc"] is None  # no positive query to compare with


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm sorry, I don't have information about that.", True),
        ("I couldn’t find anything about pet insurance.", True),  # typographic apostrophe
        ("The documents DO NOT MENTION a sabbatical.", True),
        ("You get 16 weeks of paid parental leave.", False),
        ("", False),
        (None, False),
    ],
)
def test_is_abstention(text: str | None, expected: bool) -> None:
    assert is_abstention(text) is expected


def test_is_abstention_custom_phrases() -> None:
    assert is_abstention("Keine Angabe in den Unterlagen.", ["keine angabe"])
    assert not is_abstention("I don't know.", ["keine angabe"])
    assert not is_abstention("I don't know.", [])
