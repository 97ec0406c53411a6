"""The catalog agrees with Foundry's own builtin catalog, as recorded from the live service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foundry_bridge.catalog import CATALOG, get_evaluator

RECORDING = Path(__file__).resolve().parent / "data" / "reference" / "recordings" / "eval_catalog.json"
JSON_TYPES = {str: "string", int: "integer", float: "number"}


def _recorded_builtins() -> dict[str, dict]:
    found: dict[str, dict] = {}
    for entry in json.loads(RECORDING.read_text())["Entries"]:
        body = entry["ResponseBody"]
        if isinstance(body, dict) and "type=builtin" in entry["RequestUri"]:
            for value in body.get("value", []):
                found[value["name"]] = value
    return found


@pytest.fixture(scope="module")
def recorded() -> dict[str, dict]:
    return _recorded_builtins()


def test_every_catalog_entry_is_a_recorded_builtin(recorded: dict[str, dict]) -> None:
    assert set(CATALOG) == set(recorded)
    for name, spec in CATALOG.items():
        assert spec.version == recorded[name]["version"], name


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_inputs_match_the_service_data_schema(recorded: dict[str, dict], name: str) -> None:
    schema = recorded[name]["definition"]["data_schema"]
    spec = CATALOG[name]
    assert set(spec.input_names) == set(schema["properties"])
    groups = [tuple(g["required"]) for g in schema.get("anyOf", [])] or [tuple(schema["required"])]
    assert {frozenset(g) for g in spec.input_groups} == {frozenset(g) for g in groups}


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_init_parameters_match_the_service(recorded: dict[str, dict], name: str) -> None:
    schema = recorded[name]["definition"]["init_parameters"]
    spec = CATALOG[name]
    assert set(spec.param_names) == set(schema["properties"])
    for param in spec.params:
        assert JSON_TYPES[param.type] == schema["properties"][param.name]["type"], param.name
    required = {p.name for p in spec.params if p.required}
    # The service fills azure_ai_project itself for groundedness_pro (recorded samples never send it).
    assert required == set(schema["required"]) - {"azure_ai_project"}


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_metrics_and_directions_match_the_service(recorded: dict[str, dict], name: str) -> None:
    metrics = recorded[name]["definition"]["metrics"]
    spec = CATALOG[name]
    assert [m.name for m in spec.metrics] == list(metrics)
    for m in spec.metrics:
        assert m.kind == metrics[m.name]["type"], m.name
        assert m.higher_is_better == (metrics[m.name]["desirable_direction"] == "increase"), m.name


def test_lookup_by_short_name_and_did_you_mean() -> None:
    assert get_evaluator("groundedness").name == "builtin.groundedness"
    with pytest.raises(KeyError, match=r"did you mean 'builtin\.groundedness'"):
        get_evaluator("builtin.groundednes")
