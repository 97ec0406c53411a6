"""azd interop: `plan --format azd` writes evals/azure.eval.yaml in the format the azure.ai.evaluations extension
decodes, and such a file is read back as a mapping (same criteria, same items)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import MappingError
from foundry_bridge.mapping import build_plan, load_mapping
from foundry_bridge.validate import validate

ROOT = Path(__file__).resolve().parents[1]
CUSTOM = ROOT / "samples" / "custom_fields" / "rag_eval.jsonl"
CUSTOM_MAPPING = ROOT / "mappings" / "custom_fields.yaml"

# The YAML keys of the extension's configuration types (Azure/azure-dev, cli/azd/extensions/azure.ai.evaluations:
# internal/project/eval_config.go EvalConfig, DatasetDecl, Eval, Target; internal/pkg/evalcore/evaluator.go
# EvaluatorRef), which it decodes with KnownFields (unknown keys are errors).
EXTENSION_KEYS = {
    "config": {"datasets", "evaluators", "evals"},
    "dataset": {"name", "file", "version"},
    "eval": {
        "name",
        "id",
        "description",
        "dataset",
        "source",
        "evaluation_level",
        "max_samples",
        "evaluators",
        "target",
    },
    "ref": {"evaluator", "name", "version", "initialization_parameters", "data_mapping"},
}


def _azd_rules(config: dict[str, Any], base: Path) -> None:
    """What the extension's EvalConfig.Validate checks before a deploy, plus the file of each local dataset."""
    assert set(config) <= EXTENSION_KEYS["config"]
    datasets = {d["name"]: d for d in config.get("datasets", [])}
    assert len(datasets) == len(config.get("datasets", []))
    for d in datasets.values():
        assert set(d) <= EXTENSION_KEYS["dataset"] and d["name"]
        assert (base / d["file"]).is_file()  # relative to the azure.eval.yaml's folder
    assert config["evals"], "at least one eval"
    for e in config["evals"]:
        assert set(e) <= EXTENSION_KEYS["eval"] and e["name"]
        assert e["dataset"] in datasets and e.get("evaluation_level", "turn") in ("turn", "conversation")
        criteria = [r.get("name") or r["evaluator"].removeprefix("builtin.") for r in e["evaluators"]]
        assert len(set(criteria)) == len(criteria) and criteria
        for r in e["evaluators"]:
            assert set(r) <= EXTENSION_KEYS["ref"] and r["evaluator"].startswith("builtin.")
            assert all(isinstance(v, str) and v.startswith("{{item.") for v in r["data_mapping"].values())


def _write_azd(tmp_path: Path) -> Path:
    result = CliRunner().invoke(
        cli,
        ["plan", str(CUSTOM), "--mapping", str(CUSTOM_MAPPING), "--out", str(tmp_path), "--format", "azd"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return tmp_path / "evals" / "azure.eval.yaml"


def test_plan_format_azd_writes_a_file_the_extension_accepts(tmp_path: Path) -> None:
    path = _write_azd(tmp_path)
    config = yaml.safe_load(path.read_text())
    _azd_rules(config, path.parent)
    mapping = load_mapping(CUSTOM_MAPPING)
    plan = build_plan(read_records(CUSTOM, mapping), mapping)
    refs = config["evals"][0]["evaluators"]
    assert [(r["evaluator"], r["name"]) for r in refs] == [(c.evaluator, c.name) for c in plan.criteria]
    assert [r["data_mapping"] for r in refs] == [c.data_mapping for c in plan.criteria]
    rows = [json.loads(line) for line in (path.parent / config["datasets"][0]["file"]).read_text().splitlines()]
    kinds = [{"kind": r["kind"]} if r["kind_source"] == "declared" else {} for r in plan.records]
    assert rows == [{**it["item"], **kind} for it, kind in zip(plan.items, kinds, strict=True)]
    assert "kind" not in plan.items[0]["item"] and rows[0]["kind"] == "positive"  # declared (meta.kind): kept


def test_the_written_file_reads_back_as_the_same_criteria_and_items(tmp_path: Path) -> None:
    path = _write_azd(tmp_path)
    dataset = path.parent / "datasets" / "rag_eval.jsonl"
    original_mapping = load_mapping(CUSTOM_MAPPING)
    original = build_plan(read_records(CUSTOM, original_mapping), original_mapping)
    azd_mapping = load_mapping(path)
    again = build_plan(read_records(dataset, azd_mapping), azd_mapping)
    assert again.eval_body["testing_criteria"] == original.eval_body["testing_criteria"]
    assert again.items == original.items
    assert validate(dataset, mapping=path).errors == 0


HAND_WRITTEN = """\
datasets:
  - name: support-golden
    file: ./datasets/support-golden.jsonl
evals:
  - name: support-quality
    dataset: support-golden
    evaluation_level: turn
    evaluators:
      - evaluator: builtin.relevance
        name: relevance_strict
        initialization_parameters:
          deployment_name: gpt-4.1-nano
          threshold: 4
        data_mapping:
          query: "{{item.customer_message}}"
          response: "{{item.response}}"
"""


def test_a_hand_written_azd_file_maps_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "azure.eval.yaml"
    path.write_text(HAND_WRITTEN)
    mapping = load_mapping(path)
    (entry,) = mapping.evaluators
    assert (entry.evaluator, entry.name, entry.inputs) == (
        "builtin.relevance",
        "relevance_strict",
        {"query": "customer_message", "response": "response"},
    )
    assert entry.init == {"deployment_name": "gpt-4.1-nano", "threshold": 4}
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"query_id": "1", "customer_message": "Where is my order?", "response": "Shipped."}))
    plan = build_plan(read_records(data, mapping), mapping)
    assert plan.eval_body["testing_criteria"][0]["data_mapping"] == {
        "query": "{{item.customer_message}}",
        "response": "{{item.response}}",
    }
    assert plan.items[0]["item"]["customer_message"] == "Where is my order?"


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("evaluator: builtin.relevance", "evaluator: support-rubric", 9, "evaluator 'support-rubric' is not a builtin"),
        ("        name: relevance_strict", "        verison: '3'", 10, "unknown key 'verison'"),
        ('"{{item.customer_message}}"', '"{{sample.output_text}}"', 15, "is not a dataset column binding"),
        ("evaluator: builtin.relevance", "evaluator: builtin.relevanse", 9, "did you mean 'builtin.relevance'?"),
    ],
)
def test_what_cannot_run_offline_is_refused_at_its_line(
    tmp_path: Path, old: str, new: str, line: int, message: str
) -> None:
    path = tmp_path / "azure.eval.yaml"
    path.write_text(HAND_WRITTEN.replace(old, new))
    with pytest.raises(MappingError) as info:
        load_mapping(path)
    assert info.value.line == line and message in str(info.value)


