"""The report's view of a run's columns (``columns.RunColumns``): each Foundry metric as a view of the engine, one row
per query (``score_view``), its status one ``CASE``.

A cell with an error is errored; a cell with a score (or, for a boolean metric, a verdict) is scored; any other
cell is missing. A query without a cell is errored when its criterion errored on that row, else missing. Verdicts
are read for the query's kind (``wire.passed_for_kind``): a quality_grader fail on a negative query that abstained
is the correct outcome, so it reads as passed and its reason says so.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path

import numpy as np

from ..catalog import CATALOG
from ..columns import RunColumns, _glob_literal, _quote, _sql_path
from ..wire import passed_for_kind

__all__ = ["ERRORED", "MISSING", "SCORED", "STATUSES", "Columns", "ScoreColumn"]

STATUSES = ("scored", "errored", "missing")
SCORED, ERRORED, MISSING = 0, 1, 2
# rows per Parquet row group the engine writes: it holds a whole row group in memory while it writes (at its default
# of 122,880 rows, a 100,000-query run's rows at once: beyond its memory limit with a judge's reason per query)
ROW_GROUP = 8192
_PAIR = "SELECT * FROM results WHERE criterion = {c} AND metric = {m}"  # one metric's result rows, in file order


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class ScoreColumn:
    """One Foundry metric on every query: the view ``score:<key>`` of the run's engine, one row per query (``row``,
    ``kind``, ``status`` 0 scored / 1 errored / 2 missing, ``present``, ``score``, ``passed`` read for the kind,
    ``label``, ``threshold``, ``reason``, ``error``)."""

    def __init__(
        self, run: RunColumns, key: str, criterion: str, metric: str, evaluator: str | None, boolean: bool
    ) -> None:
        self.run, self.key, self.criterion, self.metric = run, key, criterion, metric
        self.view = _quote(f"score:{key}")
        c, m = _literal(criterion), _literal(metric)
        self.positional = run.in_row_order(criterion, metric)  # the view's rows come in row order
        if self.positional:  # its cells are its rows: joined by position, none missing (no criterion error read)
            source, fallback = f"queries q POSITIONAL JOIN ({_PAIR.format(c=c, m=m)}) c", "NULL::VARCHAR"
        else:
            source = (
                f"queries q LEFT JOIN cell_of({c}, {m}) c ON c.row = q.row LEFT JOIN (SELECT row, error FROM "
                f"criterion_error WHERE criterion = {c}) e ON e.row = q.row"
            )
            fallback = "e.error"
        spec = CATALOG.get(evaluator or "")
        flip = "FALSE"  # a fail on a negative query that abstained, read for the kind (wire.passed_for_kind)
        passed, note = True, ""
        if spec is not None and spec.abstention_correct_on_negative:
            got, why = passed_for_kind(spec, False, kind="negative", abstained=True)
            if why is not None and got is not None:
                flip, passed, note = "q.kind = 'negative' AND q.abstains = 1", got, why
        has_value = "(c.score IS NOT NULL AND NOT isnan(c.score))" + (" OR c.passed IS NOT NULL" if boolean else "")
        run.define(
            f"CREATE OR REPLACE VIEW {self.view} AS "
            "WITH s AS (SELECT q.row, q.kind, q.abstains, c.row IS NOT NULL AS present, c.score, c.passed, c.label, "
            f"c.threshold, c.reason, CASE WHEN c.row IS NULL THEN {fallback} ELSE c.error END AS error, "
            f"CASE WHEN c.row IS NULL THEN (CASE WHEN {fallback} IS NULL THEN 2 ELSE 1 END) WHEN c.error IS NOT NULL "
            f"THEN 1 WHEN {has_value} THEN 0 ELSE 2 END::TINYINT AS status, "
            f"({flip}) AND c.passed = false AS flip FROM {source}) "
            "SELECT row, kind, status, present, score, label, threshold, error, "
            f"CASE WHEN flip AND status = 0 THEN {passed} ELSE passed END AS passed, "
            f"CASE WHEN flip AND status = 0 THEN rtrim({_literal(note + '. ')} || coalesce(reason, ''), "
            "' ' || chr(9) || chr(10) || chr(11) || chr(12) || chr(13)) ELSE reason END AS reason FROM s"
        )

    def materialize(self) -> None:
        """Evaluate the view once into a Parquet file of the run's scratch folder (one row per query, in row order)
        and read it from there afterwards: the joins with the results run once however often the metric is read,
        and the view can be joined by position with the ``queries`` (``POSITIONAL JOIN``). A metric whose result
        rows are in row order already (``positional``) needs none of this: its view is a positional join."""
        fd, name = tempfile.mkstemp(suffix=".parquet", dir=self.run.scratch())
        os.close(fd)
        path = Path(name)
        self.run.sql(
            f"COPY (SELECT * FROM {self.view} ORDER BY row) TO '{_sql_path(path)}' (FORMAT parquet, ROW_GROUP_SIZE "
            f"{ROW_GROUP})"
        )
        self.run.define(f"CREATE OR REPLACE VIEW {self.view} AS SELECT * FROM read_parquet('{_glob_literal(path)}')")
        self.positional = True

    def fields_sql(self, alias: str) -> str:
        """The query's ``FoundryScore`` (``_model.FoundryScore``'s fields, in its order) from this view joined as
        ``alias``: a scored cell carries its score (NaN: null), verdict, label, threshold and reason; a row without
        a cell is missing, or errored (with its criterion's first error); any other cell is missing ("null score
        and no error" unless it has a reason)."""
        a = alias
        return (
            f"struct_pack(status := ['scored', 'errored', 'missing'][{a}.status + 1], "
            f"score := CASE WHEN {a}.status = 0 AND NOT isnan({a}.score) THEN {a}.score END, "
            f"passed := CASE WHEN {a}.status = 0 THEN {a}.passed END, "
            f"label := CASE WHEN {a}.status = 0 THEN {a}.label END, "
            f"threshold := CASE WHEN {a}.present AND NOT isnan({a}.threshold) THEN {a}.threshold END, "
            f"reason := CASE WHEN {a}.present AND {a}.status = 2 AND {a}.error IS NULL "
            f"AND coalesce({a}.reason, '') = '' THEN 'null score and no error' ELSE {a}.reason END, "
            f"error := {a}.error)"
        )

    def numbers(self) -> dict[str, np.ndarray]:
        """``status``, ``score`` (NaN none) and ``passed`` (-1 none, 0, 1: read for the kind) of every query."""
        f = self.run.sql(
            "SELECT status, coalesce(score, 'NaN') AS score, coalesce(passed::TINYINT, -1) AS passed "
            f"FROM {self.view} ORDER BY row"
        ).fetchnumpy()
        return {
            "status": np.asarray(f["status"], np.int8),
            "score": np.asarray(f["score"], np.float64),
            "passed": np.asarray(f["passed"], np.int8),
        }

    def status(self) -> np.ndarray:
        return self.numbers()["status"]

    def values(self) -> np.ndarray:
        """The score where scored, NaN elsewhere (what compare pairs)."""
        f = self.numbers()
        return np.where(f["status"] == SCORED, f["score"], np.nan)


class LocalColumns(Mapping[str, np.ndarray]):
    """The local metric columns: ``columns[key]`` fetches one whole from the run's columns."""

    def __init__(self, run: RunColumns, keys: list[str]) -> None:
        self.run, self.keys_ = run, keys

    def __getitem__(self, key: str) -> np.ndarray:
        if key not in self.keys_:
            raise KeyError(key)
        return np.asarray(self.run.column(key), np.float64)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys_)

    def __len__(self) -> int:
        return len(self.keys_)


class Columns:
    """What ``compare`` reads of a report: each query's id, local values, Foundry statuses and scores."""

    def __init__(self, run: RunColumns, local: LocalColumns, foundry: dict[str, ScoreColumn]) -> None:
        self.run, self.local, self.foundry = run, local, foundry

    @cached_property
    def query_ids(self) -> list[str]:
        return self.run.texts("query_id")

    def values(self, key: str, source: str) -> np.ndarray:
        """``key``'s value on every query (NaN: undefined, errored or missing)."""
        return self.local[key] if source == "local" else self.foundry[key].values()
