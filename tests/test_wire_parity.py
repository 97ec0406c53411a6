"""One dataset, three backends, the same result rows: the emulator, the local backend (fake judge on 127.0.0.1)
and the cloud normalizer on output items written in the recorded service shape.

Rows: normal ones, a NaN document-retrieval fidelity (every label at the minimum 1), missing inputs (null), empty
inputs (empty string, blank string, empty list). Judge scores are chosen per row by hand: the emulator's
lexical-overlap score of each row is computed by hand below (``1 + floor(4 * overlap + 0.5)``, overlap =
shared words / the smaller word set), the fake judge answers the same score, and the recorded-shape items carry it.
Document-retrieval values of the cloud items come from azure-ai-evaluation's own DocumentRetrievalEvaluator.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.catalog import DOCUMENT_RETRIEVAL
from foundry_bridge.foundry import StaticTokenCredential, normalize_item
from foundry_bridge.local import LocalBackend
from foundry_bridge.local.fake_judge import FakeAnswer, FakeJudgeServer, JudgeRequest, score_answer
from foundry_bridge.mapping import load_mapping
from foundry_bridge.mapping.builder import build_eval_body
from foundry_bridge.mapping.plan import CriterionPlan, Plan
from foundry_bridge.mock import FoundryEmulator
from foundry_bridge.results import ResultRow
from foundry_bridge.runner import get_backend, read_results, run_evaluation
from foundry_bridge.runner_protocol import RunContext

INIT = {"ground_truth_label_min": 1, "ground_truth_label_max": 4}
CRITERIA = [
    CriterionPlan(
        name="docret",
        evaluator="builtin.document_retrieval",
        init=INIT,
        data_mapping={
            "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
            "retrieved_documents": "{{item.retrieved_documents}}",
        },
    ),
    CriterionPlan(
        name="retrieval",
        evaluator="builtin.retrieval",
        init={"deployment_name": "judge-model", "threshold": 4},
        data_mapping={"query": "{{item.query}}", "context": "{{item.context}}"},
    ),
    CriterionPlan(
        name="groundedness",  # two input groups: (response, context) or (query, response)
        evaluator="builtin.groundedness",
        init={"deployment_name": "judge-model"},
        data_mapping={"query": "{{item.query}}", "context": "{{item.context}}", "response": "{{item.response}}"},
    ),
    CriterionPlan(
        name="relevance",
        evaluator="builtin.relevance",
        init={"deployment_name": "judge-model"},  # catalog default threshold: 3
        data_mapping={"query": "{{item.query}}", "response": "{{item.response}}"},
    ),
]
THRESHOLDS = {"retrieval": 4, "groundedness": 3, "relevance": 3}
GT = [{"document_id": "a", "query_relevance_label": 3}, {"document_id": "b", "query_relevance_label": 1}]
DOCS = [{"document_id": "a", "relevance_score": 2.0}, {"document_id": "c", "relevance_score": 1.0}]
ALL_ONES = [{"document_id": "a", "query_relevance_label": 1}, {"document_id": "b", "query_relevance_label": 1}]


def _row(qid: str, query: Any, context: Any, response: Any, gt: Any, docs: Any) -> dict[str, Any]:
    return {
        "query_id": qid,
        "query": query,
        "context": context,
        "response": response,
        "retrieval_ground_truth": gt,
        "retrieved_documents": docs,
    }


ITEMS = [
    # retrieval: context ∩ query = 4/4 → 5; relevance: response ∩ query = 2/4 → 3 (passes at exactly 3);
    # groundedness: response ∩ (query ∪ context) = 2/4 → 3
    _row("r0", "alpha beta gamma delta", "alpha beta gamma delta", "alpha beta zeta theta", GT, DOCS),
    # fidelity NaN (every label equals the minimum 1); retrieval 1/4 → 2; relevance 4/4 → 5; groundedness 4/4 → 5
    _row("r1", "kappa lambda mu nu", "kappa omicron pi rho", "kappa lambda mu nu", ALL_ONES, DOCS),
    # missing: response null (relevance), ground truth null (docret); retrieval 3/4 → 4
    _row("r2", "sigma tau upsilon phi", "sigma tau upsilon chi", None, None, DOCS),
    # empty string context (retrieval); relevance 2/2 → 5; groundedness in its (query, response) form: 2/2 → 5
    _row("r3", "omega psi", "", "omega psi", [{"document_id": "a", "query_relevance_label": 4}], DOCS),
    # empty list of retrieved documents (scored 0, not missing); blank response; retrieval 1/2 → 3
    _row("r4", "iota eta", "iota zeta", "   ", GT, []),
    # no query at all: both query judges miss an input; groundedness (response, context): 1/2 → 3
    _row("r5", None, "zorblat context", "zorblat response", GT, DOCS),
    # an empty ground-truth list is a value, which document retrieval rejects; retrieval 2/2 → 5, relevance 1/2 → 3,
    # groundedness 1/2 → 3
    _row("r6", "quux corge", "quux corge", "quux grault", [], DOCS),
]
JUDGE_SCORES = {  # (criterion, row) → score, hand computed as the module docstring says
    ("retrieval", 0): 5,
    ("relevance", 0): 3,
    ("retrieval", 1): 2,
    ("relevance", 1): 5,
    ("retrieval", 2): 4,
    ("relevance", 3): 5,
    ("retrieval", 4): 3,
    ("groundedness", 0): 3,
    ("groundedness", 1): 5,
    ("groundedness", 3): 5,
    ("groundedness", 5): 3,
    ("retrieval", 6): 5,
    ("relevance", 6): 3,
    ("groundedness", 6): 3,
}
MARKERS = {(item["query"] or item["context"]).split()[0]: r for r, item in enumerate(ITEMS)}  # a word unique to row r
SDK_MISSING = (  # the recorded text (eval_ai_assisted_nlp.json)
    "(SystemError) 100% of the batch run failed. (UserError) {}: Either 'conversation' or individual inputs must be "
    "provided."
)


def _plan() -> Plan:
    return Plan(
        name="parity",
        mapping=load_mapping(None),
        criteria=CRITERIA,
        eval_body=build_eval_body(CRITERIA, name="parity", metadata={}),
        items=[{"item": dict(it)} for it in ITEMS],
    )


def _rule(request: JudgeRequest) -> FakeAnswer:
    row = next(r for marker, r in MARKERS.items() if marker in request.data)
    return score_answer(JUDGE_SCORES[(request.kind, row)], f"hand-chosen score for row {row}")


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeJudgeServer]:
    with FakeJudgeServer(_rule) as server:
        yield server


def _judge_result(name: str, evaluator: str, r: int) -> dict[str, Any]:
    """A judge result as the service records it (groundedness.json), or its missing-input failure."""
    score = JUDGE_SCORES.get((name, r))
    if score is None:
        error = {"code": "FAILED_EXECUTION", "message": SDK_MISSING.format(evaluator)}
        return {"name": name, "metric": name, "score": None, "label": None, "threshold": None, "passed": None,
                "reason": None, "sample": {"error": error}}  # fmt: skip
    passed = score >= THRESHOLDS[name]
    return {"type": "azure_ai_evaluator", "name": name, "metric": name, "score": score,
            "label": "pass" if passed else "fail", "reason": "ok", "threshold": THRESHOLDS[name], "passed": passed,
            "sample": {"usage": {"total_tokens": 10}, "finish_reason": "stop"}}  # fmt: skip


def _docret_result(item: dict[str, Any]) -> dict[str, Any]:
    """document_retrieval in the 1.17+ single-entry shape, values from azure-ai-evaluation, NaN written as null."""
    from azure.ai.evaluation import DocumentRetrievalEvaluator

    gt, docs = item["retrieval_ground_truth"], item["retrieved_documents"]
    if gt is None:
        error = {"code": "FAILED_EXECUTION", "message": SDK_MISSING.format("DocumentRetrievalEvaluator")}
        return {"name": "docret", "metric": "document_retrieval", "score": None, "sample": {"error": error}}
    try:
        out = DocumentRetrievalEvaluator(**INIT)(retrieval_ground_truth=gt, retrieved_documents=docs)
    except Exception as exc:  # the service wraps the library's error text this way (see SDK_MISSING)
        error = {"code": "FAILED_EXECUTION", "message": SDK_MISSING.split("{}")[0] + str(exc)}
        return {"name": "docret", "metric": "document_retrieval", "score": None, "sample": {"error": error}}
    props = {
        k.replace("total_ground_truth", "total_groundtruth"): None if isinstance(v, float) and math.isnan(v) else v
        for k, v in out["document_retrieval_properties"].items()
    }
    return {"type": "azure_ai_evaluator", "name": "docret", "metric": "document_retrieval",
            "score": out["document_retrieval"], "label": out["document_retrieval_result"], "reason": None,
            "threshold": out["document_retrieval_threshold"], "passed": out["document_retrieval_result"] == "pass",
            "properties": props}  # fmt: skip


def _cloud_rows() -> list[ResultRow]:
    rows = []
    for r, item in enumerate(ITEMS):
        output_item = {
            "object": "eval.run.output_item",
            "id": str(r + 1),
            "status": "completed",
            "datasource_item_id": r,
            "datasource_item": item,
            "results": [
                _docret_result(item),
                _judge_result("retrieval", "RetrievalEvaluator", r),
                _judge_result("groundedness", "GroundednessEvaluator", r),
                _judge_result("relevance", "RelevanceEvaluator", r),
            ],
        }
        rows += normalize_item(output_item, offset=0, criteria=CRITERIA, query_ids=[i["query_id"] for i in ITEMS])
    return rows


def _view(rows: list[ResultRow]) -> dict[tuple[int, str, str], tuple[str, str | None, Any, bool | None]]:
    """(row, criterion, metric) → (status, error code, score, passed)."""
    out = {}
    for x in rows:
        code = x.error.split(":", 1)[0] if x.error else None
        score = None if x.score is None else pytest.approx(x.score, rel=1e-12, abs=1e-12)
        out[(x.row, x.criterion, x.metric)] = ("errored" if x.error else "ok", code, score, x.passed)
    return out


@pytest.mark.parametrize("shape", ["single", "per_metric"])
def test_every_backend_gives_the_same_result_rows(judge: FakeJudgeServer, tmp_path: Path, shape: str) -> None:
    plan = _plan()
    mock = get_backend(
        "mock",
        emulator=FoundryEmulator(docret_shape=shape),  # type: ignore[arg-type]
        credential=StaticTokenCredential("t"),
        sleep=lambda s: None,
    )
    run_evaluation(plan, tmp_path / "mock", mock)
    emulated = _view(read_results(tmp_path / "mock"))
    local_backend = LocalBackend(judge_endpoint=judge.base_url, judge_model="judge-model", cache_dir=tmp_path / "c")
    local = _view(local_backend.execute(RunContext(plan=plan, run_dir=tmp_path / "local")))
    cloud = _view(_cloud_rows())

    assert len(cloud) == len(ITEMS) * (9 + 3)
    assert local == cloud
    assert emulated == cloud
    # the rules the three agree on, spelled out
    assert cloud[(1, "docret", "fidelity")] == ("errored", "NAN_SCORE", None, False)
    assert cloud[(1, "docret", "ndcg@3")][:2] == ("ok", None)
    assert all(cloud[(2, "docret", m.name)][:2] == ("errored", "MISSING_INPUT") for m in DOCUMENT_RETRIEVAL.metrics)
    assert cloud[(2, "relevance", "relevance")][:2] == ("errored", "MISSING_INPUT")
    assert cloud[(3, "retrieval", "retrieval")][:2] == ("errored", "MISSING_INPUT")  # empty string is absent
    assert cloud[(4, "relevance", "relevance")][:2] == ("errored", "MISSING_INPUT")  # blank text is absent
    assert cloud[(4, "docret", "ndcg@3")] == ("ok", None, 0.0, False)  # an empty list is a value: scored 0
    assert cloud[(5, "retrieval", "retrieval")][1] == cloud[(5, "relevance", "relevance")][1] == "MISSING_INPUT"
    assert cloud[(0, "relevance", "relevance")] == ("ok", None, 3.0, True)  # at the threshold passes
    assert all(cloud[(6, "docret", m.name)][:2] == ("errored", "MISSING_FIELD") for m in DOCUMENT_RETRIEVAL.metrics)
    assert cloud[(3, "groundedness", "groundedness")] == ("ok", None, 5.0, True)  # blank context: the query form
    assert cloud[(4, "groundedness", "groundedness")][:2] == ("errored", "MISSING_INPUT")
    assert cloud[(4, "retrieval", "retrieval")] == ("ok", None, 3.0, False)  # init threshold 4, not the default 3
