"""Ranking metrics against hand-computed values, pytrec_eval and ranx on generated data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from metrics_helpers import generate

from foundry_bridge.dataset.records import GroundTruthLabel, QueryRecord, RetrievedDocument
from foundry_bridge.metrics import ranking_metrics
from foundry_bridge.metrics.ranking import nan_mean
from foundry_bridge.report._aggregate import aggregate_local

KS = (1, 3, 5, 10, 20)


def rec(qid: str, docs: list[str], labels: dict[str, int] | None, kind: str = "positive") -> QueryRecord:
    return QueryRecord(
        query_id=qid,
        kind=kind,
        retrieved_documents=[
            RetrievedDocument(document_id=d, relevance_score=1.0 / (i + 1)) for i, d in enumerate(docs)
        ],
        retrieval_ground_truth=None
        if labels is None
        else [GroundTruthLabel(document_id=d, query_relevance_label=v) for d, v in labels.items()],
    )


# -- the worked example -----------------------------------------------------------------------------------------
def test_worked_example_mrr() -> None:
    base = [
        rec("a", ["r", "x", "y"], {"r": 1}),
        rec("b", ["x", "y", "z", "r"], {"r": 1}),
        rec("c", ["x", "y", "z"] + [f"n{i}" for i in range(10)] + ["r"], {"r": 1}),
    ]
    result = ranking_metrics(base, ks=(10,))
    assert [row["rr@10"] for row in result.per_query] == [1.0, 0.25, 0.0]
    assert result.summary["positive"]["rr@10"] == pytest.approx(0.4167, abs=5e-5)
    moved = [base[0], rec("b", ["x", "r", "y", "z"], {"r": 1}), base[2]]
    assert ranking_metrics(moved, ks=(10,)).summary["positive"]["rr@10"] == pytest.approx(0.5)


def test_hand_computed_values() -> None:
    # labels a=3 (rank 2), b=1 (rank 4), c=2 not retrieved; x, y unlabelled; threshold 2
    r = rec("q", ["x", "a", "y", "b"], {"a": 3, "b": 1, "c": 2})
    row = ranking_metrics([r], ks=(3, 5), relevance_threshold=2).per_query[0]
    assert row["n_rel"] == 2
    assert row["rr@3"] == 0.5
    assert row["recall@3"] == 0.5
    assert row["precision@5"] == pytest.approx(1 / 5)  # divides by k although only 4 were retrieved
    assert row["hit@3"] == 1.0
    assert row["distracting@3"] == 1.0
    dcg = 3 / math.log2(3) + 1 / math.log2(5)  # label 1 still has gain: the threshold does not apply to gains
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert row["ndcg@5"] == pytest.approx(dcg / idcg)
    dcg_e = 7 / math.log2(3) + 1 / math.log2(5)
    idcg_e = 7 / math.log2(2) + 3 / math.log2(3) + 1 / math.log2(4)
    assert row["ndcg_exp@5"] == pytest.approx(dcg_e / idcg_e)


def test_duplicates_count_at_first_position() -> None:
    # x, a, x, b with b relevant: the repeat of x is removed, so b moves up to rank 3
    row = ranking_metrics([rec("q", ["x", "a", "x", "b"], {"b": 1})], ks=(3,)).per_query[0]
    assert row["rr@3"] == pytest.approx(1 / 3)
    assert row["precision@3"] == pytest.approx(1 / 3)
    # a relevant document repeated is counted once
    row = ranking_metrics([rec("q", ["a", "a", "b"], {"a": 1, "b": 1})], ks=(2,)).per_query[0]
    assert row["recall@2"] == 1.0 and row["precision@2"] == 1.0


def test_undefined_and_nan_policies() -> None:
    records = [
        rec("p1", ["a"], {"a": 1}),  # rr 1
        rec("p2", ["x", "a"], {"a": 1}),  # rr 0.5
        rec("p3", ["x"], {"x": 0}),  # no relevant label: undefined
    ]
    for policy, expected in (("propagate", None), ("drop", 0.75), ("zerofill", 0.5)):
        result = ranking_metrics(records, ks=(10,), nan_policy=policy)
        assert result.summary["positive"]["rr@10"] == (pytest.approx(expected) if expected is not None else None)
        assert result.summary["positive"]["undefined"] == 1
        assert result.summary["positive"]["queries"] == 3
        assert result.params["nan_policy"] == policy
    row = ranking_metrics(records, ks=(10,)).per_query[2]
    assert row["rr@10"] is None and row["recall@10"] is None and row["precision@10"] is None
    assert row["hit@10"] is None and row["ndcg@10"] is None
    assert row["distracting@10"] == 1.0  # always defined
    # label 1 below threshold 2: rr undefined, ndcg still defined (gain 1)
    row = ranking_metrics([rec("q", ["a"], {"a": 1})], ks=(1,), relevance_threshold=2).per_query[0]
    assert row["rr@1"] is None and row["ndcg@1"] == 1.0


def test_a_summary_mean_adds_the_queries_left_to_right_as_the_report_does() -> None:
    # first relevant document at ranks 3..10: numpy's pairwise mean and the left-to-right sum differ in the last bit
    records = [rec(f"q{r}", [f"n{i}" for i in range(r - 1)] + ["r"], {"r": 1}) for r in range(3, 11)]
    result = ranking_metrics(records, ks=(10,))
    rr = [row["rr@10"] for row in result.per_query]
    assert result.summary["positive"]["rr@10"] == sum(rr) / len(rr)
    assert result.summary["positive"]["rr@10"] == aggregate_local(result.columns["rr@10"], "propagate").mean


def test_nan_mean_under_each_policy() -> None:
    values = np.array([1.0, np.nan, 2.0])
    assert [nan_mean(values, p) for p in ("propagate", "drop", "zerofill")] == [None, 1.5, 1.0]
    assert [nan_mean(np.array([np.nan]), p) for p in ("propagate", "drop", "zerofill")] == [None, None, 0.0]
    assert [nan_mean(np.array([]), p) for p in ("propagate", "drop", "zerofill")] == [None, None, None]
    with pytest.raises(ValueError, match="nan_policy"):
        nan_mean(values, "mean")


def test_positive_and_negative_never_mixed() -> None:
    records = [rec("p", ["a"], {"a": 1}), rec("n", ["a"], {"a": 1}, kind="negative")]
    records[1] = rec("n", ["x", "a"], {"a": 1}, kind="negative")  # a labelling contradiction, still negative
    s = ranking_metrics(records, ks=(2,)).summary
    assert s["positive"]["queries"] == 1 and s["positive"]["rr@2"] == 1.0
    assert s["negative"]["queries"] == 1 and s["negative"]["rr@2"] == 0.5


def test_empty_inputs() -> None:
    result = ranking_metrics([], ks=(5,))
    assert result.per_query == [] and result.summary["positive"]["queries"] == 0
    assert result.summary["positive"]["rr@5"] is None
    row = ranking_metrics([rec("q", [], {"a": 2})], ks=(5,)).per_query[0]
    assert row["rr@5"] == 0.0 and row["recall@5"] == 0.0 and row["ndcg@5"] == 0.0 and row["distracting@5"] == 0.0


def test_rejects_bad_parameters() -> None:
    with pytest.raises(ValueError):
        ranking_metrics([], ks=(0,))
    with pytest.raises(ValueError):
        ranking_metrics([], relevance_threshold=0)
    with pytest.raises(ValueError):
        ranking_metrics([], nan_policy="mean")  # type: ignore[arg-type]


# -- pytrec_eval -------------------------------------------------------------------------------------------------
def _pytrec(qrels: dict, run: dict, threshold: int, ks: tuple[int, ...]) -> dict:
    import pytrec_eval

    cut = ",".join(map(str, ks))
    measures = {f"P.{cut}", f"recall.{cut}", f"success.{cut}", f"ndcg_cut.{cut}"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=threshold).evaluate(run)


def _pytrec_rr(qrels: dict, ranked: dict, threshold: int, k: int) -> dict:
    """recip_rank on runs cut to the top k (trec_eval's recip_rank has no cutoff)."""
    import pytrec_eval

    cut = {q: {d: float(k - i) for i, d in enumerate(docs[:k])} for q, docs in ranked.items()}
    return pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, relevance_level=threshold).evaluate(cut)


