"""One gate: what `validate` rejects, `plan` and `run` refuse too, before writing a folder or sending a request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.cli import main
from foundry_bridge.validate import ValidationFailed, gate

Capture = pytest.CaptureFixture[str]
ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DOCRET_ONLY = "evaluators:\n  - evaluator: builtin.document_retrieval\n"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines() if line.strip()][:3]


def _write(tmp_path: Path, rows: list[dict[str, Any]], mapping: str = DOCRET_ONLY) -> tuple[Path, Path]:
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mapping_file = tmp_path / "m.yaml"
    mapping_file.write_text(mapping)
    return data, mapping_file


def _unknown_init_param(tmp_path: Path) -> tuple[Path, Path]:
    return _write(tmp_path, _rows(), DOCRET_ONLY + "    init: {ground_truth_label_maxx: 4}\n")


def _duplicate_query_id(tmp_path: Path) -> tuple[Path, Path]:
    rows = _rows()
    rows[2]["query_id"] = rows[0]["query_id"]
    return _write(tmp_path, rows)


def _too_many_documents(tmp_path: Path) -> tuple[Path, Path]:
    rows = _rows()
    rows[1]["retrieved_documents"] = [{"document_id": f"d{i}", "relevance_score": 1.0} for i in range(10_001)]
    return _write(tmp_path, rows)


def _label_out_of_range(tmp_path: Path) -> tuple[Path, Path]:
    rows = _rows()
    rows[0]["retrieval_ground_truth"][0]["query_relevance_label"] = 7
    return _write(tmp_path, rows)


CASES = {
    "unknown init param": (
        _unknown_init_param,
        "m.yaml:3: evaluators[0].init.ground_truth_label_maxx: 'ground_truth_label_maxx' is not an initialization "
        "parameter of builtin.document_retrieval (fix: did you mean 'ground_truth_label_max'?)",
    ),
    "duplicate query_id": (
        _duplicate_query_id,
        "d.jsonl:3: query_id: query_id 'q01' is already used on line 1 (fix: give every query a unique id)",
    ),
    "more than 10,000 documents": (
        _too_many_documents,
        "d.jsonl:2: retrieved_documents: 10001 documents in retrieved_documents; Foundry accepts at most 10000 "
        "(fix: keep the top 10000)",
    ),
    "label out of range": (
        _label_out_of_range,
        "d.jsonl:1: retrieval_ground_truth[0].query_relevance_label: label 7 is above ground_truth_label_max 4 "
        "(criterion 'document_retrieval') (fix: fix the label, or declare the range in the mapping's `labels` "
        "(min/max))",
    ),
}


def _cli(args: list[str], capsys: Capture) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(args)
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


@pytest.fixture
def no_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if `run` creates a backend (the emulator, a Foundry client, a judge): nothing may be sent."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a backend was created although validation failed")

    monkeypatch.setattr("foundry_bridge.runner.get_backend", refuse)


@pytest.mark.parametrize("case", CASES)
def test_plan_and_run_refuse_what_validate_rejects(
    case: str, tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch, no_backend: None
) -> None:
    make, expected = CASES[case]
    data, mapping = make(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, out, _ = _cli(["validate", str(data), "--mapping", str(mapping)], capsys)
    assert code == 1
    errors = [line.removeprefix("error: ") for line in out.splitlines() if line.startswith("error: ")]
    assert any(e.endswith(expected) for e in errors), out

    code, out, err = _cli(["plan", str(data), "--mapping", str(mapping), "--out", str(tmp_path / "plan")], capsys)
    assert code == 1 and out == ""
    assert all(e in err for e in errors), err
    assert not (tmp_path / "plan").exists()

    code, out, err = _cli(["run", str(data), "--mapping", str(mapping), "--backend", "mock", "--out", "r"], capsys)
    assert code == 1 and out == ""
    assert all(e in err for e in errors), err
    assert "nothing was written or submitted" in err
    assert not (tmp_path / "r").exists() and not (tmp_path / "runs").exists()


def test_plan_without_out_prints_no_body_on_error(tmp_path: Path, capsys: Capture) -> None:
    data, mapping = _label_out_of_range(tmp_path)
    code, out, err = _cli(["plan", str(data), "--mapping", str(mapping)], capsys)
    assert code == 1 and out == "" and "label 7 is above ground_truth_label_max 4" in err


def test_skip_validation_is_loud_and_lets_plan_through(tmp_path: Path, capsys: Capture) -> None:
    data, mapping = _label_out_of_range(tmp_path)
    code, _, err = _cli(
        ["plan", str(data), "--mapping", str(mapping), "--out", str(tmp_path / "p"), "--skip-validation"], capsys
    )
    assert code == 0
    assert "WARNING: plan --skip-validation: NOTHING WAS CHECKED" in err
    assert (tmp_path / "p" / "items.jsonl").is_file()


def test_skip_validation_on_run_warns(tmp_path: Path, capsys: Capture, monkeypatch: pytest.MonkeyPatch) -> None:
    data, mapping = _label_out_of_range(tmp_path)
    monkeypatch.chdir(tmp_path)
    args = ["run", str(data), "--mapping", str(mapping), "--backend", "mock", "--out", "r", "--skip-validation", "-q"]
    code, _, err = _cli(args, capsys)
    assert "WARNING: run --skip-validation: NOTHING WAS CHECKED" in err
    assert (tmp_path / "r" / "plan.json").is_file(), (code, err)


def test_gate_returns_the_report_or_raises_with_every_error(tmp_path: Path) -> None:
    report = gate(BENEFITS)
    assert report.ok and report.rows == 14
    data, mapping = _duplicate_query_id(tmp_path)
    with pytest.raises(ValidationFailed) as info:
        gate(data, mapping, command="run")
    assert info.value.report.by_code["duplicate_query_id"] == 1 and info.value.exit_code == 1
    assert (
        str(info.value).splitlines()[0]
        == f"{data}:3: query_id: query_id 'q01' is already used on line 1 (fix: give every query a unique id)"
    )
    last = str(info.value).splitlines()[-1]  # in Python's words; the command line prints the command's
    assert last.startswith("run_evaluation(): 1 validation error(s) in 3 row(s)") and "skip_validation=True" in last
    assert info.value.cli_text().splitlines()[-1].startswith("run: 1 validation error(s) in 3 row(s)")


def test_every_rule_code_is_documented_with_its_severity() -> None:
    from foundry_bridge.validate import RULES

    doc = (ROOT / "docs" / "validation.md").read_text()
    errors, warnings = doc.split("## Errors (exit 1)")[1].split("## Warnings")
    for rule in RULES.values():
        section = errors if rule.severity == "error" else warnings
        assert f"`{rule.code}`" in section, f"{rule.code} ({rule.severity}) is not in docs/validation.md"


def test_dataset_and_mapping_never_import_the_gate() -> None:
    import re

    imports_gate = re.compile(r"from \.\.validate\b|from foundry_bridge\.validate\b|import foundry_bridge\.validate\b")
    offenders = [
        str(path.relative_to(ROOT))
        for layer in ("dataset", "mapping")
        for path in (ROOT / "foundry_bridge" / layer).rglob("*.py")
        if imports_gate.search(path.read_text())
    ]
    assert offenders == []


def test_gated_records_read_the_data_once_and_refuse_at_the_end(tmp_path: Path) -> None:
    from foundry_bridge.validate import gated_records

    ids = [r.query_id for r in gated_records(BENEFITS)]
    assert ids == [json.loads(line)["query_id"] for line in BENEFITS.read_text().splitlines() if line.strip()]
    data, mapping = _duplicate_query_id(tmp_path)
    seen: list[str] = []
    with pytest.raises(ValidationFailed, match="query_id 'q01' is already used on line 1"):
        for record in gated_records(data, mapping, command="plan"):
            seen.append(record.query_id)
    assert len(seen) == 3  # every row was read (and usable) before the refusal
