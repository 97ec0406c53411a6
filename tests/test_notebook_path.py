"""The notebook path (#27): one call from a DataFrame to a report, DataFrames out, errors and telemetry that fit a
Python caller, types a user's mypy reads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
BENEFITS = ROOT / "samples" / "benefits" / "rag_eval.jsonl"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in BENEFITS.read_text().splitlines()]


# --- errors that fit the caller ---------------------------------------------------------------------------------


def test_a_dataframe_error_carries_its_row_and_column_as_data() -> None:
    from foundry_bridge.dataset import read_records
    from foundry_bridge.errors import DatasetError
    from foundry_bridge.mapping import load_mapping

    rows = _rows()
    rows[5]["retrieved_documents"] = "oops"
    with pytest.raises(DatasetError) as info:
        list(read_records(pd.DataFrame(rows), load_mapping(None)))
    error = info.value
    assert (error.file, error.row, error.column, error.line) == ("pandas.DataFrame", 5, "retrieved_documents", None)
    assert str(error) == "pandas.DataFrame: row 5: retrieved_documents: must be a list, got string"


def test_a_dataset_level_warning_lists_its_rows_as_data() -> None:
    from foundry_bridge.validate import validate

    in_file = validate(BENEFITS).problems
    in_frame = validate(pd.DataFrame(_rows())).problems
    assert [(p.code, p.lines, p.rows) for p in in_file] == [("zero_result", (7,), ())]
    assert [(p.code, p.lines, p.rows) for p in in_frame] == [("zero_result", (), (6,))]  # 0-based row index
    assert in_file[0].to_dict()["lines"] == [7] and "rows" not in in_file[0].to_dict()