@pytest.mark.parametrize(
    ("seed", "label_range", "threshold"),
    [(1, (0, 4), 1), (2, (0, 4), 2), (3, (1, 5), 1), (4, (1, 5), 3), (5, (0, 4), 4)],
)
def test_against_pytrec_eval(seed: int, label_range: tuple[int, int], threshold: int) -> None:
    g = generate(seed, label_range=label_range)
    result = ranking_metrics(g.records, ks=KS, relevance_threshold=threshold)
    rows = {row["query_id"]: row for row in result.per_query}
    # pytrec_eval ranks by score then docid desc; our lists are in that order, so the real scores give the same order
    ref = _pytrec(g.qrels, {q: g.run[q] for q in g.qrels}, threshold, KS)
    compared = 0
    for qid, labels in g.qrels.items():
        row = rows[qid]
        n_rel = sum(v >= threshold for v in labels.values())
        assert row["n_rel"] == n_rel
        has_gain = any(v > 0 for v in labels.values())
        for k in KS:
            rr = _pytrec_rr({qid: labels}, {qid: g.ranked[qid]}, threshold, k)[qid]["recip_rank"]
            expect = {
                "rr": rr,
                "precision": ref[qid][f"P_{k}"],
                "recall": ref[qid][f"recall_{k}"],
                "hit": ref[qid][f"success_{k}"],
            }
            for name, value in expect.items():
                if n_rel == 0:
                    assert row[f"{name}@{k}"] is None and value == 0.0  # library 0, ours undefined
                else:
                    assert row[f"{name}@{k}"] == pytest.approx(value, abs=1e-12), (qid, name, k)
            if has_gain:
                assert row[f"ndcg@{k}"] == pytest.approx(ref[qid][f"ndcg_cut_{k}"], abs=1e-12), (qid, k)
            else:
                assert row[f"ndcg@{k}"] is None and ref[qid][f"ndcg_cut_{k}"] == 0.0
            compared += 1
    assert compared > 400
    # queries pytrec_eval cannot score (no labels, empty label list) are undefined here, never dropped
    for qid in rows.keys() - g.qrels.keys():
        assert rows[qid]["n_rel"] == 0 and rows[qid]["rr@10"] is None
    assert result.summary["positive"]["queries"] == len(g.records)


