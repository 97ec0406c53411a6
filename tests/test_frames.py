"""Tables as datasets: parquet, Arrow/Feather, Hugging Face save_to_disk folders, pyarrow Tables and pandas/polars
DataFrames give the same records as the JSONL they were written from, pass the same gate, and locate problems by
row index and column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from foundry_bridge.cli import cli, main
from foundry_bridge.dataset import read_records
from foundry_bridge.errors import DatasetError
from foundry_bridge.mapping.model import Mapping
from foundry_bridge.validate import ValidationFailed, gated_records, validate

ROOT = Path(__file__).resolve().parents[1]
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"
DOCRET_ONLY = "evaluators:\n  - evaluator: builtin.document_retrieval\n"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines() if line.strip()]


def _canonical(records: Any) -> list[dict[str, Any]]:
    return [r.model_dump(exclude={"source", "line"}) for r in records]


EXPECTED = _canonical(read_records(BENEFITS, Mapping()))


def _hf_folder(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "hf"
    datasets.Dataset.from_list(rows).save_to_disk(str(folder))
    return folder


def test_parquet_arrow_feather_and_hf_folder_give_the_jsonl_records(tmp_path: Path) -> None:
    table = pa.Table.from_pylist(_rows())
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=5)
    feather.write_feather(table, tmp_path / "d.feather")
    with pa.OSFile(str(tmp_path / "d.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)  # the IPC stream format, as Hugging Face writes its .arrow files
    for data in (tmp_path / "d.parquet", tmp_path / "d.feather", tmp_path / "d.arrow", _hf_folder(tmp_path, _rows())):
        records = list(read_records(data, Mapping()))
        assert _canonical(records) == EXPECTED, data
        assert records[0].source == str(data) and records[0].line is None


def test_dataframes_and_tables_in_memory_give_the_jsonl_records(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pl = pytest.importorskip("polars")
    table = pa.Table.from_pylist(_rows())
    pq.write_table(table, tmp_path / "d.parquet")
    frames = [table, pd.DataFrame(_rows()), pl.DataFrame(_rows()), pd.read_parquet(tmp_path / "d.parquet")]
    for frame in frames:  # read_parquet's list cells are numpy arrays; DataFrame(rows) holds Python lists
        assert _canonical(read_records(frame, Mapping())) == EXPECTED, type(frame)


def test_a_pandas_missing_cell_is_an_absent_field_not_a_number() -> None:
    pd = pytest.importorskip("pandas")
    rows = _rows()[:2]
    rows[1]["response"] = float("nan")  # what pandas holds for a missing string cell (read_csv, concat...)
    frame = pd.DataFrame(rows)
    records = list(read_records(frame, Mapping()))
    assert records[1].response is None and records[0].response == rows[0]["response"]


def test_the_first_bad_row_is_raised_at_its_row_index_and_column() -> None:
    pd = pytest.importorskip("pandas")
    rows = _rows()[:4]
    rows[2]["retrieval_ground_truth"][0]["query_relevance_label"] = 2.5
    with pytest.raises(DatasetError) as info:
        list(read_records(pd.DataFrame(rows), Mapping()))
    assert str(info.value) == (
        "pandas.DataFrame: row 2: retrieval_ground_truth[0].query_relevance_label: label 2.5 is not an integer; a "
        "fractional value in a label field is probably a search score (fix: put human relevance labels (integers) "
        "here; search scores belong in relevance_score)"
    )


def test_validate_reports_every_table_problem_by_row_and_column(tmp_path: Path) -> None:
    rows = _rows()[:5]
    rows[1]["retrieved_documents"][0]["document_id"] = None
    rows[3]["query_id"] = rows[0]["query_id"]
    data = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(rows), data)
    mapping = tmp_path / "m.yaml"
    mapping.write_text(DOCRET_ONLY)
    report = validate(data, mapping=mapping)
    found = {(p.code, p.row, p.line, p.field) for p in report.problems if p.severity == "error"}
    assert found == {
        ("missing_id", 1, None, "retrieved_documents[0].document_id"),
        ("duplicate_query_id", 3, None, "query_id"),
    }
    duplicate = next(p for p in report.problems if p.code == "duplicate_query_id")
    assert str(duplicate) == (
        f"{data}: row 3: query_id: query_id 'q01' is already used on row 0 (fix: give every query a unique id)"
    )
    assert report.rows == 5 and report.to_dict()["problems"][0]["row"] == 1


def test_a_table_s_repeated_and_near_repeated_ids_name_both_rows() -> None:
    """The second pass over a table's rows reads only the rows whose id may repeat, as over a JSONL file."""
    ids = ["q1", "q2", "q1", "Q2", *(f"other{i}" for i in range(50))]
    table = pa.Table.from_pylist([{"query_id": i, "query": "a", "response": "r"} for i in ids])
    found = [str(p) for p in validate(table).problems if p.field == "query_id"]
    assert found == [
        "pyarrow.Table: row 2: query_id: query_id 'q1' is already used on row 0 (fix: give every query a unique id)",
        "pyarrow.Table: row 3: query_id: query_id 'Q2' differs from 'q2' (row 1) only by case (fix: give the two "
        "queries distinct ids, or one id if they are the same query)",
    ]


