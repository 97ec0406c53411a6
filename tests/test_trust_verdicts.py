"""The human-verdict reader (JSONL and CSV), its located errors, the arrays it yields, and the queue writer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from foundry_bridge.dataset.verdicts import QueueRow, human_arrays, read_verdicts, write_verdict_queue
from foundry_bridge.errors import DatasetError

DATA = Path(__file__).parent / "data" / "trust"


def test_jsonl_verdicts_are_read_with_raters_and_unfilled_lines_counted() -> None:
    vf = read_verdicts(DATA / "verdicts.jsonl")
    assert len(vf.verdicts) == 5 and vf.unfilled == 1
    first = vf.verdicts[0]
    assert (first.query_id, first.evaluator, first.score, first.passed, first.rater, first.line) == (
        "q01", "builtin.groundedness", 5.0, None, "ana", 1,
    )  # fmt: skip
    assert vf.verdicts[3].passed is False and vf.verdicts[3].rater is None
    assert vf.raters() == [None, "ana", "ben"]


def test_human_arrays_align_to_the_run_and_match_the_prefix() -> None:
    vf = read_verdicts(DATA / "verdicts.jsonl")
    matrix, raters = human_arrays(vf.verdicts, "builtin.groundedness", ["q02", "q01", "q09"])
    assert raters == ["ana", "ben"]
    assert np.array_equal(matrix, [[2, 5, np.nan], [np.nan, 4, np.nan]], equal_nan=True)  # zz is not in the run
    passed, _ = human_arrays(vf.verdicts, "relevance", ["q01", "q02"], what="passed")
    assert np.array_equal(passed, [[np.nan, 0.0]], equal_nan=True)


def test_wide_template_csv_maps_questions_to_evaluators() -> None:
    vf = read_verdicts(
        DATA / "template_export.csv", questions={"Is the answer supported by the context?": "builtin.groundedness"}
    )
    got = [(v.query_id, v.evaluator, v.score, v.passed, v.rater, v.line) for v in vf.verdicts]
    assert got == [
        ("q01", "builtin.groundedness", None, True, "ana", 2),
        ("q01", "builtin.relevance", 5.0, None, "ana", 2),
        ("q02", "builtin.groundedness", None, False, "ana", 3),
        ("q02", "builtin.groundedness", None, False, "ben", 4),
        ("q02", "builtin.relevance", 1.0, None, "ben", 4),  # a number is a score, even 1
    ]
    assert vf.unfilled == 1  # q02 by ana left relevance empty


def test_long_csv_reads_like_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "v.csv"
    path.write_text("query_id,evaluator,score,passed,rater\nq1,builtin.retrieval,3,,x\nq2,builtin.retrieval,,pass,\n")
    vf = read_verdicts(path)
    assert [(v.query_id, v.score, v.passed, v.rater) for v in vf.verdicts] == [
        ("q1", 3.0, None, "x"),
        ("q2", None, True, None),
    ]


@pytest.mark.parametrize(
    "line,message",
    [
        ('{"evaluator": "builtin.relevance", "score": 3}', "v.jsonl:2: query_id: missing query_id"),
        (
            '{"query_id": "q", "evaluator": "builtin.relevance", "score": "high"}',
            "v.jsonl:2: score: score must be a finite number",
        ),
        (
            '{"query_id": "q", "evaluator": "builtin.relevance", "passed": "maybe"}',
            "v.jsonl:2: passed: passed must be true or false",
        ),
        ('{"query_id": "q", "evaluator": "builtin.relevance", "score": 3', "v.jsonl:2: malformed JSON line"),
        ("[1, 2]", "v.jsonl:2: each line must be a JSON object"),
        (
            '{"query_id": "q1", "evaluator": "builtin.relevance", "score": 2}',
            "v.jsonl:2: query 'q1' has a second verdict",
        ),
        ('{"query_id": "q1", "evaluator": "relevance", "passed": true}', "v.jsonl:2: query 'q1' has a second verdict"),
    ],
)
def test_a_bad_verdict_line_is_located(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "v.jsonl"
    path.write_text('{"query_id": "q1", "evaluator": "builtin.relevance", "score": 4}\n' + line + "\n")
    with pytest.raises(DatasetError) as err:
        read_verdicts(path)
    assert str(err.value).startswith(str(tmp_path / message)), str(err.value)


def test_a_wide_csv_without_id_or_questions_says_how_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("name,question 1\nq1,yes\n")
    with pytest.raises(DatasetError, match=r"the CSV has no id column \(one of query_id, item_id") as err:
        read_verdicts(path)
    assert "rename the column" in str(err.value)
    path.write_text("query_id,question 1\nq1,yes\n")
    with pytest.raises(DatasetError, match="no question column maps to an evaluator"):
        read_verdicts(path)
    with pytest.raises(DatasetError, match="question column\\(s\\) not in the CSV: 'Q9'"):
        read_verdicts(path, questions={"Q9": "builtin.relevance"})
    with pytest.raises(DatasetError, match="human-verdict file not found"):
        read_verdicts(tmp_path / "absent.jsonl")


def test_the_queue_is_written_in_the_verdict_format_and_reads_back_unfilled(tmp_path: Path) -> None:
    rows = [
        QueueRow("q07", "builtin.groundedness", 1, "judges disagree (spread 2)", query="How long?", response="16"),
        QueueRow("q02", "builtin.groundedness", 2, "narrows the interval (judge score 5)"),
    ]
    path = tmp_path / "queue.jsonl"
    assert write_verdict_queue(rows, path) == 2
    first = path.read_text().splitlines()[0]
    assert first == (
        '{"query_id":"q07","evaluator":"builtin.groundedness","score":null,"passed":null,"rater":null,'
        '"priority":1,"reason":"judges disagree (spread 2)","query":"How long?","response":"16"}'
    )
    back = read_verdicts(path)
    assert back.verdicts == [] and back.unfilled == 2
    path.write_text(first.replace('"score":null', '"score":2') + "\n")
    assert read_verdicts(path).verdicts[0].score == 2.0


def test_a_queue_from_the_queue_order_round_trips_as_unfilled_verdicts(tmp_path: Path) -> None:
    from foundry_bridge.dataset.verdicts import QueueRow
    from foundry_bridge.metrics.ppi import queue_order

    judge = np.array([5, 5, 1, 3], dtype=float)
    human = np.array([5, np.nan, np.nan, np.nan])
    draws = queue_order(judge, human)[:2]
    assert [d.place for d in draws] == [1, 2] and {d.index for d in draws} <= {1, 2, 3}  # row 0 is labelled
    ids, text = ["a", "b", "c", "d"], {"c": ("Q?", "R.")}
    rows = [
        QueueRow(ids[d.index], "groundedness", d.place, d.reason, *text.get(ids[d.index], (None, None))) for d in draws
    ]
    path = tmp_path / "q.jsonl"
    write_verdict_queue(rows, path)
    back = read_verdicts(path)
    assert back.unfilled == 2 and back.verdicts == []
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["query_id"] for line in lines] == [ids[d.index] for d in draws]
    assert all(line["score"] is None and "judge" not in line for line in lines)


def test_a_bad_cell_of_a_template_sheet_names_its_column(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("query_id,reviewer,relevance\nq1,ana,4\nq2,ana,somewhat\n")
    with pytest.raises(DatasetError) as err:
        read_verdicts(path)
    assert str(err.value).startswith(f"{path}:3: relevance: score must be a finite number, got 'somewhat'")


def test_a_sheet_that_is_not_utf8_is_a_located_error(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_bytes("query_id,reviewer,relevance\nq1,Jos\xe9,4\n".encode("latin-1"))
    with pytest.raises(DatasetError, match="the file is not UTF-8 text"):
        read_verdicts(path)
