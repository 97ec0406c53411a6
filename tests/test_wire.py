"""The wire rules one by one, as a user would check them: templates, presence, numbers, thresholds, result shapes."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from foundry_bridge.catalog import CATALOG, DOCUMENT_RETRIEVAL
from foundry_bridge.foundry import normalize_item
from foundry_bridge.mapping.plan import CriterionPlan
from foundry_bridge.wire import (
    classify_service_error,
    finite_number,
    is_present,
    missing_inputs,
    parse_template,
    passes,
    read_metric,
    render_mapping,
    resolve_threshold,
    template_fields,
    to_bool,
    to_number,
)

RECORDINGS = Path(__file__).parent / "data" / "reference" / "recordings"


def test_templates_parse_and_render() -> None:
    assert parse_template("{{item.query}}") == ("item", "query")
    assert parse_template("  {{ sample.output_text }} ") == ("sample", "output_text")
    assert parse_template("Q: {{item.query}}") is None and parse_template(3) is None
    assert parse_template("{{item.query}} {{item.context}}") is None
    assert template_fields("{{item.a}} and {{sample.b.c}}") == [("item", "a"), ("sample", "b.c")]
    item = {"docs": [{"id": 1}, {"id": 2}], "n": 3, "q": "hi", "blank": None}
    got = render_mapping(
        {
            "lone_list": "{{item.docs}}",  # keeps its type
            "indexed": "{{item.docs.1.id}}",
            "text": "{{item.q}}: {{item.n}} {{item.docs.0}}",  # non-strings as JSON
            "null": "{{item.blank}}",
            "half": "x {{item.missing}}",  # a text that refers to an absent field is absent
            "out": "{{sample.output_text}}",
        },
        item,
        {"output_text": "answer"},
    )
    assert got == {"lone_list": [{"id": 1}, {"id": 2}], "indexed": 2, "text": 'hi: 3 {"id": 1}', "out": "answer"}


@pytest.mark.parametrize(
    ("value", "present"),
    [(None, False), ("", False), ("  \n", False), ([], True), ("x", True), (0, True), ({}, True), (False, True)],
)
def test_presence(value: object, present: bool) -> None:
    assert is_present(value) is present


def test_missing_inputs_use_the_input_groups() -> None:
    groundedness = CATALOG["builtin.groundedness"]  # (response, context) or (query, response)
    assert missing_inputs(groundedness, {"response": "r", "context": "c"}) is None
    assert missing_inputs(groundedness, {"response": "r", "query": "q", "context": ""}) is None
    assert missing_inputs(groundedness, {"response": "r", "context": " "}) == ["context", "query"]
    assert missing_inputs(DOCUMENT_RETRIEVAL, {"retrieval_ground_truth": [], "retrieved_documents": []}) is None


def test_numbers_and_verdicts() -> None:
    assert [to_number(v) for v in (True, False, None, [1], "x", 2, "0.5", " 3 ")] == [None] * 5 + [2.0, 0.5, 3.0]
    assert math.isnan(to_number(float("nan")) or 0.0) and to_number("inf") == math.inf
    assert [finite_number(v) for v in (float("nan"), "-inf", 1e308, True)] == [None, None, 1e308, None]
    assert [to_bool(v) for v in (True, "PASS", " failed", "true", 1, 0, "maybe", None)] == [
        True,
        True,
        False,
        True,
        None,
        None,
        None,
        None,
    ]


def test_thresholds_come_from_init_then_the_catalog() -> None:
    ndcg = DOCUMENT_RETRIEVAL.metric("ndcg@3")
    relevance = CATALOG["builtin.relevance"].metric("relevance")
    assert resolve_threshold(ndcg, {"ndcg_threshold": 0.7}) == 0.7
    assert resolve_threshold(ndcg, {"threshold": 0.7}) == 0.5  # not ndcg's parameter: the catalog default
    assert (
        resolve_threshold(relevance, {"threshold": 4}) == 4
        and type(resolve_threshold(relevance, {"threshold": 4})) is int
    )
    assert resolve_threshold(relevance, {"threshold": True}) == 3  # a bool is not a threshold
    assert resolve_threshold(relevance, {"threshold": float("nan")}) == 3
    assert resolve_threshold(None, {"threshold": 0.2}) == 0.2 and resolve_threshold(None, {}) is None


def test_a_score_passes_at_its_threshold_in_the_metric_direction() -> None:
    assert passes(3, 3) is True and passes(2.99, 3) is False and passes(4, 3) is True  # a tie passes
    assert passes(3, 3, False) is True and passes(3.01, 3, False) is False and passes(0, 3, False) is True
    assert passes(1, True) is True and passes(0.5, 1) is False  # Python's comparison, a bool threshold included
    scores = np.array([2.0, 3.0, 4.0, np.nan])
    assert passes(scores, 3).tolist() == [False, True, True, False]  # the same rule, elementwise
    assert passes(scores, 3, False).tolist() == [True, True, False, False]
    assert passes(scores, 3).tolist() == [passes(float(s), 3) for s in scores]


def test_a_nan_score_fails_unless_asked_to_read_it_as_no_verdict() -> None:
    assert passes(math.nan, 0.5) is False and passes(math.nan, 0.5, False) is False  # an undefined fidelity fails
    assert passes(math.nan, 0.5, nan="unknown") is None and passes(0.7, 0.5, nan="unknown") is True
    got = passes(np.array([np.nan, 1.0, 0.0]), 0.5, nan="unknown")
    assert np.isnan(got[0]) and got[1:].tolist() == [1.0, 0.0]
    with pytest.raises(TypeError):
        passes(0.5, None)  # no threshold is no verdict: DocumentRetrievalEvaluator fails on every call


def test_a_verdict_score_passes_when_true_or_when_false_for_lower_is_better() -> None:
    assert passes(1.0, None, as_verdict=True) is True and passes(0.0, 3, as_verdict=True) is False
    assert passes(0.0, None, False, as_verdict=True) is True and passes(1.0, 0, False, as_verdict=True) is False


def test_read_metric_tells_absent_from_undefined() -> None:
    props = {"fidelity": None, "fidelity_result": "fail", "holes": 2, "holes_passed": False, "holes_threshold": 0}
    fidelity = read_metric(props, "fidelity")
    assert fidelity.error is not None and fidelity.error.startswith("NAN_SCORE:")
    assert (fidelity.score, fidelity.label, fidelity.passed) == (None, "fail", False)
    assert (read_metric({"fidelity": float("nan")}, "fidelity").error or "").startswith("NAN_SCORE:")
    assert (read_metric({}, "fidelity").error or "").startswith("MISSING_SCORE:")
    holes = read_metric(props, "holes")
    assert (holes.score, holes.passed, holes.threshold, holes.error) == (2.0, False, 0.0, None)


def test_the_recorded_missing_input_failure_reads_as_missing_input() -> None:
    recording = json.loads((RECORDINGS / "eval_ai_assisted_nlp.json").read_text(encoding="utf-8"))
    items = [
        item
        for entry in recording["Entries"]
        if "output_items" in entry["RequestUri"] and isinstance(entry["ResponseBody"], dict)
        for item in entry["ResponseBody"].get("data", [])
    ]
    errored = [r for it in items for r in it["results"] if (r.get("sample") or {}).get("error")]
    assert errored
    crit = CriterionPlan(name=errored[0]["name"], evaluator="builtin.similarity")
    rows = normalize_item({"id": "1", "results": [errored[0]]}, offset=0, criteria=[crit], query_ids=["a"])
    message = errored[0]["sample"]["error"]["message"]
    assert [r.error for r in rows] == [f"MISSING_INPUT: {message}"]
    assert (
        classify_service_error("FAILED_EXECUTION: judge returned garbage") == "FAILED_EXECUTION: judge returned garbage"
    )
    assert classify_service_error(None) is None
