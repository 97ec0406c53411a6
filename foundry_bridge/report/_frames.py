"""DataFrames out of a report (``Report.to_pandas()`` and friends).

pandas and polars are optional: each is imported inside the function that needs it, never by ``import
foundry_bridge``. The per-query frame is built from the report's per-query rows, a row at a time: the rows
held in memory when the report has them all (``per_query.complete``), else the per-query file written beside it
(``per_query.path``: Parquet or JSON lines), else the rows ``build_report`` writes again from the run folder
(``provenance.run_dir``) into a temporary file: every query, at any size, never only the 2,000-row cap of
``report.queries``.

One row per query; its columns, named as in the per-query rows (``QueryRow``): ``row``, ``query_id``, ``kind``,
``kind_source``, ``query``, ``response``, ``canary``, ``stage``, ``stage_reason``, ``search_partial``,
``abstained``, ``dropped_relevant``, ``holes``; then one column per metric key of ``report.metrics`` in its order:
a local metric's value (None → NaN), a Foundry metric's ``score``, and beside it ``<key>.passed``,
``<key>.status``, ``<key>.reason`` and ``<key>.error``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._io import loads
from .._lazy import optional_module
from ..errors import UsageError

if TYPE_CHECKING:
    from ._model import Report

__all__ = [
    "FOUNDRY_FIELDS",
    "QUERY_FIELDS",
    "aggregates_frame",
    "per_query_columns",
    "query_frame",
]

QUERY_FIELDS = (
    "row",
    "query_id",
    "kind",
    "kind_source",
    "query",
    "response",
    "canary",
    "stage",
    "stage_reason",
    "search_partial",
    "abstained",
    "dropped_relevant",
    "holes",
)
FOUNDRY_FIELDS = ("passed", "status", "reason", "error")  # beside each Foundry metric's score, as <key>.<field>
_AGGREGATE_INTS = ("queries", "scored", "errored", "missing", "undefined", "passed", "failed")
_AGGREGATE_FLOATS = ("coverage", "mean", "median", "min", "max", "pass_rate")


def _row_lines(report: Report) -> Iterator[dict[str, Any]]:
    """Every per-query row of ``report`` as a dict, in dataset order (see the module docstring for the source)."""
    if report.per_query.complete:
        for q in report.queries:
            yield q.model_dump()
        return
    if report.per_query.path is not None and Path(report.per_query.path).is_file():
        yield from _read_rows(Path(report.per_query.path), report.per_query.format)
        return
    run_dir = Path(report.provenance.run_dir)
    if not run_dir.is_dir():
        raise UsageError(
            f"the report holds {len(report.queries)} of its {report.per_query.rows} rows and its run folder "
            f"{run_dir} is gone (fix: build the report again from a kept run folder, or write every row with "
            "build_report(..., queries_out=FILE))"
        )
    from ._build import build_report

    with tempfile.TemporaryDirectory(prefix="foundry-bridge-rows-") as tmp:
        rows = Path(tmp) / "queries.parquet"
        build_report(run_dir, stage_k=report.params.stage_k, queries_out=rows, table_rows=0, trust=False)
        yield from _read_rows(rows, "parquet")


def _read_rows(path: Path, fmt: str) -> Iterator[dict[str, Any]]:
    """The rows of a per-query file: JSON lines a line at a time, Parquet a row group at a time."""
    if fmt == "jsonl":
        with path.open("rb") as fh:
            for line in fh:
                if line.strip():
                    yield loads(line)
        return
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=8192):
        yield from batch.to_pylist()


def per_query_columns(report: Report) -> dict[str, list[Any]]:
    """The per-query table as columns (name → one value per query), read a row at a time."""
    foundry = [m.key for m in report.metrics if m.source == "foundry"]
    local = [m.key for m in report.metrics if m.source == "local"]
    names = [*QUERY_FIELDS]
    for m in report.metrics:
        names.append(m.key)
        if m.source == "foundry":
            names += [f"{m.key}.{f}" for f in FOUNDRY_FIELDS]
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for row in _row_lines(report):
        for name in QUERY_FIELDS:
            columns[name].append(row.get(name))
        values = row.get("local") or {}
        for key in local:
            columns[key].append(values.get(key))
        scores = row.get("foundry") or {}
        for key in foundry:
            score = scores.get(key) or {}
            columns[key].append(score.get("score"))
            for f in FOUNDRY_FIELDS:
                columns[f"{key}.{f}"].append(score.get(f, "missing" if f == "status" else None))
    return columns


def query_frame(report: Report, *, polars: bool = False) -> Any:
    """``Report.to_pandas()`` / ``to_polars()``: one row per query (the module docstring lists the columns)."""
    columns = per_query_columns(report)
    if polars:
        return optional_module("polars", "polars DataFrames").DataFrame(columns, strict=False)
    pd = optional_module("pandas", "DataFrames")
    frame = pd.DataFrame(columns)
    numeric = [m.key for m in report.metrics]
    frame[numeric] = frame[numeric].astype("float64")  # None → NaN: a metric column is a float column
    return frame


def _aggregate_rows(report: Report) -> list[dict[str, Any]]:
    infos = {m.key: m for m in report.metrics}
    rows = []
    for section in (report.positive, report.negative):
        for key, agg in section.metrics.items():
            info = infos.get(key)
            rows.append(
                {
                    "metric": key,
                    "section": section.kind,
                    "source": info.source if info is not None else None,
                    "criterion": info.criterion if info is not None else None,
                    **{f: getattr(agg, f) for f in _AGGREGATE_INTS},
                    **{f: getattr(agg, f) for f in _AGGREGATE_FLOATS},
                }
            )
    return rows


def aggregates_frame(report: Report, *, polars: bool = False) -> Any:
    """``Report.aggregates_frame()``: one row per (metric, section) with the ``MetricAggregate`` fields as columns;
    the counts (queries, scored, errored, missing, undefined, passed, failed) stay integers, the rest are floats
    (None → NaN)."""
    rows = _aggregate_rows(report)
    if polars:
        return optional_module("polars", "polars DataFrames").DataFrame(rows, strict=False)
    pd = optional_module("pandas", "DataFrames")
    frame = pd.DataFrame(
        rows, columns=["metric", "section", "source", "criterion", *_AGGREGATE_INTS, *_AGGREGATE_FLOATS]
    )
    return frame.astype({**dict.fromkeys(_AGGREGATE_INTS, "int64"), **dict.fromkeys(_AGGREGATE_FLOATS, "float64")})
