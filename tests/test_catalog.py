"""The catalog agrees with the published contracts (``foundry_bridge.contracts``: the specs Foundry's builtins are
registered from) for every evaluator it covers; the older recorded service catalog differs only where Foundry
moved on (versions, document_retrieval's outputs, groundedness_pro's init parameters)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_bridge.catalog import CATALOG, get_evaluator
from foundry_bridge.contracts import Contract, get_contract

RECORDING = Path(__file__).resolve().parent / "data" / "reference" / "recordings" / "eval_catalog.json"
JSON_TYPES = {str: "string", int: "integer", float: "number", list: "array"}
CONVERSATION_FORM = frozenset({"messages"})  # published for groundedness 16; this project maps turns, not chats


def _recorded_builtins() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for entry in json.loads(RECORDING.read_text())["Entries"]:
        body = entry["ResponseBody"]
        if isinstance(body, dict) and "type=builtin" in entry["RequestUri"]:
            for value in body.get("value", []):
                found[value["name"]] = value
    return found


def _published(name: str) -> Contract:
    return get_contract(name)


def test_every_catalog_entry_is_a_published_builtin_at_its_version() -> None:
    versions = {name: spec.version for name, spec in CATALOG.items()}
    assert versions == {
        "builtin.document_retrieval": "3",
        "builtin.retrieval": "12",
        "builtin.groundedness": "16",
        "builtin.relevance": "11",
        "builtin.response_completeness": "9",
        "builtin.groundedness_pro": "7",
        "builtin.quality_grader": "6",
        "builtin.label_model": "1",
        "builtin.score_model": "1",
    }
    for name, spec in CATALOG.items():
        assert spec.version == str(_published(name).version), name


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_inputs_match_the_published_data_schema(name: str) -> None:
    contract, spec = _published(name), CATALOG[name]
    assert set(spec.input_names) == set(contract.inputs)
    raw = json.loads((Path(__file__).parent / "data" / "reference" / "evaluators" / "builtin-specs.json").read_text())
    schema = raw[name]["dataMappingSchema"]
    required = [tuple(schema["required"])] if "required" in schema else []  # the graders' schema is empty
    groups = [tuple(g["required"]) for g in schema.get("anyOf", [])] or required
    assert {frozenset(g) for g in spec.input_groups} == {frozenset(g) for g in groups} - {CONVERSATION_FORM}


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_init_parameters_match_the_published_contract(name: str) -> None:
    contract, spec = _published(name), CATALOG[name]
    assert set(spec.param_names) == set(contract.init_params)
    for param in spec.params:
        assert JSON_TYPES[param.type] == contract.init_params[param.name]["type"], param.name
    assert {p.name for p in spec.params if p.required} == set(contract.required_init)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_published_metrics_directions_and_ranges_match(name: str) -> None:
    contract, spec = _published(name), CATALOG[name]
    published = spec.outputs or spec.metrics  # the published output schema: ``outputs`` when declared
    assert [m.name for m in published] == [m.name for m in contract.metrics]
    for m in published:
        c = contract.metric(m.name)
        assert c is not None
        assert (m.kind, m.higher_is_better) == (c.type, c.higher_is_better), m.name
        if c.type != "boolean":
            assert (m.min_value, m.max_value) == (c.min_value, c.max_value), m.name


def test_document_retrieval_v3_one_output_metric_the_nine_measures_as_rows() -> None:
    spec = get_evaluator("document_retrieval")
    assert [m.name for m in spec.outputs] == ["document_retrieval"]
    assert spec.outputs[0].same_as == "ndcg@3" and spec.properties_key == "document_retrieval_properties"
    assert [m.name for m in spec.metrics][:2] == ["ndcg@3", "xdcg@3"] and len(spec.metrics) == 9
    assert get_evaluator("relevance").properties_key is None


def test_quality_grader_is_a_preview_0_1_verdict_whose_abstention_is_correct_on_negative_queries() -> None:
    spec = get_evaluator("quality_grader")
    assert spec.preview and spec.needs_deployment and spec.abstention_correct_on_negative
    assert spec.input_groups == (("query", "response"),) and "context" in spec.input_names
    m = spec.metric("quality_grader")
    assert (m.min_value, m.max_value, m.higher_is_better) == (0, 1, True)
    assert not get_evaluator("groundedness").abstention_correct_on_negative


def test_the_recorded_service_catalog_is_older_but_names_the_same_inputs() -> None:
    recorded = _recorded_builtins()
    # quality_grader was not registered when it was recorded; the graders' page was filtered out (README there)
    assert set(recorded) == set(CATALOG) - {"builtin.quality_grader", "builtin.label_model", "builtin.score_model"}
    assert {n: v["version"] for n, v in recorded.items()} == {
        "builtin.document_retrieval": "2",
        "builtin.retrieval": "8",
        "builtin.groundedness": "8",
        "builtin.relevance": "8",
        "builtin.response_completeness": "5",
        "builtin.groundedness_pro": "6",
    }
    for name, value in recorded.items():
        assert set(value["definition"]["data_schema"]["properties"]) <= set(CATALOG[name].input_names), name
    assert list(recorded["builtin.document_retrieval"]["definition"]["metrics"]) == [
        m.name for m in CATALOG["builtin.document_retrieval"].metrics
    ]


def test_lookup_by_short_name_and_did_you_mean() -> None:
    assert get_evaluator("groundedness").name == "builtin.groundedness"
    with pytest.raises(KeyError, match=r"did you mean 'builtin\.groundedness'"):
        get_evaluator("builtin.groundednes")
