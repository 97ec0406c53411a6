"""Issue #22, item 1, for `metrics`: a row without its ranking (the key misspelled, absent or null) is refused with
the error `validate` gives at that row, by every reader `metrics` uses (the fast JSONL reader's two decoders and its
parallel split, the records path, tables); an explicit `[]` stays a legal empty ranking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from foundry_bridge.cli import main
from foundry_bridge.dataset.columnar import load_dataset
from foundry_bridge.errors import DatasetError
from foundry_bridge.mapping import load_mapping
from foundry_bridge.validate import validate

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
RANKING_ROLE = "the mapping reads this query's ranking there (a query that retrieved nothing has [])"
RENAME_RANKING = (
    "did you mean 'retrieved_documents'? the row has 'retrieved_docs', which the mapping does not read: rename it, "
    "or set dataset.fields.retrieved_documents.path: retrieved_docs"
)
WRITE_EMPTY = (
    "write [] for a query that retrieved nothing (a dataset without rankings sets "
    "dataset.fields.retrieved_documents: null)"
)


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines() if line.strip()]


def _rename(row: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {(new if k == old else k): v for k, v in row.items()}


def _write(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    p = tmp_path / "d.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _metrics(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exc:
        main(["metrics", *args])
    code = exc.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().err


def _validate_errors(data: Path) -> list[str]:
    return [str(p) for p in validate(data).problems if p.severity == "error"]


@pytest.mark.parametrize("k", ["10", "300"])  # the top-k decoder (k <= 256) and the raw-list decoder
def test_metrics_refuses_a_row_whose_ranking_is_misspelled_as_validate_does(
    k: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows()
    rows[2] = _rename(rows[2], "retrieved_documents", "retrieved_docs")
    data = _write(tmp_path, rows)
    code, err = _metrics(capsys, str(data), "--k", k, "--out", str(tmp_path / "m.json"))
    assert code == 1
    expected = (
        f"{data}:3: retrieved_documents: 'retrieved_documents' is missing: {RANKING_ROLE} (fix: {RENAME_RANKING})"
    )
    assert err == f"Error: {expected}\n"
    assert _validate_errors(data) == [expected]  # one rule, one message, one place
    assert not (tmp_path / "m.json").exists()


def test_metrics_refuses_a_null_ranking_and_keeps_an_explicit_empty_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows()
    rows[4]["retrieved_documents"] = []  # a query that retrieved nothing: legal, scored 0
    data = _write(tmp_path, rows)
    code, err = _metrics(capsys, str(data), "--out", str(tmp_path / "m.json"))
    assert code == 0, err
    q05 = next(r for r in orjson.loads((tmp_path / "m.json").read_bytes())["per_query"] if r["query_id"] == "q05")
    assert q05["rr@10"] == 0.0
    rows[6]["retrieved_documents"] = None
    data = _write(tmp_path, rows)
    code, err = _metrics(capsys, str(data))
    assert code == 1
    expected = f"{data}:7: retrieved_documents: 'retrieved_documents' is null: {RANKING_ROLE} (fix: {WRITE_EMPTY})"
    assert err == f"Error: {expected}\n"
    assert _validate_errors(data) == [expected]


def test_the_fast_reader_locates_a_missing_ranking_at_its_line(tmp_path: Path) -> None:
    rows = _rows() * 20
    rows = [{**r, "query_id": f"{r['query_id']}-{i}"} for i, r in enumerate(rows)]
    rows[250] = _rename(rows[250], "retrieved_documents", "retrieved_docs")
    data = _write(tmp_path, rows)
    with pytest.raises(DatasetError) as exc:
        load_dataset(data, load_mapping(None), depth=10, relevance_threshold=1)
    assert str(exc.value) == (
        f"{data}:251: retrieved_documents: 'retrieved_documents' is missing: {RANKING_ROLE} (fix: {RENAME_RANKING})"
    )


def test_metrics_refuses_a_table_without_its_ranking_at_the_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = _rows()
    rows[3]["retrieved_documents"] = None  # an empty cell
    data = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data)
    code, err = _metrics(capsys, str(data))
    assert code == 1
    expected = f"{data}: row 3: retrieved_documents: 'retrieved_documents' is null: {RANKING_ROLE} (fix: {WRITE_EMPTY})"
    assert err == f"Error: {expected}\n"
    assert _validate_errors(data) == [expected]

    renamed = tmp_path / "renamed.parquet"  # the column misspelled: every row lacks it, the first is refused
    pq.write_table(
        pa.Table.from_pylist([_rename(r, "retrieved_documents", "retrieved_docs") for r in _rows()]), renamed
    )
    code, err = _metrics(capsys, str(renamed))
    assert code == 1
    assert err == (
        f"Error: {renamed}: row 0: retrieved_documents: 'retrieved_documents' is missing: {RANKING_ROLE} "
        f"(fix: {RENAME_RANKING})\n"
    )


def test_metrics_reading_a_dataframe_refuses_a_null_ranking_at_its_row() -> None:
    pd = pytest.importorskip("pandas")
    rows = _rows()
    rows[3]["retrieved_documents"] = None
    for frame, name in ((pa.Table.from_pylist(rows), "pyarrow.Table"), (pd.DataFrame(rows), "pandas.DataFrame")):
        with pytest.raises(DatasetError) as exc:
            load_dataset(frame, load_mapping(None), depth=10, relevance_threshold=1)
        assert str(exc.value) == (
            f"{name}: row 3: retrieved_documents: 'retrieved_documents' is null: {RANKING_ROLE} (fix: {WRITE_EMPTY})"
        )
