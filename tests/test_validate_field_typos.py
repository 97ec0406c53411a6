"""Issue #22, items 1 and 2: a mapped field missing from a row, or misspelled in it, is an error located where it
is, with a did-you-mean ranked by the field's role; labels, scores and kinds get a fix line; the label range that
applies is stated with its source."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.mapping.loader import packaged_mapping_path
from foundry_bridge.validate import ValidationFailed, gated_records, validate

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DEFAULT_MAPPING = packaged_mapping_path()
JUDGE = "deployment_name: gpt-4o-mini"
RANKING_ROLE = "the mapping reads this query's ranking there (a query that retrieved nothing has [])"
RENAME_RANKING = (
    "did you mean 'retrieved_documents'? the row has 'retrieved_docs', which the mapping does not read: rename it, "
    "or set dataset.fields.retrieved_documents.path: retrieved_docs"
)


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines() if line.strip()]


def _write(tmp_path: Path, rows: list[dict[str, Any]], name: str = "d.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _mapping(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "m.yaml"
    p.write_text(text)
    return p


def _rename(row: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {(new if k == old else k): v for k, v in row.items()}


def _errors(report: Any) -> list[str]:
    return [str(p) for p in report.problems if p.severity == "error"]


# ---- item 1: a misspelled or missing mapped field --------------------------------------------------------------


def test_a_ranking_renamed_in_every_row_fails_validate_and_the_run_gate(tmp_path: Path) -> None:
    data = _write(tmp_path, [_rename(r, "retrieved_documents", "retrieved_docs") for r in _rows()])
    result = CliRunner().invoke(cli, ["validate", str(data)], catch_exceptions=False)
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        f"error: {data}: retrieved_documents: no row has 'retrieved_documents': the mapping reads each query's "
        "ranking there (a query that retrieved nothing has []) (fix: did you mean 'retrieved_documents'? the rows "
        "have 'retrieved_docs', which the mapping does not read: rename it, or set "
        "dataset.fields.retrieved_documents.path: retrieved_docs)"
    )
    assert result.output.splitlines()[-1].startswith("FAILED: 1 error(s)")
    with pytest.raises(ValidationFailed):  # what `run` and `plan` read through: nothing is sent
        list(gated_records(data))


def test_a_ranking_renamed_in_one_row_is_an_error_at_that_row_and_an_empty_one_is_not(tmp_path: Path) -> None:
    rows = _rows()
    rows[2] = _rename(rows[2], "retrieved_documents", "retrieved_docs")
    rows[4]["retrieved_documents"] = []  # an explicit empty ranking stays legal
    data = _write(tmp_path, rows)
    assert _errors(validate(data)) == [
        f"{data}:3: retrieved_documents: 'retrieved_documents' is missing: {RANKING_ROLE} (fix: {RENAME_RANKING})"
    ]


def test_a_ranking_missing_from_a_row_of_a_judge_only_mapping_is_an_error(tmp_path: Path) -> None:
    """No criterion reads the ranking, but every item carries it and the local metrics rank it."""
    m = _mapping(tmp_path, f"evaluators:\n  - evaluator: builtin.groundedness\n    init: {{{JUDGE}}}\n")
    rows = _rows()[:3]
    del rows[1]["retrieved_documents"]
    rows[2]["retrieved_documents"] = None
    data = _write(tmp_path, rows)
    fix = (
        "write [] for a query that retrieved nothing (a dataset without rankings sets "
        "dataset.fields.retrieved_documents: null)"
    )
    assert _errors(validate(data, mapping=m)) == [
        f"{data}:2: retrieved_documents: 'retrieved_documents' is missing: {RANKING_ROLE} (fix: {fix})",
        f"{data}:3: retrieved_documents: 'retrieved_documents' is null: {RANKING_ROLE} (fix: {fix})",
    ]


def test_a_judge_only_dataset_without_any_ranking_is_warned_once_not_refused(tmp_path: Path) -> None:
    """No row has a ranking, none spells one and no criterion reads it: a dataset of query and response under a
    mapping that lists only those fields still runs; the one warning says no ranking metric will be computed."""
    m = _mapping(
        tmp_path,
        "dataset:\n  fields: {query_id: query_id, query: query, response: response}\n"
        f"evaluators:\n  - evaluator: builtin.relevance\n    init: {{{JUDGE}}}\n",
    )
    data = _write(tmp_path, [{"query_id": f"q{i}", "query": "q?", "response": "a."} for i in range(3)])
    report = validate(data, mapping=m)
    assert _errors(report) == []
    (warning,) = [p for p in report.problems if p.code == "no_ranking"]
    assert warning.severity == "warning" and warning.line is None
    result = CliRunner().invoke(cli, ["validate", str(data), "--mapping", str(m)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "no row has 'retrieved_documents' and no criterion reads it" in result.output


def test_a_ranking_column_misspelled_or_null_in_a_table_is_an_error_at_its_row() -> None:
    pd = pytest.importorskip("pandas")
    rows = _rows()[:4]
    renamed = pd.DataFrame([_rename(r, "retrieved_documents", "retrieved_docs") for r in rows[:2]] + rows[2:])
    assert _errors(validate(renamed)) == [
        f"pandas.DataFrame: row {i}: retrieved_documents: 'retrieved_documents' is null: {RANKING_ROLE} "
        f"(fix: {RENAME_RANKING})"
        for i in (0, 1)
    ]


def test_a_key_close_to_a_mapped_field_gets_a_did_you_mean_at_its_row(tmp_path: Path) -> None:
    rows = _rows()[:4]
    rows[1] = _rename(rows[1], "kind", "knd")  # kind may be absent (derived from labels): not when misspelled
    rows[2] = _rename(rows[2], "response", "respones")  # read by the judges
    data = _write(tmp_path, rows)
    assert _errors(validate(data)) == [
        f"{data}:2: kind: 'kind' is missing: the mapping reads the query's kind there (fix: did you mean 'kind'? "
        "the row has 'knd', which the mapping does not read: rename it, or set dataset.fields.kind: knd)",
        f"{data}:3: response: required input 'response' of criterion 'groundedness' is missing: the row has no "
        "'response' (fix: did you mean 'response'? the row has 'respones', which the mapping does not read: rename "
        "it, or set dataset.fields.response: respones)",
        f"{data}:3: response: required input 'response' of criterion 'relevance' is missing: the row has no "
        "'response' (fix: did you mean 'response'? the row has 'respones', which the mapping does not read: rename "
        "it, or set dataset.fields.response: respones)",
    ]


# ---- item 2: weak hints ------------------------------------------------------------------------------------------


def test_a_misspelled_label_key_names_the_key_found_and_suggests_query_relevance_label(tmp_path: Path) -> None:
    rows = _rows()[:2]
    label = rows[0]["retrieval_ground_truth"][0]
    label["relevance_label"] = label.pop("query_relevance_label")
    data = _write(tmp_path, rows)
    assert _errors(validate(data)) == [
        f"{data}:1: retrieval_ground_truth[0].query_relevance_label: label is missing (fix: did you mean "
        "'query_relevance_label'? the entry has 'relevance_label', which the mapping does not read: rename it, or set "
        "dataset.fields.retrieval_ground_truth.query_relevance_label: relevance_label)"
    ]
    criteria = tmp_path / "c.json"
    dr = {
        "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
        "retrieved_documents": "{{item.retrieved_documents}}",
    }
    criteria.write_text(
        json.dumps(
            [
                {
                    "type": "azure_ai_evaluator",
                    "name": "dr",
                    "evaluator_name": "builtin.document_retrieval",
                    "data_mapping": dr,
                }
            ]
        )
    )
    assert _errors(validate(data, criteria_file=criteria)) == [
        f"{data}:1: retrieval_ground_truth[0].query_relevance_label: label is missing (fix: did you mean "
        "'query_relevance_label'? the entry has 'relevance_label', which no criterion reads: rename it)"
    ]


def test_labels_under_another_key_are_suggested_by_their_role_not_as_ground_truth(tmp_path: Path) -> None:
    every = [_rename(r, "retrieval_ground_truth", "ground_truth_docs") for r in _rows()]
    data = _write(tmp_path, every)
    assert _errors(validate(data)) == [
        f"{data}: retrieval_ground_truth: no row has the field 'retrieval_ground_truth' that "
        "document_retrieval.retrieval_ground_truth read (fix: did you mean 'ground_truth_docs'?)"
    ]
    one = _rows()[:3]
    one[1] = _rename(one[1], "retrieval_ground_truth", "ground_truth_docs")
    data = _write(tmp_path, one)
    assert _errors(validate(data)) == [
        f"{data}:2: retrieval_ground_truth: required input 'retrieval_ground_truth' of criterion 'document_retrieval' "
        "is missing: the row has no 'retrieval_ground_truth' (fix: did you mean 'retrieval_ground_truth'? the row has "
        "'ground_truth_docs', which the mapping does not read: rename it, or set "
        "dataset.fields.retrieval_ground_truth.path: ground_truth_docs)"
    ]


def test_an_abbreviated_kind_gets_a_did_you_mean(tmp_path: Path) -> None:
    rows = _rows()[:2]
    rows[1]["kind"] = "neg"
    data = _write(tmp_path, rows)
    assert _errors(validate(data)) == [
        f"{data}:2: kind: kind must be 'positive' or 'negative', got 'neg' (fix: did you mean 'negative'?)"
    ]


def test_a_quoted_score_gets_a_fix_line(tmp_path: Path) -> None:
    rows = _rows()[:2]
    rows[0]["retrieved_documents"][0]["relevance_score"] = "0.90"
    data = _write(tmp_path, rows)
    assert _errors(validate(data)) == [
        f"{data}:1: retrieved_documents[0].relevance_score: relevance score must be a number, got string '0.90' "
        "(fix: write 0.90 without quotes: a JSON number)"
    ]


def test_the_label_range_that_applies_is_stated_with_where_it_comes_from(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["validate", str(BENEFITS)], catch_exceptions=False)
    lines = result.output.splitlines()
    assert lines[-1] == "OK: 0 error(s), 1 warning(s) in 14 row(s)"
    assert lines[-2] == (
        f"note: criterion 'document_retrieval' checks labels against 0-4, from the mapping's `labels` "
        f"({DEFAULT_MAPPING}); the data's labels span 0-3: if 3 is the top grade, declare `labels: {{min: 0, max: 3}}` "
        "in the mapping, so that a 4 is an error"
    )
    m = _mapping(tmp_path, "evaluators:\n  - evaluator: builtin.document_retrieval\n")
    assert validate(BENEFITS, mapping=m).notes == [
        "criterion 'document_retrieval' checks labels against 0-4, the default (the mapping sets no `labels`); the "
        "data's labels span 0-3: if 3 is the top grade, declare `labels: {min: 0, max: 3}` in the mapping, so that "
        "a 4 is an error"
    ]
    out = json.loads(
        CliRunner().invoke(cli, ["validate", str(BENEFITS), "--mapping", str(m), "--format", "json"]).output
    )
    assert out["notes"] == validate(BENEFITS, mapping=m).notes
