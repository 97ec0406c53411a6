"""The emulator runs the OpenAI model graders ``label_model`` and ``score_model`` (issue #37) from their published
contract (``data/reference/evaluators/builtin-specs.json``, copied from Azure/azureml-assets, see the README there:
init parameters ``deployment_name, model, name, input, type`` plus ``labels, passing_labels`` or ``range,
pass_threshold``; outputs ``label_model`` boolean, ``score_model`` continuous 0–1) with the documented lexical
stand-in (``mock/_graders.py``); the values below are counted by hand from the rows' words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mock_helpers import all_items, client_for, run_to_completion

from foundry_bridge.catalog import LABEL_MODEL, SCORE_MODEL
from foundry_bridge.mock import FoundryEmulator, stand_in_cuts, tokens

BENEFITS = Path(__file__).resolve().parent.parent / "samples" / "benefits" / "rag_eval.jsonl"
# five content words: alpha bravo charlie delta echo ("the", "of", "and" are stopwords)
QUERY = "the alpha of bravo and charlie delta echo"
DOCS = [
    "nothing here matches",  # 0 of 5
    "alpha only",  # 1 of 5 = 20 %
    "alpha, bravo and more",  # 2 of 5 = 40 %
    "Alpha BRAVO charlie",  # 3 of 5 = 60 % (case folded)
    "echo delta charlie bravo alpha",  # 5 of 5
    "the and of",  # stopwords only: nothing to compare
]
MESSAGES = [
    {"role": "system", "content": "Grade the document for the query."},
    {"role": "user", "content": "Query: {{item.query}}\nDocument: {{item.document}}"},
]


def _criterion(spec: Any, **init: Any) -> dict[str, Any]:
    base = {"deployment_name": "judge", "model": "judge", "name": "g", "type": spec.short_name, "input": MESSAGES}
    return {
        "type": "azure_ai_evaluator",
        "name": "g",
        "evaluator_name": spec.name,
        "initialization_parameters": base | init,
        "data_mapping": {},
    }


def _run(criterion: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    client = client_for(FoundryEmulator(polls_to_complete=0))
    body = {
        "name": "graders",
        "data_source_config": {"type": "custom", "item_schema": {"type": "object", "properties": {}}},
        "testing_criteria": [criterion],
    }
    created = client.post("/evals", json=body)
    assert created.status_code == 201, created.text
    eval_id = created.json()["id"]
    rows = [{"item": {"query": QUERY, "document": d}} for d in DOCS]
    source = {"type": "jsonl", "source": {"type": "file_content", "content": rows}}
    run = client.post(f"/evals/{eval_id}/runs", json={"data_source": source}).json()
    done = run_to_completion(client, eval_id, run["id"])
    items = all_items(client, eval_id, done["id"])
    return done, [it["results"][0] for it in sorted(items, key=lambda it: it["datasource_item_id"])]


def test_label_model_picks_a_label_by_the_share_of_the_first_parts_words_and_passes_on_passing_labels() -> None:
    run, results = _run(_criterion(LABEL_MODEL, labels=["0", "1", "2", "3"], passing_labels=["2", "3"]))
    assert [r["label"] for r in results[:5]] == ["0", "1", "2", "3", "3"]
    assert [r["passed"] for r in results[:5]] == [False, False, True, True, True]
    assert [r["score"] for r in results[:5]] == [0.0, 0.0, 1.0, 1.0, 1.0]  # the boolean metric
    assert {r["metric"] for r in results} == {"label_model"} and {r["type"] for r in results} == {"azure_ai_evaluator"}
    assert "3 of the first part's 5 content word(s)" in results[3]["reason"] and "not a model" in results[3]["reason"]
    assert results[3]["sample"]["model"].startswith("judge-")  # the judge call, with its usage
    errored = results[5]
    assert errored["label"] is None and errored["passed"] is None
    assert "no words in the first templated part" not in errored["sample"]["error"]["message"]
    assert "no text in the other parts" in errored["sample"]["error"]["message"]
    assert run["result_counts"] == {"total": 6, "passed": 3, "failed": 2, "errored": 1, "skipped": 0}


def test_label_model_with_two_labels_splits_at_a_third() -> None:
    _, results = _run(_criterion(LABEL_MODEL, labels=["no", "yes"], passing_labels=["yes"]))
    # min(1, ⌊share · 3⌋): 0 %, 20 % → no; 40 %, 60 %, 100 % → yes
    assert [r["label"] for r in results[:5]] == ["no", "no", "yes", "yes", "yes"]


def test_the_four_label_cuts_are_judge_docs_twenty_forty_sixty_percent() -> None:
    assert stand_in_cuts(4) == ((0.6, 3), (0.4, 2), (0.2, 1))


def test_score_model_scores_on_its_range_and_passes_at_the_threshold() -> None:
    _, results = _run(_criterion(SCORE_MODEL, range=[0, 1], pass_threshold=0.4))
    assert [r["score"] for r in results[:5]] == pytest.approx([0.0, 0.2, 0.4, 0.6, 1.0], abs=1e-12)
    assert [r["passed"] for r in results[:5]] == [False, False, True, True, True]
    assert [r["label"] for r in results[:5]] == ["fail", "fail", "pass", "pass", "pass"]
    assert {r["threshold"] for r in results[:5]} == {0.4}
    _, results = _run(_criterion(SCORE_MODEL, range=[1, 5], pass_threshold=3))
    assert [r["score"] for r in results[:5]] == pytest.approx([1.0, 1.8, 2.6, 3.4, 5.0], abs=1e-12)


@pytest.mark.parametrize(
    ("spec", "init", "message"),
    [
        (LABEL_MODEL, {"labels": ["0", "1"], "passing_labels": ["2"]}, "every passing_labels entry one of them"),
        (LABEL_MODEL, {"passing_labels": ["1"]}, "initialization_parameters.labels is required"),
        (SCORE_MODEL, {"range": [1, 0], "pass_threshold": 0.5}, "range must be two increasing numbers"),
        (SCORE_MODEL, {"range": [0, 1], "pass_threshold": 0.5, "input": []}, "input must be a non-empty array"),
    ],
)
def test_a_grader_that_cannot_run_is_refused_at_create(spec: Any, init: dict[str, Any], message: str) -> None:
    client = client_for(FoundryEmulator())
    body = {"data_source_config": {"type": "custom", "item_schema": {}}, "testing_criteria": [_criterion(spec, **init)]}
    refused = client.post("/evals", json=body)
    assert refused.status_code == 400 and message in refused.json()["error"]["message"]


def test_graders_without_a_model_are_still_refused() -> None:
    client = client_for(FoundryEmulator())
    crit = {"type": "azure_ai_evaluator", "name": "s", "evaluator_name": "builtin.string_check", "data_mapping": {}}
    refused = client.post("/evals", json={"data_source_config": {"type": "custom", "item_schema": {}},
                                          "testing_criteria": [crit]})  # fmt: skip
    assert refused.status_code == 400 and "OpenAI grader" in refused.json()["error"]["message"]


def test_a_mapping_label_model_criterion_runs_through_validate_plan_and_run(tmp_path: Path) -> None:
    """A grader in a mapping file: its input templates' fields go into the items and the item schema (no data
    mapping names them), validation does not ask for inputs it has none of, and the emulator labels every row."""
    from foundry_bridge.mapping import load_mapping
    from foundry_bridge.runner import plan_evaluation, run_evaluation

    mapping = tmp_path / "m.yaml"
    mapping.write_text(
        "version: 1\nevaluators:\n  - evaluator: builtin.label_model\n    name: on_topic\n    init:\n"
        "      deployment_name: judge\n      model: judge\n      name: on_topic\n      type: label_model\n"
        "      input:\n        - {role: system, content: 'Is the answer on the question?'}\n"
        "        - {role: user, content: 'Q: {{item.query}} A: {{item.response}}'}\n"
        "      labels: ['no', 'yes']\n      passing_labels: ['yes']\n"
    )
    plan = plan_evaluation(BENEFITS, load_mapping(mapping))
    assert set(plan.eval_body["data_source_config"]["item_schema"]["properties"]) == {"query", "response"}
    assert {"query", "response"} <= set(plan.items[0]["item"])
    summary = run_evaluation(plan, tmp_path / "run", "mock")
    rows = [json.loads(line) for line in BENEFITS.read_text().splitlines()]
    # min(1, ⌊share · 3⌋): "yes" when a third of the question's words are in the answer
    expected = sum(1 for r in rows if len(tokens(r["query"]) & tokens(r["response"])) * 3 >= len(tokens(r["query"])))
    assert (summary.passed, summary.failed, summary.errored) == (expected, len(rows) - expected, 0)
