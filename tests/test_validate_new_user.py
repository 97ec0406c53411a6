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


def test_kind_values_without_a_map_are_one_error_naming_them_and_the_map(tmp_path: Path) -> None:
    code, lines = _validate(*_files(tmp_path, _rows(), kind="type"))
    assert code == 1
    assert lines[0] == (
        f"error: {tmp_path / 'eval.jsonl'}: type: no row's 'type' is 'positive' or 'negative': the rows have "
        "'answerable', 'unanswerable' (fix: say which of the data's values mean which in the mapping: "
        "dataset.fields.kind: {field: type, negative: [...]} (every other value is positive; docs/mapping.md), or "
        "set dataset.fields.kind: null to derive kind from the labels)"
    )
    assert lines[-1] == "FAILED: 1 error(s), 0 warning(s) in 40 row(s)"


def test_one_row_with_its_own_kind_word_gets_the_fix_at_its_line(tmp_path: Path) -> None:
    rows = _rows()
    for r in rows:
        r["type"] = "negative" if r["type"] == "unanswerable" else "positive"
    rows[4]["type"] = "answerable"
    code, lines = _validate(*_files(tmp_path, rows, kind="type"))
    assert code == 1
    assert lines[0] == (
        f"error: {tmp_path / 'eval.jsonl'}:5: type: kind must be 'positive' or 'negative', got 'answerable' (fix: "
        "if 'answerable' is the data's own word for a kind, map it in the mapping: dataset.fields.kind: "
        "{field: type, negative: [...], positive: [...]} (the values that mean each); or set "
        "dataset.fields.kind: null to derive kind from the labels)"
    )
    assert lines[-1] == "FAILED: 1 error(s), 0 warning(s) in 40 row(s)"


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


# ---- item 15: a misspelled key inside the entries, said once for the mapping -----------------------------------


def test_a_misspelled_score_key_is_one_error_at_the_mapping_line_without_the_scores_from_rank_fix(
    tmp_path: Path,
) -> None:
    data, mapping = _files(tmp_path, _rows(), score="scroe")
    code, lines = _validate(data, mapping)
    assert code == 1
    assert lines == [
        f"error: {mapping}:10: dataset.fields.retrieved_documents.relevance_score: no entry of 'hits' has the key "
        f"'scroe' ({data} line 1): the mapping reads each document's search score there (fix: did you mean 'score'? "
        "every entry has it: set dataset.fields.retrieved_documents.relevance_score: score)",
        f"note: criterion 'document_retrieval' checks labels against 0-2, from the mapping's `labels` ({mapping}); "
        "the data's labels span 0-2",
        "FAILED: 1 error(s), 0 warning(s) in 40 row(s)",
    ]


def test_a_misspelled_label_key_is_said_once_before_the_rows_other_problems(tmp_path: Path) -> None:
    rows = _rows()
    rows[2]["qid"] = "q1"  # a real problem of one row, still reported
    data, mapping = _files(tmp_path, rows)
    mapping.write_text(mapping.read_text().replace("query_relevance_label: grade", "query_relevance_label: grde"))
    code, lines = _validate(data, mapping)
    assert code == 1
    assert lines[0] == (
        f"error: {mapping}:11: dataset.fields.retrieval_ground_truth.query_relevance_label: no entry of 'gold' has "
        f"the key 'grde' ({data} line 1): the mapping reads each label's grade there (fix: did you mean 'grade'? "
        "every entry has it: set dataset.fields.retrieval_ground_truth.query_relevance_label: grade)"
    )
    assert lines[1] == f"error: {data}:3: qid: qid 'q1' is already used on line 1 (fix: give every query a unique id)"
    assert lines[-1] == "FAILED: 2 error(s), 0 warning(s) in 40 row(s)"


def test_a_score_missing_from_some_entries_still_gets_its_own_error(tmp_path: Path) -> None:
    rows = _rows()
    del rows[5]["hits"][2]["score"]
    code, lines = _validate(*_files(tmp_path, rows))
    assert code == 1
    assert lines[0] == (
        f"error: {tmp_path / 'eval.jsonl'}:6: hits[2].score: score is missing; Foundry requires a number (fix: set "
        "dataset.fields.retrieved_documents.scores_from_rank: true to send scores from rank)"
    )


# ---- item 16: a forgotten --mapping -----------------------------------------------------------------------------


