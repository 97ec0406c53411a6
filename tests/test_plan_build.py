"""build_plan: the eval-create body and run items, compared with hand-written and recorded request bodies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_bridge.dataset import read_records
from foundry_bridge.errors import MappingError
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.mapping.model import Mapping

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data_plan"
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
ENV = {"AZURE_AI_MODEL_DEPLOYMENT_NAME": "my-judge"}


def _benefits_plan(mapping_path: Path | None = None, data: Path = BENEFITS, env: dict[str, str] | None = None):
    mapping = load_mapping(mapping_path)
    records = read_records(data, mapping)
    return build_plan(
        records, mapping, dataset_path=data, mapping_path=mapping_path, environ=ENV if env is None else env
    )


def test_benefits_eval_body_matches_hand_written_json() -> None:
    plan = _benefits_plan()
    expected = json.loads((DATA / "benefits_eval.json").read_text())
    assert plan.eval_body == expected
    assert list(plan.eval_body) == ["data_source_config", "testing_criteria", "metadata", "name"]


def test_benefits_items_are_small_and_match_hand_written_item() -> None:
    plan = _benefits_plan()
    assert len(plan.items) == 14
    assert plan.items[3] == json.loads((DATA / "benefits_item_q04.json").read_text())
    assert plan.query_ids[-1] == "n03"
    for it in plan.items:
        assert set(it) == {"item"}
        assert set(it["item"]) == {
            "query_id",
            "retrieval_ground_truth",
            "retrieved_documents",
            "query",
            "context",
            "response",
        }


def test_plan_records_keep_content_and_kind() -> None:
    plan = _benefits_plan()
    assert len(plan.records) == 14
    assert plan.records[9]["kind_source"] == "labels"
    assert plan.records[0]["retrieved_documents"][0]["content"].startswith("Employees are eligible for 16 weeks")
    assert plan.dataset_sha256 is not None and len(plan.dataset_sha256) == 64


def test_env_default_is_used_when_variable_is_unset() -> None:
    plan = _benefits_plan(env={})
    assert plan.criteria[1].init == {"deployment_name": "gpt-4o-mini", "threshold": 3}


def test_custom_fields_and_trec_samples_give_the_same_items_as_benefits() -> None:
    base = _benefits_plan()
    custom = _benefits_plan(
        ROOT / "mappings" / "custom_fields.yaml", ROOT / "samples" / "custom_fields" / "rag_eval.jsonl"
    )
    # the custom mapping adds response_completeness (ground_truth) and declares labels 0-3
    assert [it["item"]["query"] for it in custom.items] == [it["item"]["query"] for it in base.items]
    assert custom.criteria[0].init == {"ground_truth_label_min": 0, "ground_truth_label_max": 3}
    assert custom.criteria[-1].data_mapping == {
        "ground_truth": "{{item.ground_truth}}",
        "response": "{{item.response}}",
    }
    assert (
        custom.items[0]["item"]["ground_truth"]
        == "16 weeks of paid parental leave, after 6 months of continuous service."
    )
    trec = _benefits_plan(ROOT / "mappings" / "trec.yaml", ROOT / "samples" / "trec")
    assert trec.items == base.items
    assert trec.eval_body["testing_criteria"][0]["initialization_parameters"] == {
        "ground_truth_label_min": 0,
        "ground_truth_label_max": 3,
    }


def test_groundedness_criterion_matches_the_recorded_request() -> None:
    recorded = json.loads((DATA / "groundedness_request.json").read_text())["RequestBody"]
    mapping = Mapping.model_validate(
        {
            "dataset": {"fields": {"extra": {"tool_definitions": "tool_definitions"}}},
            "evaluators": [
                {"evaluator": "builtin.groundedness", "init": {"deployment_name": "${AZURE_AI_MODEL_DEPLOYMENT_NAME}"}}
            ],
        }
    )
    plan = build_plan(
        [],
        mapping,
        name=recorded["name"],
        environ={"AZURE_AI_MODEL_DEPLOYMENT_NAME": "sanitized-model-deployment-name"},
    )
    assert plan.eval_body["testing_criteria"] == recorded["testing_criteria"]
    assert plan.eval_body["data_source_config"] == recorded["data_source_config"]
    assert plan.eval_body["name"] == recorded["name"]


def test_inputs_remap_evaluator_input_to_item_field(tmp_path: Path) -> None:
    mapping = Mapping.model_validate(
        {
            "dataset": {"fields": {"extra": {"answer_text": "answer_text"}}},
            "evaluators": [
                {
                    "evaluator": "builtin.relevance",
                    "init": {"deployment_name": "d"},
                    "inputs": {"response": "answer_text"},
                }
            ],
        }
    )
    p = tmp_path / "d.jsonl"
    p.write_text(json.dumps({"query_id": "a", "query": "q?", "response": "r", "answer_text": "A"}) + "\n")
    plan = build_plan(read_records(p, mapping), mapping)
    assert plan.criteria[0].data_mapping == {"query": "{{item.query}}", "response": "{{item.answer_text}}"}
    assert plan.items == [{"item": {"query_id": "a", "query": "q?", "answer_text": "A"}}]
    assert plan.eval_body["data_source_config"]["item_schema"]["required"] == ["query", "answer_text"]


def test_inputs_key_that_is_not_an_input_gets_did_you_mean() -> None:
    mapping = Mapping.model_validate(
        {"evaluators": [{"evaluator": "builtin.document_retrieval", "inputs": {"retrieval_documents": "docs"}}]}
    )
    with pytest.raises(MappingError) as info:
        build_plan([], mapping)
    assert str(info.value) == (
        "evaluators[0].inputs.retrieval_documents: 'retrieval_documents' is not an input of "
        "builtin.document_retrieval (fix: did you mean 'retrieved_documents'?)"
    )


def test_criterion_names_are_unique() -> None:
    two = {"evaluator": "builtin.relevance", "init": {"deployment_name": "a"}}
    plan = build_plan([], Mapping.model_validate({"evaluators": [two, two]}))
    assert [c.name for c in plan.criteria] == ["relevance", "relevance_2"]
    named = {**two, "name": "judge"}
    with pytest.raises(MappingError, match="criterion name 'judge' is used twice"):
        build_plan([], Mapping.model_validate({"evaluators": [named, named]}))


def test_unknown_evaluator_is_a_mapping_error() -> None:
    with pytest.raises(MappingError, match=r"evaluators\[0\].evaluator: unknown evaluator 'builtin.groundednes'"):
        build_plan([], Mapping.model_validate({"evaluators": [{"evaluator": "builtin.groundednes"}]}))


def test_label_range_from_mapping_unless_given() -> None:
    m = Mapping.model_validate(
        {
            "labels": {"min": 1, "max": 5},
            "evaluators": [{"evaluator": "builtin.document_retrieval", "init": {"ground_truth_label_max": 9}}],
        }
    )
    assert build_plan([], m).criteria[0].init == {"ground_truth_label_max": 9, "ground_truth_label_min": 1}


def _init_mapping(init: dict[str, object], evaluator: str = "builtin.document_retrieval") -> Mapping:
    return Mapping.model_validate({"evaluators": [{"evaluator": evaluator, "init": init}]})


def test_a_lone_env_reference_takes_the_catalog_type_of_its_parameter() -> None:
    m = _init_mapping({"ground_truth_label_max": "${LMAX:-3}", "ndcg_threshold": "${NDCG}"})
    plan = build_plan([], m, environ={"NDCG": "0.25"})
    init = plan.eval_body["testing_criteria"][0]["initialization_parameters"]
    assert init["ground_truth_label_max"] == 3 and type(init["ground_truth_label_max"]) is int
    assert init["ndcg_threshold"] == 0.25 and type(init["ndcg_threshold"]) is float
    assert build_plan([], m, environ={"LMAX": "5", "NDCG": "1"}).criteria[0].init["ground_truth_label_max"] == 5
    judge = _init_mapping({"deployment_name": "${DEP:-gpt}", "threshold": "${T:-3}"}, "builtin.relevance")
    assert build_plan([], judge, environ={}).criteria[0].init == {"deployment_name": "gpt", "threshold": 3.0}
    # a string parameter keeps the text, even when it looks like a number
    assert build_plan([], judge, environ={"DEP": "42"}).criteria[0].init["deployment_name"] == "42"


@pytest.mark.parametrize(
    ("init", "env", "message"),
    [
        ({"ground_truth_label_max": "${LMAX:-3}"}, {"LMAX": "3.5"}, "expands to '3.5', which is not an integer"),
        ({"ground_truth_label_max": "${LMAX}"}, {"LMAX": "three"}, "which is not an integer"),
        ({"ground_truth_label_max": "3"}, {}, "ground_truth_label_max must be an integer, got str '3'"),
        ({"ground_truth_label_max": 3.0}, {}, "must be an integer, got float 3.0"),
        ({"ndcg_threshold": True}, {}, "ndcg_threshold must be a number, got bool True"),
        ({"ndcg_threshold": "x ${N:-1}"}, {}, "must be a number, got str 'x 1'"),
    ],
)
def test_init_values_of_the_wrong_type_are_refused(init: dict[str, object], env: dict[str, str], message: str) -> None:
    with pytest.raises(MappingError, match=message.replace("(", r"\(")) as info:
        build_plan([], _init_mapping(init), environ=env)
    assert info.value.field == f"evaluators[0].init.{next(iter(init))}"
    assert info.value.hint
