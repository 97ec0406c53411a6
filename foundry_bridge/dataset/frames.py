"""Rows in tables: parquet, Arrow IPC / Feather files, Hugging Face datasets saved to disk, and in-memory pyarrow
tables and pandas or polars DataFrames, read as the same rows a JSONL file holds.

Each row becomes the dict a JSON line would decode to and goes through the same ``RowParser`` and validation gate,
with the mapping's field paths naming columns; a problem is located by 0-based **row index and column** instead of
line (``data.parquet: row 3: retrieved_documents[0].document_id: ...``). Nothing is downloaded. docs/inputs.md
lists the quirks (pandas nulls and integer columns with nulls, ``save_to_disk`` folders and splits).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from .problems import Problem

__all__ = ["TABLE_SUFFIXES", "Table", "TableSource", "is_table", "relocate"]

Table = Any  # in-memory rows: a pyarrow Table or RecordBatch, a pandas or polars DataFrame
TABLE_SUFFIXES = (".parquet", ".arrow", ".feather", ".ipc")
_BATCH = 1024  # rows converted to Python at a time
_HF_MARKERS = ("state.json", "dataset_info.json", "dataset_dict.json")


def is_table(data: Any) -> bool:
    """True for an in-memory table or DataFrame, a parquet/Arrow/Feather file or a Hugging Face saved folder."""
    if not isinstance(data, str | os.PathLike):
        return True
    path = Path(data)
    if path.is_dir():
        return any((path / m).is_file() for m in _HF_MARKERS)
    return path.suffix.lower() in TABLE_SUFFIXES


class TableSource:
    """The rows of one table-like input, re-readable (validation reads twice for duplicate ids); ``name`` is the
    file name, or the object's type (``pandas.DataFrame``) for an in-memory one."""

    def __init__(self, data: Any) -> None:
        self.data = data
        if isinstance(data, str | os.PathLike):
            self.name = str(data)
        else:
            kind = type(data)
            self.name = f"{kind.__module__.split('.')[0]}.{kind.__name__}"

    def rows(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(row index, row)`` for every row, in order."""
        index = 0
        for batch in self._batches():
            for row in batch:
                yield index, row
                index += 1

    def _batches(self) -> Iterator[list[dict[str, Any]]]:
        data = self.data
        module = type(data).__module__.split(".")[0]
        if module == "pandas":
            yield from _pandas_batches(data)
        elif module == "polars":
            yield from _arrow_batches(data.to_arrow())
        elif module == "pyarrow":
            yield from _arrow_batches(data)
        elif isinstance(data, str | os.PathLike):
            yield from _file_batches(Path(data))
        else:
            raise DatasetError(
                f"cannot read a {self.name} as a dataset",
                hint="pass a JSONL or parquet path, a pyarrow Table, or a pandas or polars DataFrame",
            )


_LINE_WORDS = re.compile(r"\b(lines?)\b(?= \d)")


def relocate(problem: Problem, source: str) -> Problem:
    """A problem the parser or the gate located at ``line`` = row index, moved to ``row`` (tables have no lines);
    messages naming other rows by line ("already used on line 4", "lines 1, 5") say row(s) instead."""
    if problem.file != source:
        return problem
    message = _LINE_WORDS.sub(lambda m: "row" if m.group(1) == "line" else "rows", problem.message)
    row = problem.line if problem.line is not None else problem.row
    return replace(problem, line=None, row=row, message=message, lines=(), rows=problem.lines or problem.rows)


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is in the test extra
        raise DatasetError(
            "reading parquet, Arrow and Hugging Face files needs pyarrow", hint="pip install pyarrow"
        ) from None
    return pa


def _arrow_batches(table: Any) -> Iterator[list[dict[str, Any]]]:
    """A pyarrow Table or RecordBatch as lists of Python dicts (``to_pylist``), a batch at a time."""
    batches = table.to_batches(max_chunksize=_BATCH) if hasattr(table, "to_batches") else [table]
    for batch in batches:
        yield batch.to_pylist()


def _file_batches(path: Path) -> Iterator[list[dict[str, Any]]]:
    pa = _pyarrow()
    if path.is_dir():
        for file in _hf_arrow_files(path):
            yield from _ipc_batches(pa, file)
        return
    if not path.is_file():
        raise DatasetError("dataset file not found", file=str(path))
    if path.suffix.lower() == ".parquet":
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
        except pa.ArrowException as exc:
            raise DatasetError(f"not a readable parquet file: {exc}", file=str(path)) from None
        for batch in pf.iter_batches(batch_size=_BATCH):
            yield batch.to_pylist()
        return
    yield from _ipc_batches(pa, path)


def _ipc_batches(pa: Any, path: Path) -> Iterator[list[dict[str, Any]]]:
    """An Arrow IPC file (Feather v2, ``.arrow``) or stream (what Hugging Face ``save_to_disk`` writes), mapped."""
    with pa.memory_map(str(path)) as source:
        try:
            reader = pa.ipc.open_file(source)
            batches: Iterator[Any] = (reader.get_batch(i) for i in range(reader.num_record_batches))
        except pa.ArrowInvalid:
            source.seek(0)
            try:
                batches = iter(pa.ipc.open_stream(source))
            except pa.ArrowInvalid as exc:
                raise DatasetError(f"not an Arrow IPC file or stream: {exc}", file=str(path)) from None
        for batch in batches:
            yield from _arrow_batches(batch)


def _hf_arrow_files(folder: Path) -> list[Path]:
    """The Arrow files of a Hugging Face ``Dataset.save_to_disk`` folder, in the order ``state.json`` lists."""
    if (folder / "dataset_dict.json").is_file():
        splits = json.loads((folder / "dataset_dict.json").read_text()).get("splits", [])
        raise DatasetError(
            "a Hugging Face DatasetDict folder holds one dataset per split",
            file=str(folder),
            hint="pass one split's folder: " + ", ".join(str(folder / s) for s in splits),
        )
    state = folder / "state.json"
    if not state.is_file():
        raise DatasetError("a Hugging Face saved dataset folder needs its state.json", file=str(folder))
    files = [folder / f["filename"] for f in json.loads(state.read_text()).get("_data_files", [])]
    if not files:
        raise DatasetError("state.json lists no data files", file=str(state))
    return files


def _pandas_batches(frame: Any) -> Iterator[list[dict[str, Any]]]:
    """A pandas DataFrame's rows as Python values (positional order; see the module docstring for nulls)."""
    for start in range(0, len(frame), _BATCH):
        chunk = frame.iloc[start : start + _BATCH]
        yield [{str(k): _native(v, top=True) for k, v in row.items()} for row in chunk.to_dict("records")]


def _native(value: Any, *, top: bool = False) -> Any:
    """A pandas/numpy cell value as the JSON-like Python value; cell-level missing values become ``None``."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return None if top and math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): _native(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_native(v) for v in value]
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return _native(value.tolist(), top=top)
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    return value
