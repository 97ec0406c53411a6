"""Issue #34, items 15-18: what a new user with their own field names sees from `validate`.

The dataset is the user's own: 40 queries with `qid`, `question`, `hits: [{doc, score}]`, `gold: [{doc, grade}]`,
`type: answerable|unanswerable`, `context`, `answer`; each test asserts on the lines `validate` prints.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from foundry_bridge.cli import cli
from foundry_bridge.dataset import read_records
from foundry_bridge.mapping.loader import load_mapping

FIELDS = """\
    query_id: qid
    query: question
    kind: {kind}
    context: context
    response: answer
    ground_truth: null
    retrieved_documents: {{path: hits, document_id: doc, relevance_score: {score}, content: null, title: null}}
    retrieval_ground_truth: {{path: gold, document_id: doc, query_relevance_label: grade}}
"""
KIND_MAP = "{field: type, negative: [unanswerable]}"


def _rows(n: int = 40) -> list[dict[str, Any]]:
    """Every fourth query unanswerable (its one label is 0); the others have two relevant documents."""
    rows = []
    for i in range(1, n + 1):
        answerable = i % 4 != 0
        hits = [{"doc": f"d{i}-{j}", "score": round(0.9 - 0.1 * j, 2)} for j in range(5)]
        gold = [{"doc": f"d{i}-0", "grade": 2}, {"doc": f"d{i}-3", "grade": 1}] if answerable else []
        gold = gold or [{"doc": f"d{i}-1", "grade": 0}]
        rows.append(
            {
                "qid": f"q{i}",
                "question": f"What does policy {i} cover?",
                "hits": hits,
                "gold": gold,
                "type": "answerable" if answerable else "unanswerable",
                "context": f"Policy {i} covers ...",
                "answer": "It covers ..." if answerable else "I don't know.",
            }
        )
    return rows


def _files(
    tmp_path: Path, rows: list[dict[str, Any]], *, kind: str = KIND_MAP, score: str = "score"
) -> tuple[Path, Path]:
    data = tmp_path / "eval.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    mapping = tmp_path / "mine.yaml"
    mapping.write_text(
        "version: 1\ndataset:\n  fields:\n"
        + FIELDS.format(kind=kind, score=score)
        + "labels: {min: 0, max: 2}\nevaluators:\n  - evaluator: builtin.document_retrieval\n"
    )
    return data, mapping


def _validate(data: Path, mapping: Path | None) -> tuple[int, list[str]]:
    args = ["validate", str(data)] + (["--mapping", str(mapping)] if mapping else [])
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.output.splitlines()


def test_the_users_dataset_with_its_mapping_is_clean(tmp_path: Path) -> None:
    code, lines = _validate(*_files(tmp_path, _rows()))
    assert lines[-1] == "OK: 0 error(s), 0 warning(s) in 40 row(s)"
    assert code == 0


# ---- item 18: the data's own kind values ------------------------------------------------------------------------


def test_kind_values_mapped_to_negative_read_as_declared_kinds(tmp_path: Path) -> None:
    data, mapping = _files(tmp_path, _rows())
    assert _validate(data, mapping)[0] == 0
    records = list(read_records(data, load_mapping(mapping)))
    kinds = {r.query_id: (r.kind, r.kind_source) for r in records}
    assert kinds["q4"] == ("negative", "declared") and kinds["q1"] == ("positive", "declared")
    assert sum(k == ("negative", "declared") for k in kinds.values()) == 10
    # metrics (its columnar reader) splits the queries the same way
    result = CliRunner().invoke(cli, ["metrics", str(data), "--mapping", str(mapping)], catch_exceptions=False)
    summary = json.loads(result.output)["summary"]
    assert (summary["positive"]["queries"], summary["negative"]["queries"]) == (30, 10)


def test_kind_values_without_a_map_say_how_to_map_them(tmp_path: Path) -> None:
    code, lines = _validate(*_files(tmp_path, _rows(), kind="type"))
    assert code == 1
    assert lines[0] == (
        f"error: {tmp_path / 'eval.jsonl'}:1: type: kind must be 'positive' or 'negative', got 'answerable' (fix: "
        "if 'answerable' is the data's own word for a kind, map it in the mapping: dataset.fields.kind: "
        "{field: type, negative: [...], positive: [...]} (the values that mean each); or set "
        "dataset.fields.kind: null to derive kind from the labels)"
    )


def test_a_kind_value_neither_list_names_is_an_error_naming_it(tmp_path: Path) -> None:
    rows = _rows()
    rows[6]["type"] = "unclear"
    both = "{field: type, positive: [answerable], negative: [unanswerable]}"
    code, lines = _validate(*_files(tmp_path, rows, kind=both))
    assert code == 1
    assert lines[0] == (
        f"error: {tmp_path / 'eval.jsonl'}:7: type: kind 'unclear' is listed under neither "
        "dataset.fields.kind.positive nor dataset.fields.kind.negative (fix: add 'unclear' to one of them)"
    )
    assert lines[-1] == "FAILED: 1 error(s), 0 warning(s) in 40 row(s)"
