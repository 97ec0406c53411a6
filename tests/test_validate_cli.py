"""`foundry-bridge validate`: exit codes, text and JSON output, option conflicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli, main

ROOT = Path(__file__).resolve().parents[1]
BROKEN = ROOT / "samples" / "broken"
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def test_sample_exits_0_with_its_one_deliberate_warning() -> None:
    result = CliRunner().invoke(cli, ["validate", str(BENEFITS)], catch_exceptions=False)
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert lines[-1] == "OK: 0 error(s), 1 warning(s) in 14 row(s)"
    # q07 (line 7) is the sample's search failure: its relevant passage was never retrieved
    assert lines[0].startswith(
        f"warning: {BENEFITS}: retrieved_documents: 1 row(s) retrieve no document with a non-zero label"
    )
    assert "7" in lines[0]


def test_broken_sample_exits_1_and_lists_every_problem() -> None:
    result = CliRunner().invoke(cli, ["validate", str(BROKEN / "rag_eval.jsonl")])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[-1] == "FAILED: 7 error(s), 5 warning(s) in 7 row(s)"
    assert sum(line.startswith("error: ") for line in lines) == 7
    assert sum(line.startswith("warning: ") for line in lines) == 5
    assert any(":5: malformed JSON line" in line for line in lines)


def test_json_format_has_problems_and_counts() -> None:
    result = CliRunner().invoke(cli, ["validate", str(BROKEN / "rag_eval.jsonl"), "--format", "json"])
    assert result.exit_code == 1
    out = json.loads(result.output)
    assert out["ok"] is False
    assert out["counts"]["errors"] == 7 and out["counts"]["warnings"] == 5 and out["counts"]["rows"] == 7
    assert out["counts"]["by_code"]["duplicate_query_id"] == 1
    first = out["problems"][0]
    assert set(first) == {"severity", "code", "message", "file", "line", "field", "hint"}
    assert (first["code"], first["line"], first["field"]) == (
        "label_not_integer",
        1,
        "retrieval_ground_truth[0].query_relevance_label",
    )


def test_criteria_file_with_the_docs_typo() -> None:
    result = CliRunner().invoke(cli, ["validate", str(BENEFITS), "--criteria", str(BROKEN / "docs_typo_criteria.json")])
    assert result.exit_code == 1
    assert (
        "'retrieval_documents' is not an input of builtin.document_retrieval (fix: did you mean "
        "'retrieved_documents'?)" in result.output
    )


def test_warnings_only_exit_0(tmp_path: Path) -> None:
    p = tmp_path / "d.jsonl"
    row = json.loads(BENEFITS.read_text().splitlines()[0])
    row["response"] = ""
    p.write_text(json.dumps(row) + "\n")
    result = CliRunner().invoke(cli, ["validate", str(p)])
    assert result.exit_code == 0
    assert result.output.endswith("OK: 0 error(s), 1 warning(s) in 1 row(s)\n")


def test_bad_mapping_is_reported_as_a_problem(tmp_path: Path) -> None:
    m = tmp_path / "m.yaml"
    m.write_text("evaluators:\n  - evaluator: builtin.relevance\n    inputz: {}\n")
    result = CliRunner().invoke(cli, ["validate", str(BENEFITS), "--mapping", str(m)])
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        f"error: {m}:3: evaluators[0].inputz: unknown key 'inputz' (fix: did you mean 'inputs'?)"
    )


def test_mapping_and_criteria_are_exclusive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate", str(BENEFITS), "--mapping", "a.yaml", "--criteria", "b.json"])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        "Error: --mapping and --criteria are mutually exclusive: criteria come from one or the other\n"
    )


def test_main_exits_1_on_errors() -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate", str(BROKEN / "rag_eval.jsonl")])
    assert info.value.code == 1