def test_a_file_with_several_evals_asks_for_one(tmp_path: Path) -> None:
    config = yaml.safe_load(HAND_WRITTEN)
    config["evals"].append({**config["evals"][0], "name": "second"})
    path = tmp_path / "azure.eval.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(MappingError, match="the file declares 2 evals"):
        load_mapping(path)


# `azd ai eval init` names the judge `model` (the extension binds it to `deployment_name`, the builtins' spelling).
AZD_INIT = HAND_WRITTEN.replace("deployment_name: gpt-4.1-nano", "model: gpt-4.1-nano")


def test_the_judge_written_as_model_is_the_deployment_name(tmp_path: Path) -> None:
    path = tmp_path / "azure.eval.yaml"
    path.write_text(AZD_INIT)
    (entry,) = load_mapping(path).evaluators
    assert entry.init == {"deployment_name": "gpt-4.1-nano", "threshold": 4}
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"query_id": "1", "customer_message": "Where is my order?", "response": "Shipped."}))
    result = CliRunner().invoke(cli, ["plan", str(data), "--mapping", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (criterion,) = json.loads(result.output)["testing_criteria"]
    assert criterion["initialization_parameters"] == {"deployment_name": "gpt-4.1-nano", "threshold": 4}
    assert validate(data, mapping=path).errors == 0


def test_a_mapping_file_may_name_the_judge_model_too(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("evaluators:\n  - evaluator: builtin.relevance\n    init: {model: gpt-4o-mini}\n")
    (entry,) = load_mapping(path).evaluators
    assert entry.init == {"deployment_name": "gpt-4o-mini"}


def test_the_judge_named_twice_is_refused_at_the_alias(tmp_path: Path) -> None:
    path = tmp_path / "azure.eval.yaml"
    path.write_text(AZD_INIT.replace("          threshold: 4", "          deployment_name: gpt-4o"))
    with pytest.raises(MappingError) as info:
        load_mapping(path)
    assert info.value.line == 12 and "'model' and 'deployment_name' name the same parameter" in str(info.value)


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("          threshold: 4", "          threshold: high", 13, "threshold must be a number"),
        ("          threshold: 4", "          treshold: 4", 13, "'treshold' is not an initialization parameter"),
        ("          model: gpt-4.1-nano", "          model: ''", 12, "deployment_name is empty"),
        ("          query: ", "          querry: ", 15, "'querry' is not an input of builtin.relevance"),
    ],
)
def test_validation_locates_a_problem_of_an_azd_file_at_its_key(
    tmp_path: Path, old: str, new: str, line: int, message: str
) -> None:
    path = tmp_path / "azure.eval.yaml"
    path.write_text(AZD_INIT.replace(old, new))
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"query_id": "1", "customer_message": "Where is my order?", "response": "Shipped."}))
    result = CliRunner().invoke(cli, ["validate", str(data), "--mapping", str(path)])
    assert result.exit_code == 1
    assert f"error: {path}:{line}: " in result.output and message in result.output, result.output


def _metrics(data: Path, mapping: Path) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["metrics", str(data), "--mapping", str(mapping)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out: dict[str, Any] = json.loads(result.output)
    del out["params"]["input"], out["assembly"]  # the file names; the azd rows carry no document text
    return out


def test_metrics_read_back_through_the_azd_file_keep_k_kinds_and_settings(tmp_path: Path) -> None:
    path = _write_azd(tmp_path)
    original = _metrics(CUSTOM, CUSTOM_MAPPING)
    again = _metrics(path.parent / "datasets" / "rag_eval.jsonl", path)
    assert original["params"]["ks"] == again["params"]["ks"] == [3, 10]
    assert again["params"]["surface_threshold"] == 0.6
    assert [(q["query_id"], q["kind"], q["kind_source"]) for q in again["per_query"]] == [
        (q["query_id"], q["kind"], q["kind_source"]) for q in original["per_query"]
    ]
    assert again == original
    assert load_mapping(path).labels == load_mapping(CUSTOM_MAPPING).labels


def test_a_bad_setting_in_the_azd_file_comment_is_located(tmp_path: Path) -> None:
    path = _write_azd(tmp_path)
    text = path.read_text()
    line = next(n for n, row in enumerate(text.splitlines(), 1) if row.startswith("# foundry-bridge:"))
    path.write_text(text.replace("nan_policy: propagate", "nan_policy: sometimes"))
    with pytest.raises(MappingError) as info:
        load_mapping(path)
    assert info.value.line == line and info.value.field == "metrics.nan_policy"
