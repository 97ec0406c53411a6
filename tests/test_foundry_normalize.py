"""Output items → ResultRow: the recorded shapes (reference §4.3), both document-retrieval shapes, errors."""

from __future__ import annotations

import pytest

from foundry_bridge.foundry import OutputItem, normalize_item
from foundry_bridge.mapping.plan import CriterionPlan
from foundry_bridge.metrics.docret import normalize_output

F1 = CriterionPlan(name="f1", evaluator="builtin.f1_score")
COHERENCE = CriterionPlan(name="coherence", evaluator="builtin.coherence")
ROUGE = CriterionPlan(name="ROUGEScore", evaluator="builtin.rouge_score")
TNE = CriterionPlan(name="task_navigation_efficiency", evaluator="builtin.task_navigation_efficiency")
DOCRET = CriterionPlan(name="docret", evaluator="builtin.document_retrieval")

# an item as recorded (May 2026, eval_inline_data), trimmed
RECORDED = {
    "object": "eval.run.output_item",
    "id": "3",
    "run_id": "evalrun_x",
    "eval_id": "eval_x",
    "created_at": 1779943303,
    "status": "completed",
    "datasource_item_id": 2,
    "datasource_item": {"query": "q", "response": "r"},
    "results": [
        {
            "type": "azure_ai_evaluator",
            "name": "f1",
            "metric": "f1_score",
            "score": 0.34782608695652173,
            "label": "fail",
            "reason": None,
            "threshold": 0.5,
            "passed": False,
            "status": "completed",
        },
        {
            "type": "azure_ai_evaluator",
            "name": "coherence",
            "metric": "coherence",
            "score": 4,
            "label": "pass",
            "reason": "clear",
            "threshold": 3,
            "passed": True,
            "sample": {"usage": {"total_tokens": 1399}, "finish_reason": "stop"},
        },
    ],
    "sample": {"error": None, "finish_reason": "", "input": [], "output": []},
}


def test_recorded_item_gives_one_row_per_result() -> None:
    rows = normalize_item(RECORDED, offset=10, criteria=[F1, COHERENCE], query_ids=[f"q{i}" for i in range(20)])
    assert [(r.row, r.query_id, r.criterion, r.evaluator, r.metric) for r in rows] == [
        (12, "q12", "f1", "builtin.f1_score", "f1_score"),
        (12, "q12", "coherence", "builtin.coherence", "coherence"),
    ]
    f1, coh = rows
    assert (f1.score, f1.label, f1.passed, f1.threshold, f1.error) == (0.34782608695652173, "fail", False, 0.5, None)
    assert (coh.score, coh.passed, coh.reason) == (4.0, True, "clear")
    # the typed model gives the same rows
    assert normalize_item(OutputItem.model_validate(RECORDED), offset=10, criteria=[F1, COHERENCE], query_ids=[]) == [
        r.model_copy(update={"query_id": None}) for r in rows
    ]


def test_recorded_errored_result_keeps_its_cause() -> None:
    item = {
        "id": "1",
        "datasource_item_id": 0,
        "results": [
            {
                "type": "azure_ai_evaluator",
                "name": "task_navigation_efficiency",
                "metric": "task_navigation_efficiency",
                "score": None,
                "label": None,
                "reason": None,
                "threshold": None,
                "passed": None,
                "sample": {"error": {"code": "FAILED_EXECUTION", "message": "(SystemError) 100% of the batch failed."}},
            }
        ],
    }
    (row,) = normalize_item(item, offset=0, criteria=[TNE], query_ids=["a"])
    assert row.score is None and row.passed is None
    assert row.error == "FAILED_EXECUTION: (SystemError) 100% of the batch failed."


def test_multi_metric_results_share_a_name() -> None:
    item = {
        "id": "1",
        "datasource_item_id": 0,
        "results": [
            {"name": "ROUGEScore", "metric": m, "score": s, "passed": True, "threshold": 0.5}
            for m, s in (("rouge_precision", 0.5), ("rouge_recall", 0.25), ("rouge_f1_score", 1 / 3))
        ],
    }
    rows = normalize_item(item, offset=0, criteria=[ROUGE], query_ids=["a"])
    assert [(r.metric, r.score) for r in rows] == [
        ("rouge_precision", 0.5),
        ("rouge_recall", 0.25),
        ("rouge_f1_score", 1 / 3),
    ]


def test_a_missing_score_is_an_error_never_a_zero_and_missing_criteria_are_rows() -> None:
    item = {"id": "2", "results": [{"name": "f1", "metric": "f1_score", "score": None, "status": "skipped"}]}
    rows = normalize_item(item, offset=0, criteria=[F1, COHERENCE], query_ids=["a", "b"])
    assert rows[0].row == 1 and rows[0].query_id == "b"  # row from the 1-based id when datasource_item_id is absent
    assert rows[0].score is None and rows[0].error == "MISSING_SCORE: the service returned no score (status skipped)"
    assert (rows[1].criterion, rows[1].metric, rows[1].error) == (
        "coherence",
        "coherence",
        "MISSING_RESULT: the output item has no result for it",
    )


