"""`foundry-bridge plan` and `foundry-bridge schema`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli, main
from foundry_bridge.mapping.schema import mapping_json_schema_text

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def test_plan_prints_the_eval_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_AI_MODEL_DEPLOYMENT_NAME", "my-judge")
    result = CliRunner().invoke(cli, ["plan", str(BENEFITS)], catch_exceptions=False)
    assert result.exit_code == 0
    expected = json.loads((ROOT / "tests" / "data_plan" / "benefits_eval.json").read_text())
    assert json.loads(result.output) == expected


def test_plan_out_writes_eval_and_items(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AZURE_AI_MODEL_DEPLOYMENT_NAME", raising=False)
    out = tmp_path / "plan"
    result = CliRunner().invoke(
        cli,
        [
            "plan",
            str(ROOT / "samples" / "trec"),
            "--mapping",
            str(ROOT / "mappings" / "trec.yaml"),
            "--out",
            str(out),
            "--name",
            "trec-run",
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    body = json.loads((out / "eval.json").read_text())
    assert body["name"] == "trec-run"
    assert body["testing_criteria"][1]["initialization_parameters"] == {
        "deployment_name": "gpt-4o-mini",
        "threshold": 3,
    }
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert len(items) == 14 and items[0]["item"]["query_id"] == "q01"
    assert items[0]["item"]["retrieved_documents"][0] == {"document_id": "pol-leave-01", "relevance_score": 0.92}


def test_plan_bad_data_is_an_error_with_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "d.jsonl"
    p.write_text('{"query_id": "a", "context": ["x", "y"]}\n')
    with pytest.raises(SystemExit) as info:
        main(["plan", str(p)])
    assert info.value.code == 1
    assert capsys.readouterr().err.startswith(f"Error: {p}:1: context: context is a list of 2 chunks, not a string")


def test_schema_stdout_and_out(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["schema"], catch_exceptions=False)
    assert json.loads(result.output)["title"] == "foundry_bridge mapping"
    target = tmp_path / "s.json"
    CliRunner().invoke(cli, ["schema", "--out", str(target)], catch_exceptions=False)
    assert target.read_text() == result.output


def test_committed_schema_is_up_to_date() -> None:
    committed = (ROOT / "mappings" / "mapping.schema.json").read_text()
    assert committed == mapping_json_schema_text(), "run: foundry-bridge schema --out mappings/mapping.schema.json"


def test_schema_rejects_unknown_keys_like_the_loader() -> None:
    schema = json.loads(mapping_json_schema_text())
    assert schema["additionalProperties"] is False
    assert "evaluators" in schema["properties"]