def test_gated_records_refuse_a_bad_dataframe_after_reading_it() -> None:
    pl = pytest.importorskip("polars")
    rows = _rows()[:3]
    rows[0]["kind"] = "postive"
    with pytest.raises(ValidationFailed) as info:
        list(gated_records(pl.DataFrame(rows)))
    first = str(info.value).splitlines()[0]
    assert first == (
        "polars.DataFrame: row 0: kind: kind must be 'positive' or 'negative', got 'postive' "
        "(fix: did you mean 'positive'?)"
    )


def _cli(*args: str) -> int:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False).exit_code


def test_plan_and_validate_commands_read_a_parquet_file(tmp_path: Path) -> None:
    data = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pylist(_rows()), data)
    assert _cli("validate", str(data)) == 0
    assert _cli("plan", str(data), "--out", str(tmp_path / "plan")) == 0
    items = [json.loads(line) for line in (tmp_path / "plan" / "items.jsonl").read_text().splitlines()]
    jsonl_plan = tmp_path / "plan_jsonl"
    assert _cli("plan", str(BENEFITS), "--out", str(jsonl_plan)) == 0
    assert items == [json.loads(line) for line in (jsonl_plan / "items.jsonl").read_text().splitlines()]


def test_a_dataset_dict_folder_names_its_splits(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "dd"
    split = datasets.Dataset.from_list(_rows()[:2])
    datasets.DatasetDict({"test": split, "dev": split}).save_to_disk(str(folder))
    with pytest.raises(DatasetError, match="pass one split's folder"):
        list(read_records(folder, Mapping()))
    report = validate(folder)
    assert [p.code for p in report.problems] == ["bad_table"] and not report.ok
    assert len(list(read_records(folder / "test", Mapping()))) == 2


def _invoke(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Exit code, stdout and stderr of one command as a user runs it (``main``: errors printed, not raised)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return int(info.value.code or 0), out, err


def test_every_command_reads_a_hf_saved_folder_and_a_dataset_dict_split(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """validate, plan, run and metrics read a save_to_disk folder and a DatasetDict split's folder as they read the
    JSONL it was written from; the DatasetDict folder itself is refused by each with the split folders named."""
    datasets = pytest.importorskip("datasets")
    whole = _hf_folder(tmp_path, _rows())
    splits = tmp_path / "dd"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(_rows())}).save_to_disk(str(splits))
    code, out, err = _invoke(capsys, "metrics", str(BENEFITS))
    assert code == 0, out + err
    expected = json.loads(out)
    for n, data in enumerate((whole, splits / "test")):
        code, out, err = _invoke(capsys, "metrics", str(data))
        assert code == 0, out + err
        doc = json.loads(out)
        assert doc["per_query"] == expected["per_query"] and doc["summary"] == expected["summary"], data
        assert doc["negative_report"] == expected["negative_report"] and doc["assembly"] == expected["assembly"]
        assert _invoke(capsys, "validate", str(data))[0] == 0, data
        code, out, err = _invoke(capsys, "plan", str(data), "--out", str(tmp_path / f"plan{n}"))
        assert code == 0 and (tmp_path / f"plan{n}" / "items.jsonl").is_file(), out + err
        code, out, err = _invoke(
            capsys, "run", str(data), "--backend", "mock", "--out", str(tmp_path / f"run{n}"), "-q"
        )
        assert code == 0 and (tmp_path / f"run{n}" / "results.jsonl").is_file(), out + err
    for command in ("validate", "plan", "metrics"):
        code, out, err = _invoke(
            capsys, command, str(splits), *(["--out", str(tmp_path / "p")] if command == "plan" else [])
        )
        assert code == 1 and "DatasetDict folder holds one dataset per split" in out + err, (command, out + err)
        assert str(splits / "test") in out + err and "not a JSONL file" not in out + err, (command, out + err)
