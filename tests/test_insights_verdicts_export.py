"""The human-verdict CSV in the layout Foundry's documentation gives its human-evaluation download: one row per
evaluation instance with the JSON view's fields (timestamp, user prompt, agent response, the template's questions
and the reviewer's answers). The sheet below is written from those facts; the header spelling is an assumption."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from foundry_bridge.dataset.verdicts import read_verdicts
from foundry_bridge.errors import DatasetError

ACCURATE = "Was this response accurate?"
HELPFUL = "Rate the helpfulness of this response."
CONTEXT = "What additional context would have improved this response?"


def _sheet(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _export() -> list[dict[str, str]]:
    return [
        {
            "Timestamp": "2026-04-20T10:02:11Z",
            "User prompt": "How many weeks of paid parental leave do I get?",
            "Agent response": "16 weeks, after 6 months of service.",
            ACCURATE: "Thumbs up",
            HELPFUL: "5",
            CONTEXT: "",
        },
        {
            "Timestamp": "2026-04-20T10:04:40Z",
            "User prompt": "Can I carry over unused vacation days?",
            "Agent response": "Yes, all of them, forever.",
            ACCURATE: "Thumbs down",
            HELPFUL: "",  # the reviewer answered only some questions
            CONTEXT: "The carry-over cap is 5 days.",
        },
    ]


def test_the_portal_download_keyed_by_prompt_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = _sheet(tmp_path / "human-eval.csv", _export())
    with pytest.raises(DatasetError) as err:
        read_verdicts(path, questions={ACCURATE: "groundedness"})
    message = str(err.value)
    assert message.startswith(f"{path}:1: the CSV has no id column (one of query_id, item_id, response_id, id)")
    assert "keyed by 'User prompt'" in message and "add a query_id column" in message


def test_the_download_with_a_query_id_reads_each_answered_question(tmp_path: Path) -> None:
    rows = [{"query_id": qid, **row} for qid, row in zip(("q01", "q04"), _export(), strict=True)]
    path = _sheet(tmp_path / "human-eval.csv", rows)
    got = read_verdicts(path, questions={ACCURATE: "builtin.groundedness", HELPFUL: "builtin.relevance"})
    read = [(v.query_id, v.evaluator, v.score, v.passed, v.rater, v.line) for v in got.verdicts]
    assert read == [
        ("q01", "builtin.groundedness", None, True, None, 2),
        ("q01", "builtin.relevance", 5.0, None, None, 2),
        ("q04", "builtin.groundedness", None, False, None, 3),
    ]
    assert got.unfilled == 1  # q04's unanswered slider; the free-text question, timestamp and texts are not verdicts
