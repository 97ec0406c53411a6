"""Duplicate ``query_id`` detection: a fixed-size Bloom filter, then an exact second pass over the candidates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foundry_bridge.validate import _duplicates as dup
from foundry_bridge.validate import _passes, validate

FIX = "(fix: give every query a unique id)"


def _row(qid: Any) -> dict[str, Any]:
    return {
        "query_id": qid,
        "kind": "positive",
        "query": "How many weeks of leave?",
        "retrieved_documents": [{"document_id": "a", "relevance_score": 0.9}],
        "retrieval_ground_truth": [{"document_id": "a", "query_relevance_label": 3}],
        "context": "Employees get 16 weeks.",
        "response": "Sixteen weeks.",
    }


def _data(tmp_path: Path, *rows: Any) -> Path:
    p = tmp_path / "d.jsonl"
    p.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return p


def _dups(report: Any) -> list[str]:
    return [str(p) for p in report.problems if p.code == "duplicate_query_id"]


def _msg(data: Path, line: int, first: int) -> str:
    qid = str(json.loads(data.read_text().splitlines()[first - 1])["query_id"])  # the message names the id
    return f"{data}:{line}: query_id: query_id {qid!r} is already used on line {first} {FIX}"


@pytest.fixture
def pass2_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the second passes over the rows (one entry per call: the number of candidate hashes)."""
    calls: list[int] = []
    real = _passes._query_ids

    def spy(*args: Any) -> Any:
        calls.append(len(args[-1]))
        return real(*args)

    monkeypatch.setattr(_passes, "_query_ids", spy)
    return calls


def test_earlier_line_is_the_first_use_even_for_a_duplicate_of_a_duplicate(tmp_path: Path) -> None:
    # line 3 is blank (not a row) and line 5 malformed: line numbers are the file's
    data = _data(tmp_path, _row("q1"), _row("q2"), "", _row("q1"), "{not json", _row("q1"), _row("q2"), _row("q3"))
    report = validate(data)
    assert _dups(report) == [_msg(data, 4, 1), _msg(data, 6, 1), _msg(data, 7, 2)]
    assert report.by_code["duplicate_query_id"] == 3


def test_no_duplicates_needs_no_second_pass(tmp_path: Path, pass2_calls: list[int]) -> None:
    data = _data(tmp_path, *(_row(f"q{i}") for i in range(200)))
    report = validate(data)
    assert _dups(report) == [] and report.ok
    assert pass2_calls == []


def test_integer_and_string_ids_are_the_same_query(tmp_path: Path) -> None:
    """The mapping reads an integer id as its decimal string, so 7 and "7" name the same query."""
    data = _data(tmp_path, _row(7), _row("q"), _row("7"), _row(7))
    assert _dups(validate(data)) == [_msg(data, 3, 1), _msg(data, 4, 1)]


def test_rejected_row_with_a_repeated_id_is_a_duplicate(tmp_path: Path) -> None:
    bad = _row("q1")
    bad["retrieved_documents"] = "not a list"
    data = _data(tmp_path, _row("q1"), bad, _row("q2"))
    assert _dups(validate(data)) == [_msg(data, 2, 1)]


def test_ids_of_other_types_are_not_compared(tmp_path: Path) -> None:
    data = _data(tmp_path, _row(True), _row(True), _row(1.5), _row(1.5))
    assert _dups(validate(data)) == []


def test_hand_written_criteria_use_the_rows_query_id(tmp_path: Path) -> None:
    crit = tmp_path / "c.json"
    crit.write_text(
        json.dumps(
            [
                {
                    "type": "azure_ai_evaluator",
                    "name": "docret",
                    "evaluator_name": "builtin.document_retrieval",
                    "data_mapping": {
                        "retrieval_ground_truth": "{{item.retrieval_ground_truth}}",
                        "retrieved_documents": "{{item.retrieved_documents}}",
                    },
                }
            ]
        )
    )
    data = _data(tmp_path, _row(1), _row("a"), _row("1"), _row("a"))
    assert _dups(validate(data, criteria_file=crit)) == [_msg(data, 3, 1), _msg(data, 4, 2)]


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 12])
def test_duplicates_within_and_across_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(dup, "_CHUNK", chunk)
    ids = ["a", "b", "a", "a", "c", "b", "d", "e", "c"]
    data = _data(tmp_path, *(_row(i) for i in ids))
    assert _dups(validate(data)) == [_msg(data, 3, 1), _msg(data, 4, 1), _msg(data, 6, 2), _msg(data, 9, 5)]


def test_forced_false_positives_are_not_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pass2_calls: list[int]
) -> None:
    """An 8-bit filter answers "maybe seen" for nearly every id; the second pass must clear all of them."""
    monkeypatch.setattr(dup, "_BLOOM_BITS", 8)
    monkeypatch.setattr(dup, "_CHUNK", 1)
    data = _data(tmp_path, *(_row(f"q{i}") for i in range(50)))
    report = validate(data)
    assert _dups(report) == [] and report.ok
    assert len(pass2_calls) == 1 and pass2_calls[0] > 5  # candidates existed, all false


def test_forced_false_positives_keep_the_true_duplicates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pass2_calls: list[int]
) -> None:
    monkeypatch.setattr(dup, "_BLOOM_BITS", 8)
    monkeypatch.setattr(dup, "_CHUNK", 4)
    ids = [f"q{i}" for i in range(30)] + ["q3", "q29", "q3"]
    data = _data(tmp_path, *(_row(i) for i in ids))
    assert _dups(validate(data)) == [_msg(data, 31, 4), _msg(data, 32, 30), _msg(data, 33, 4)]
    assert pass2_calls[0] > 2


def test_filter_finds_repeats_and_is_fixed_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dup, "_CHUNK", 1000)
    f = dup.IdFilter(bits=1 << 20, probes=4)
    for i in range(5000):
        f.add(hash(f"id{i}"))
    f.add(hash("id17"))
    f.add(hash("id4999"))
    assert f.table.nbytes == (1 << 20) // 8
    assert {hash("id17"), hash("id4999")} <= f.candidates()


def test_trec_second_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TREC rows are grouped by query id (no duplicates possible); forced false candidates must not be reported."""
    monkeypatch.setattr(dup, "_BLOOM_BITS", 8)
    monkeypatch.setattr(dup, "_CHUNK", 1)
    seen: list[tuple[Any, int]] = []
    real = dup.DuplicateIds._duplicate_ids

    def spy(self: Any, rescan: Any, candidates: set[int], ctx: Any) -> None:
        seen.extend(rescan(candidates))
        real(self, rescan, candidates, ctx)

    monkeypatch.setattr(dup.DuplicateIds, "_duplicate_ids", spy)
    root = Path(__file__).resolve().parent.parent
    report = validate(root / "samples" / "trec", mapping=root / "mappings" / "trec.yaml")
    assert report.errors == 0 and _dups(report) == []
    assert len(seen) == 14 and len({qid for qid, _ in seen}) == 14


def test_candidates_are_kept_once_per_id_not_per_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dup, "_CHUNK", 16)
    f = dup.IdFilter()
    for i in range(10_000):
        f.add(hash("same"))
        f.add(hash(f"other{i}"))
    assert len(f.positive) <= 2 * 16 + 2
    assert f.candidates() == {hash("same")}
