"""A run's per-query facts are written a block of records at a time with declared column types (issue #34 item 1):
a value seen in one row only, a list empty in every block but one, and a row of tens of megabytes all fit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from foundry_bridge import columns
from foundry_bridge.cli import main
from foundry_bridge.columns import RunColumns
from foundry_bridge.runner import plan_evaluation

Capture = pytest.CaptureFixture[str]


def _clean_row(benefits_jsonl: Path) -> dict[str, Any]:
    """The sample's first query: every retrieved document labelled, both relevant ones in its context, no canary."""
    row: dict[str, Any] = json.loads(benefits_jsonl.read_text(encoding="utf-8").splitlines()[0])
    assert all(d["content"] in row["context"] for d in row["retrieved_documents"][:2]) and "canary" not in row
    return row


def _rare(row: dict[str, Any]) -> dict[str, Any]:
    """The same query, its context leaving out the second relevant document (pol-leave-02), one more document
    retrieved that nobody labelled."""
    docs = [*row["retrieved_documents"], {"document_id": "pol-new-01", "relevance_score": 0.1, "content": "New."}]
    return {**row, "query_id": "rare", "context": row["retrieved_documents"][0]["content"], "retrieved_documents": docs}


def _write(path: Path, rows: Iterator[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_run_of_3000_clean_rows_and_one_rare_row_last(benefits_jsonl: Path, tmp_path: Path, capsys: Capture) -> None:
    clean = _clean_row(benefits_jsonl)
    rows = (dict(clean, query_id=f"q{i:05d}") for i in range(3001))
    data = _write(tmp_path / "data.jsonl", iter([*rows, _rare(clean)]))
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        main(["run", str(data), "--backend", "mock", "--out", str(out)])
    _, err = capsys.readouterr()
    assert info.value.code in (0, None), err
    assert "Traceback" not in err and "rows: 3002" in err
    run = RunColumns.open(out)
    try:
        assert run.n_queries == 3002
        assert run.ids_where("len(dropped_relevant) > 0") == ["rare"]
        assert run.texts("dropped_relevant", 3001) == [["pol-leave-02"]]
        assert run.texts("holes", 3001) == [["pol-new-01"]]
        assert run.count_where("len(holes) > 0") == 1
    finally:
        run.close()


def _folder(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    """A run folder of ``rows`` as ``run`` writes it before any result arrives: plan, items, records, and an empty
    ``results.jsonl``."""
    from foundry_bridge.runfolder import RunFolder

    folder = RunFolder(tmp_path / "run")
    folder.path.mkdir()
    folder.write_plan(plan_evaluation(_write(tmp_path / "data.jsonl", iter(rows))))
    folder.file("results").write_bytes(b"")
    return folder.path


def _schema(path: Path) -> dict[str, str]:
    return {name: kind for name, kind, *_ in duckdb.sql(f"DESCRIBE SELECT * FROM '{path}'").fetchall()}


def test_a_list_empty_in_every_block_but_one_keeps_its_type(
    benefits_jsonl: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(columns, "BLOCK", 2048)  # three blocks; the rare row is the middle block's last
    clean = _clean_row(benefits_jsonl)
    rows = [dict(clean, query_id=f"q{i:05d}") for i in range(3 * 2048)]
    rows[2 * 2048 - 1] = _rare(clean)
    run = RunColumns.open(_folder(tmp_path, rows))
    try:
        parts = sorted(run.path.glob("queries-*.parquet"))
        assert len(parts) == 3
        for part in parts:  # the same declared types in every block, whatever its rows hold
            schema = _schema(part)
            assert schema["dropped_relevant"] == schema["holes"] == "VARCHAR[]", part.name
            assert schema["canary"] == schema["response_id"] == "VARCHAR", part.name
        for part in sorted(run.path.glob("holes-*.parquet")):
            assert _schema(part) == {"row": "BIGINT", "rank": "BIGINT", "document_id": "VARCHAR"}, part.name
        got = run.sql(
            "SELECT row, query_id, dropped_relevant, holes FROM queries "
            "WHERE len(dropped_relevant) > 0 OR len(holes) > 0"
        ).fetchall()
        assert got == [(2 * 2048 - 1, "rare", ["pol-leave-02"], ["pol-new-01"])]
        assert run.sql("SELECT * FROM holes").fetchall() == [(2 * 2048 - 1, 4, "pol-new-01")]
    finally:
        run.close()


def test_a_row_of_50_mb_is_written_with_the_engine_memory_limit(benefits_jsonl: Path, tmp_path: Path) -> None:
    assert columns.MEMORY_LIMIT == "128MB"  # the engine's default limit: the facts must fit beside it
    clean = _clean_row(benefits_jsonl)
    rows = [dict(clean, query_id=f"q{i}") for i in range(2000)]
    big = (clean["context"] or "") + " Employees are eligible for benefits." * (50_000_000 // 37)  # its context kept
    rows[-1] = dict(clean, query_id="big", query=big, context=big, response=big)
    run = RunColumns.open(_folder(tmp_path, rows))
    try:
        part = f"{run.path}/queries-*.parquet"
        got = duckdb.sql(f"SELECT length(query), length(response) FROM '{part}' WHERE row = 1999").fetchall()
        assert got == [(len(big), len(big))]
    finally:
        run.close()