@pytest.mark.parametrize("wild", [99, -7, "99"])
def test_a_judge_score_outside_its_catalog_range_is_an_errored_row(wild: object) -> None:
    # issue #34 item 5: the cloud (and the emulator, through the same client) rows read the catalog's 1-5 range
    relevance = CriterionPlan(name="relevance", evaluator="builtin.relevance")
    result = {"name": "relevance", "metric": "relevance", "score": wild, "label": "pass", "passed": True}
    (row,) = normalize_item({"id": "1", "results": [result]}, offset=0, criteria=[relevance], query_ids=["a"])
    assert row.score is None and row.passed is None
    assert row.error is not None and row.error.startswith("JUDGE_SCORE_OUT_OF_RANGE: the relevance score")
    inside = normalize_item(
        {"id": "1", "results": [{**result, "score": 5}]}, offset=0, criteria=[relevance], query_ids=["a"]
    )
    assert (inside[0].score, inside[0].error) == (5.0, None)


# document retrieval, shape (b) of the reference, values from the docs' sample output
SINGLE = {
    "type": "azure_ai_evaluator",
    "name": "docret",
    "metric": "document_retrieval",
    "score": 0.646,
    "label": "pass",
    "passed": True,
    "threshold": 0.5,
    "reason": None,
    "properties": {
        "ndcg@3": 0.646,
        "xdcg@3": 37.76,
        "fidelity": 0.019,
        "top1_relevance": 2,
        "top3_max_relevance": 2,
        "holes": 30,
        "holes_ratio": 0.6,
        "total_retrieved_documents": 50,
        "total_groundtruth_documents": 1565,
        "ndcg@3_result": "pass",
        "ndcg@3_threshold": 0.5,
        "fidelity_result": "fail",
        "fidelity_passed": False,
        "holes_result": "fail",
        "total_groundtruth_documents_result": "pass",
    },
}
PER_METRIC = [
    {"name": "docret", "metric": "ndcg@3", "score": 0.646, "label": "pass", "passed": True, "threshold": 0.5},
    {"name": "docret", "metric": "xdcg@3", "score": 37.76},
    {"name": "docret", "metric": "fidelity", "score": 0.019, "label": "fail", "passed": False},
    {"name": "docret", "metric": "top1_relevance", "score": 2},
    {"name": "docret", "metric": "top3_max_relevance", "score": 2},
    {"name": "docret", "metric": "holes", "score": 30, "label": "fail", "passed": False},
    {"name": "docret", "metric": "holes_ratio", "score": 0.6},
    {"name": "docret", "metric": "total_retrieved_documents", "score": 50},
    {"name": "docret", "metric": "total_ground_truth_documents", "score": 1565, "label": "pass", "passed": True},
]


def _scores(results: list[dict]) -> dict[str, float | None]:
    rows = normalize_item({"id": "1", "results": results}, offset=0, criteria=[DOCRET], query_ids=["a"])
    return {r.metric: r.score for r in rows}


def test_document_retrieval_single_entry_is_expanded_per_metric() -> None:
    rows = normalize_item({"id": "1", "results": [SINGLE]}, offset=0, criteria=[DOCRET], query_ids=["a"])
    by = {r.metric: r for r in rows}
    assert len(rows) == 9 and "document_retrieval" not in by
    assert by["total_ground_truth_documents"].score == 1565.0 and by["total_ground_truth_documents"].passed is True
    assert (by["ndcg@3"].label, by["ndcg@3"].passed, by["ndcg@3"].threshold) == ("pass", True, 0.5)
    assert by["fidelity"].passed is False and by["holes"].passed is False
    assert by["xdcg@3"].passed is None and by["xdcg@3"].error is None


def test_both_document_retrieval_shapes_agree_with_each_other_and_with_normalize_output() -> None:
    single, per_metric = _scores([SINGLE]), _scores(PER_METRIC)
    assert single == per_metric
    independent = normalize_output(SINGLE)  # the document-retrieval helper's reader
    assert {k: pytest.approx(float(v)) for k, v in independent.items() if k != "document_retrieval"} == single


def test_errored_single_entry_gives_an_error_row_per_metric() -> None:
    errored = {
        "name": "docret",
        "metric": "document_retrieval",
        "score": None,
        "sample": {"error": {"code": "FAILED_EXECUTION", "message": "labels out of range"}},
    }
    rows = normalize_item({"id": "1", "results": [errored]}, offset=0, criteria=[DOCRET], query_ids=["a"])
    assert len(rows) == 9 and all(r.error == "FAILED_EXECUTION: labels out of range" for r in rows)
    assert all(r.score is None for r in rows)


def test_a_v3_entry_without_properties_is_its_ndcg_at_3_row() -> None:
    bare = {"name": "docret", "metric": "document_retrieval", "score": 0.625, "passed": True, "threshold": 0.5}
    rows = normalize_item({"id": "1", "results": [bare]}, offset=0, criteria=[DOCRET], query_ids=["a"])
    assert [(r.metric, r.score, r.passed, r.threshold, r.error) for r in rows] == [("ndcg@3", 0.625, True, 0.5, None)]