def test_ndcg_exp_against_pytrec_eval_with_remapped_gains() -> None:
    """2^label − 1 gains: trec_eval's ndcg_cut on qrels whose labels were rewritten to 2^label − 1."""
    g = generate(11, label_range=(0, 4))
    result = ranking_metrics(g.records, ks=KS)
    rows = {row["query_id"]: row for row in result.per_query}
    exp_qrels = {q: {d: (2**v - 1 if v > 0 else v) for d, v in labels.items()} for q, labels in g.qrels.items()}
    ref = _pytrec(exp_qrels, {q: g.run[q] for q in g.qrels}, 1, KS)
    for qid, labels in g.qrels.items():
        for k in KS:
            if any(v > 0 for v in labels.values()):
                assert rows[qid][f"ndcg_exp@{k}"] == pytest.approx(ref[qid][f"ndcg_cut_{k}"], abs=1e-12)


# -- ranx ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("seed", "label_range", "threshold"), [(21, (0, 4), 1), (22, (1, 5), 2)])
def test_against_ranx(seed: int, label_range: tuple[int, int], threshold: int) -> None:
    from ranx import Qrels, Run, evaluate

    g = generate(seed, label_range=label_range)
    # ranx: queries with at least one relevant label and a non-empty run (it returns 0 where we return NaN)
    qids = [q for q, labels in g.qrels.items() if g.ranked[q] and any(v >= threshold for v in labels.values())]
    qrels = Qrels({q: g.qrels[q] for q in qids})
    run = Run({q: g.run[q] for q in qids})  # strictly decreasing scores: no tie for ranx's unstable sort
    names = []
    for k in KS:
        names += [f"mrr@{k}-l{threshold}", f"precision@{k}-l{threshold}", f"recall@{k}-l{threshold}"]
        names += [f"hit_rate@{k}-l{threshold}"]
        if threshold == 1:  # ranx zeroes gains below the threshold; trec_eval (and we) do not
            names += [f"ndcg@{k}", f"ndcg_burges@{k}"]
    evaluate(qrels, run, names, return_mean=False, make_comparable=True)
    rows = {row["query_id"]: row for row in ranking_metrics(g.records, ks=KS, relevance_threshold=threshold).per_query}
    ours = {
        "mrr": "rr",
        "precision": "precision",
        "recall": "recall",
        "hit_rate": "hit",
        "ndcg": "ndcg",
        "ndcg_burges": "ndcg_exp",
    }
    checked = 0
    for name in names:
        metric, rest = name.split("@")
        k = int(rest.split("-")[0])
        values = run.scores[name]
        for qid in qids:
            assert rows[qid][f"{ours[metric]}@{k}"] == pytest.approx(values[qid], abs=1e-9), (qid, name)
            checked += 1
    assert checked > 500


def test_columns_are_arrays_aligned_with_query_ids() -> None:
    g = generate(31, n_queries=20)
    result = ranking_metrics(g.records, ks=(3,))
    assert len(result.columns["rr@3"]) == len(result.query_ids) == 20
    assert isinstance(result.columns["rr@3"], np.ndarray)
