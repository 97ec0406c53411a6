"""Helpers for the local-backend tests: the benefits plan and a fake judge whose answers are chosen per sample."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foundry_bridge.local.fake_judge import FakeAnswer, JudgeRequest, score_answer
from foundry_bridge.mapping.plan import CriterionPlan, Plan

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DEFAULT_MAPPING = ROOT / "mappings" / "default.yaml"

# (judge kind, marker text in the data block) -> answer. Markers come from the sample's responses and queries.
CANARY_GROUNDEDNESS = {
    "first 6%": 1,  # q03 wrong_number: the context says 4%
    "manager": 2,  # q04 invented_condition
}
RELEVANCE_LOW = {"two cleanings": 2}  # q05 grounded_not_answering
RETRIEVAL_LOW = {"bereavement": 1}  # q07: the relevant passage was never retrieved
UNPARSEABLE = ("relevance", "pre-tax for transit")  # q09's response → not JSON
NO_SCORE = ("retrieval", "vesting schedule")  # n02's query → JSON without a score

DEFAULT_SCORE = {"retrieval": 4, "groundedness": 5, "relevance": 4, "response_completeness": 3}


def benefits_rule(request: JudgeRequest) -> FakeAnswer:
    """Deterministic answers for the benefits sample (see the tables above); everything else gets a default."""
    kind, data = request.kind, request.data
    if (kind, UNPARSEABLE[1]) == UNPARSEABLE and UNPARSEABLE[1] in data:
        return FakeAnswer(content="Score: 4 - the response answers the question.")
    if kind == NO_SCORE[0] and NO_SCORE[1] in data:
        return FakeAnswer(content=json.dumps({"reason": "I cannot tell."}))
    if kind == "groundedness":
        for marker, score in CANARY_GROUNDEDNESS.items():
            if marker in _section(data, "RESPONSE:"):
                return score_answer(score, f"canary {marker}")
    if kind == "relevance":
        for marker, score in RELEVANCE_LOW.items():
            if marker in data:
                return score_answer(score, "does not answer")
    if kind == "retrieval":
        for marker, score in RETRIEVAL_LOW.items():
            if marker in data:
                return score_answer(score, "nothing relevant")
    return score_answer(DEFAULT_SCORE.get(kind, 3), f"{kind} ok")


def clean_rule(request: JudgeRequest) -> FakeAnswer:
    """Every request answered with a valid score (no failures), the score depending on the judge model."""
    base = DEFAULT_SCORE.get(request.kind, 3)
    return score_answer(base if request.model != "other-model" else base - 1, "ok")


def _section(data: str, label: str) -> str:
    at = data.find(label)
    return data[at:] if at >= 0 else ""


def benefits_plan(mutate: Any = None, *, limit: int | None = None) -> Plan:
    """The benefits sample under the default mapping (its first ``limit`` rows); ``mutate(items)`` may edit the
    run items first."""
    from foundry_bridge.dataset import read_records
    from foundry_bridge.mapping import load_mapping

    try:
        from foundry_bridge.mapping import build_plan
    except ImportError:  # not exported yet
        from foundry_bridge.mapping.builder import build_plan

    mapping = load_mapping(DEFAULT_MAPPING)
    plan = build_plan(read_records(BENEFITS, mapping), mapping, dataset_path=BENEFITS, mapping_path=DEFAULT_MAPPING)
    if limit is not None:
        plan.items = plan.items[:limit]
        plan.records = plan.records[:limit]
    if mutate is not None:
        plan.items = list(plan.items)  # build_plan spools the rows to a file: edit them as a list
        mutate(plan.items)
    return plan


def with_criteria(plan: Plan, criteria: list[CriterionPlan]) -> Plan:
    return plan.model_copy(update={"criteria": criteria})


def criterion(name: str, evaluator: str, mapping: dict[str, str], **init: Any) -> CriterionPlan:
    return CriterionPlan(name=name, evaluator=evaluator, init=init, data_mapping=mapping)


def by_key(rows: list[Any]) -> dict[tuple[str | None, str, str], Any]:
    return {(r.query_id, r.criterion, r.metric): r for r in rows}


# a one-criterion mapping (relevance on query and response) for runs against a test judge
RELEVANCE_MAPPING = """\
version: 1
dataset:
  format: jsonl
  fields: {query_id: query_id, query: query, response: response}
evaluators:
  - evaluator: builtin.relevance
    init: {deployment_name: judge-model, threshold: 3}
"""
