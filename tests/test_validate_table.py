"""Each rule of the table that no other test reaches, triggered as a user would, with its exact text.

The expected strings are the messages foundry_bridge printed before the rules became a table (the same cases
pass against mapping/validator.py as of commit 701060d), so a template that lost a field or a brace shows here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.validate import RULES, validate
from foundry_bridge.validate._report import ValidationReport
from foundry_bridge.validate._rules import Context

DR = {
    "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
    "retrieved_documents": "{{item.retrieved_documents}}",
}


def _criterion(**over: Any) -> dict[str, Any]:
    c = {"type": "azure_ai_evaluator", "name": "dr", "evaluator_name": "builtin.document_retrieval", "data_mapping": DR}
    c.update(over)
    return {k: v for k, v in c.items() if v is not None}


GOOD_DOCS = [{"document_id": "a", "relevance_score": 1.0}]
GOOD_LABELS = [{"document_id": "a", "query_relevance_label": 1}]


def _check(tmp_path: Path, criteria: Any, *rows: Any) -> list[tuple[str, str, str, str | None, str | None]]:
    crit = tmp_path / "c.json"
    crit.write_text(criteria if isinstance(criteria, str) else json.dumps(criteria))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = validate(data, criteria_file=crit)
    return [(p.severity, p.code, p.message, p.field, p.hint) for p in report.problems]


def _row(**over: Any) -> dict[str, Any]:
    row = {"query_id": "q1", "retrieved_documents": GOOD_DOCS, "retrieval_ground_truth": GOOD_LABELS}
    row.update(over)
    return row


ROW_CASES = {
    "documents not a list": (
        _row(retrieved_documents="x"),
        (
            "error",
            "not_a_list",
            "retrieved_documents must be a list of {document_id, relevance_score}",
            "retrieved_documents",
            None,
        ),
    ),
    "document not an object": (
        _row(retrieved_documents=[1]),
        ("error", "not_an_object", "retrieved_documents[0] must be an object", "retrieved_documents[0]", None),
    ),
    "document without id": (
        _row(retrieved_documents=[{"relevance_score": 1.0}]),
        ("error", "missing_id", "document_id is missing", "retrieved_documents[0].document_id", None),
    ),
    "numeric document id": (
        _row(retrieved_documents=[{"document_id": 5, "relevance_score": 1.0}]),
        (
            "warning",
            "numeric_id",
            "document_id 5 is a number; Foundry compares ids by value and type, foundry_bridge reads it as a string",
            "retrieved_documents[0].document_id",
            "write ids as JSON strings",
        ),
    ),
    "score not a number": (
        _row(retrieved_documents=[{"document_id": "a", "relevance_score": "high"}]),
        (
            "error",
            "bad_score",
            "relevance_score must be a number, got 'high'",
            "retrieved_documents[0].relevance_score",
            None,
        ),
    ),
    "labels not a list": (
        _row(retrieval_ground_truth="x"),
        (
            "error",
            "not_a_list",
            "retrieval_ground_truth must be a list of {document_id, query_relevance_label}",
            "retrieval_ground_truth",
            None,
        ),
    ),
    "no labels": (
        _row(retrieval_ground_truth=[]),
        (
            "error",
            "empty_ground_truth",
            "retrieval_ground_truth is empty; Foundry requires at least one label",
            "retrieval_ground_truth",
            "label at least one document, or drop the row from document_retrieval",
        ),
    ),
    "label missing": (
        _row(retrieval_ground_truth=[{"document_id": "a"}]),
        ("error", "missing_label", "label is missing", "retrieval_ground_truth[0].query_relevance_label", None),
    ),
    "label a string": (
        _row(retrieval_ground_truth=[{"document_id": "a", "query_relevance_label": "3"}]),
        (
            "error",
            "label_not_integer",
            "label must be an integer, got '3'",
            "retrieval_ground_truth[0].query_relevance_label",
            "write labels as JSON integers",
        ),
    ),
    "too many labels": (
        _row(retrieval_ground_truth=[{"document_id": f"d{i}", "query_relevance_label": 0} for i in range(10_001)]),
        (
            "error",
            "too_many_documents",
            "10001 labels in retrieval_ground_truth; Foundry accepts at most 10000",
            "retrieval_ground_truth",
            None,
        ),
    ),
}


@pytest.mark.parametrize("case", ROW_CASES)
def test_row_rules(case: str, tmp_path: Path) -> None:
    row, expected = ROW_CASES[case]
    assert expected in _check(tmp_path, [_criterion()], row)


GROUNDED = {
    "type": "azure_ai_evaluator",
    "name": "g",
    "evaluator_name": "builtin.groundedness",
    "initialization_parameters": {"deployment_name": "judge"},
    "data_mapping": {"context": "{{item.context}}", "response": "{{item.response}}"},
}


def test_string_rules(tmp_path: Path) -> None:
    found = _check(tmp_path, [GROUNDED], {"context": ["a", "b"], "response": "r"}, {"context": 5, "response": "r"})
    assert (
        "error",
        "context_not_string",
        "context is a list of 2 chunks, not a string",
        "context",
        'join the chunks with two newlines ("\\n\\n".join(chunks)), exactly as sent to the model',
    ) in found
    assert ("error", "not_a_string", "context must be a string, got int", "context", None) in found


def test_a_row_that_is_not_an_object(tmp_path: Path) -> None:
    assert ("error", "not_an_object", "a row must be a JSON object", "", None) in _check(
        tmp_path, [_criterion()], [1, 2]
    )


CRITERIA_CASES = {
    "not a list": (
        {"x": 1},
        (
            "error",
            "bad_criteria_file",
            "expected a JSON list of testing_criteria or an eval-create body with `testing_criteria`",
            "",
            None,
        ),
    ),
    "not an object": (
        [5],
        ("error", "bad_criterion", "a criterion must be a JSON object", "testing_criteria[0]", None),
    ),
    "other type": (
        [{"type": "label_model"}],
        (
            "warning",
            "not_checked",
            "criterion type 'label_model' is not azure_ai_evaluator; not checked",
            "testing_criteria[0].type",
            None,
        ),
    ),
    "no name": (
        [_criterion(name=None)],
        (
            "error",
            "missing_name",
            "criterion name is missing",
            "testing_criteria[0].name",
            "every criterion needs a unique `name`",
        ),
    ),
    "same name twice": (
        [_criterion(), _criterion()],
        (
            "error",
            "duplicate_criterion_name",
            "criterion name 'dr' is used twice",
            "testing_criteria[1].name",
            "give each criterion a distinct `name`",
        ),
    ),
    "no evaluator": (
        [_criterion(evaluator_name=None)],
        ("error", "missing_evaluator", "evaluator name is missing", "testing_criteria[0].evaluator_name", None),
    ),
    "init not an object": (
        [_criterion(initialization_parameters=5)],
        (
            "error",
            "bad_init",
            "initialization_parameters must be an object",
            "testing_criteria[0].initialization_parameters",
            None,
        ),
    ),
    "no data_mapping": (
        [_criterion(data_mapping=None)],
        (
            "error",
            "missing_data_mapping",
            "data_mapping is missing",
            "testing_criteria[0].data_mapping",
            "map each input to a {{item.<field>}} template",
        ),
    ),
    "not a template": (
        [_criterion(data_mapping={**DR, "retrieved_documents": "item.docs"})],
        (
            "error",
            "bad_template",
            "'item.docs' is not a {{item.<field>}} template",
            "testing_criteria[0].data_mapping.retrieved_documents",
            'write "{{item.retrieved_documents}}"',
        ),
    ),
    "label bounds reversed": (
        [_criterion(initialization_parameters={"ground_truth_label_min": 3, "ground_truth_label_max": 2})],
        (
            "error",
            "bad_label_range",
            "ground_truth_label_max (2) must be greater than ground_truth_label_min (3)",
            "testing_criteria[0].initialization_parameters",
            None,
        ),
    ),
    "empty deployment": (
        [{**GROUNDED, "initialization_parameters": {"deployment_name": " "}}],
        (
            "error",
            "missing_deployment",
            "deployment_name is empty",
            "testing_criteria[0].initialization_parameters.deployment_name",
            "name the judge model deployment",
        ),
    ),
}


@pytest.mark.parametrize("case", CRITERIA_CASES)
def test_criteria_rules(case: str, tmp_path: Path) -> None:
    criteria, expected = CRITERIA_CASES[case]
    assert expected in _check(tmp_path, criteria, _row())


def test_unreadable_inputs(tmp_path: Path) -> None:
    found = _check(tmp_path, "[", _row())
    assert any(p[:2] == ("error", "bad_json") and p[2].startswith("malformed JSON: ") for p in found)
    report = validate(tmp_path / "none.jsonl", criteria_file=tmp_path / "none.json")
    assert [(p.code, p.message) for p in report.problems] == [
        ("missing_file", "criteria file not found"),
        ("missing_file", "dataset file not found (a JSONL file)"),
    ]
    root = Path(__file__).resolve().parents[1]
    report = validate(root / "samples" / "trec")  # a TREC directory read with the JSONL mapping
    assert [str(p) for p in report.problems] == [
        f"{root / 'samples' / 'trec'}: is a directory, not a JSONL file (fix: for TREC input set dataset.format: trec)"
    ]
    report = validate(tmp_path / "none.jsonl", mapping=root / "mappings" / "trec.yaml")
    assert ("missing_file", "TREC input is a directory holding the qrels, run and queries files") in [
        (p.code, p.message) for p in report.problems
    ]


def test_two_mapping_entries_with_one_name(tmp_path: Path) -> None:
    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "evaluators:\n  - evaluator: builtin.document_retrieval\n    name: dr\n"
        "  - evaluator: builtin.document_retrieval\n    name: dr\n"
    )
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps(_row()) + "\n")
    found = [(p.code, p.message, p.line, p.hint) for p in validate(data, mapping=mapping).problems]
    assert (
        "duplicate_criterion_name",
        "criterion name 'dr' is used twice",
        5,
        "give each evaluator entry a distinct `name`",
    ) in found


def test_every_rule_formats_with_its_fields_and_none_is_left_out() -> None:
    """The rules the tests above cannot reach (a file that vanishes between the passes) still format."""
    ctx = Context(ValidationReport(), "d.jsonl")
    p = ctx.problem("missing_file/reread", reason="No such file or directory")
    assert str(p) == "d.jsonl: dataset file could not be read again: No such file or directory"
    assert {r.severity for r in RULES.values()} == {"error", "warning"}
    assert all(r.code == r.name.split("/")[0] for r in RULES.values())