def test_a_forgotten_mapping_is_one_error_naming_the_rows_keys(tmp_path: Path) -> None:
    data, _ = _files(tmp_path, _rows())
    code, lines = _validate(data, None)
    assert code == 1
    assert lines[0] == (
        f"error: {data}: query_id: no row has 'query_id', where the default mapping reads the query id; of the "
        "fields it reads, the rows have only 'context' (fix: the rows have qid, question, hits, gold, type, context, "
        "answer: pass --mapping FILE, a mapping that names the rows' own fields (dataset.fields: {query_id: <the id "
        "key>, query: ..., retrieved_documents: {path: ...}}; see docs/mapping.md))"
    )
    assert lines[-1] == "FAILED: 1 error(s), 0 warning(s) in 40 row(s)"


def test_rows_with_none_of_the_default_fields_are_named_so(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "context"} for r in _rows()]
    data, _ = _files(tmp_path, rows)
    code, lines = _validate(data, None)
    assert code == 1
    assert lines[0].startswith(
        f"error: {data}: query_id: no row has 'query_id', where the default mapping reads the query id; the rows "
        "have none of the fields it reads (canary, context, ground_truth, kind, query, query_id, response, "
        "retrieval_ground_truth, retrieved_documents) (fix: the rows have qid, question, hits, gold, type, answer: "
        "pass --mapping FILE"
    )
    assert len([x for x in lines if x.startswith("error:")]) == 1


def test_one_row_without_its_id_is_still_that_rows_error(tmp_path: Path) -> None:
    rows = _rows()
    del rows[3]["qid"]
    code, lines = _validate(*_files(tmp_path, rows))
    assert code == 1
    assert lines[0] == f"error: {tmp_path / 'eval.jsonl'}:4: qid: query id is missing (fix: every row needs a query id)"
    assert lines[-1] == "FAILED: 1 error(s), 0 warning(s) in 40 row(s)"


# ---- item 17: every message names the user's own path -----------------------------------------------------------


def test_every_message_names_the_rows_own_paths(tmp_path: Path) -> None:
    rows = _rows()
    rows[1]["gold"][1]["grade"] = 5  # above the declared range 0-2
    rows[2]["gold"].append({"doc": "d3-0", "grade": 1})  # labelled twice
    del rows[4]["gold"]  # document_retrieval's labels missing
    rows[5]["question"] = ""
    rows[6]["hits"][3]["doc"] = 1234  # an integer id
    rows[8]["qid"] = "q1"
    data, mapping = _files(tmp_path, rows)
    code, lines = _validate(data, mapping)
    assert code == 1
    assert lines[:-2] == [
        f"error: {data}:2: gold[1].grade: label 5 is above ground_truth_label_max 2 (criterion 'document_retrieval') "
        "(fix: fix the label, or declare the range in the mapping's `labels` (min/max))",
        f"warning: {data}:3: gold[2].doc: document 'd3-0' is labelled twice in gold: Foundry keeps the last label, "
        "foundry_bridge's metrics the first (fix: keep one label per document)",
        f"error: {data}:5: gold: required input 'retrieval_ground_truth' of criterion 'document_retrieval' is "
        "missing: the row has no 'gold' (fix: fill the field in every row, or drop the evaluator)",
        f"warning: {data}:6: question: question is empty",
        f"warning: {data}:7: hits[3].doc: document id 1234 is a JSON number, read as the string '1234': 1234 and "
        "'1234' become the same id (fix: write ids as JSON strings)",
        f"error: {data}:9: qid: qid 'q1' is already used on line 1 (fix: give every query a unique id)",
    ]
    tool_names = ("retrieval_ground_truth[", "retrieved_documents", "query_relevance_label", "item field", "'1' and 1")
    assert not [x for x in lines if any(name in x for name in tool_names)]


def test_a_table_says_the_misspelled_key_once_at_its_row_index(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    _, mapping = _files(tmp_path, _rows(), score="scroe")
    table = tmp_path / "eval.parquet"
    pq.write_table(pa.Table.from_pylist(_rows()), table)
    code, lines = _validate(table, mapping)
    assert code == 1
    assert lines[0].startswith(
        f"error: {mapping}:10: dataset.fields.retrieved_documents.relevance_score: no entry of 'hits' has the key "
        f"'scroe' ({table} row 0): "
    )
    assert lines[-1] == "FAILED: 1 error(s), 0 warning(s) in 40 row(s)"
