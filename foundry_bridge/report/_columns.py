"""The report's view of a run's columns (``columns.RunColumns``): each Foundry metric's status, score and verdict,
fetched from the engine one metric (or one block of rows) at a time, never held for the whole run.

A cell with an error is errored; a cell with a score (or, for a boolean metric, a verdict) is scored; any other
cell is missing. A query without a cell is errored when its criterion errored on that row, else missing. Verdicts
are read for the query's kind (``wire.passed_for_kind``): a quality_grader fail on a negative query that abstained
is the correct outcome, so it reads as passed and its reason says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..catalog import CATALOG
from ..columns import RunColumns
from ..metrics._arrays import Codes, Texts
from ..wire import passed_for_kind

__all__ = ["ERRORED", "MISSING", "SCORED", "STATUSES", "Columns", "Index", "ScoreColumn"]

STATUSES = ("scored", "errored", "missing")
SCORED, ERRORED, MISSING = 0, 1, 2


@dataclass
class Index:
    """What the report keeps of every query in memory: kind (negative or not) and abstention (-1, 0, 1)."""

    negative: np.ndarray
    abstains: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.negative)


class ScoreColumn:
    """One Foundry metric on every query, read from the run's columns when asked."""

    def __init__(
        self, run: RunColumns, criterion: str, metric: str, evaluator: str | None, boolean: bool, index: Index
    ) -> None:
        self.run, self.criterion, self.metric, self.boolean, self.index = run, criterion, metric, boolean, index
        spec = CATALOG.get(evaluator or "")
        self.flip: tuple[bool, str] | None = None
        if spec is not None and spec.abstention_correct_on_negative:
            passed, note = passed_for_kind(spec, False, kind="negative", abstained=True)  # a fail, read for the kind
            if note is not None and passed is not None:
                self.flip = (passed, note)

    @cached_property
    def crit_errors(self) -> dict[int, str]:
        return self.run.criterion_errors(self.criterion)

    @cached_property
    def crit_error_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``crit_errors`` as (rows, errors) arrays."""
        rows = np.fromiter(self.crit_errors.keys(), np.int64, len(self.crit_errors))
        return rows, np.array(list(self.crit_errors.values()) or [], object)

    def fields(
        self, lo: int = 0, hi: int | None = None, cells: dict[str, np.ndarray] | None = None, *, texts: bool = True
    ) -> dict[str, Any]:
        """Rows ``lo`` to ``hi``: the cells' fields, ``status`` and the verdicts read for the query's kind
        (``texts=False``: without the label, reason and error texts — ``RunColumns.cells``)."""
        hi = self.run.n_queries if hi is None else hi
        f: dict[str, Any] = (
            dict(cells) if cells is not None else self.run.cells(self.criterion, self.metric, lo, hi, texts=texts)
        )
        err_rows = self.crit_error_arrays[0]
        crit_err = np.zeros(hi - lo, bool)
        crit_err[err_rows[(err_rows >= lo) & (err_rows < hi)] - lo] = True
        present, score, passed = f["present"], f["score"], f["passed"]
        err_cell = _given(f["error"])
        has_value = ~np.isnan(score) | (self.boolean & (passed >= 0))
        status = np.full(hi - lo, MISSING, np.int8)
        status[present & ~err_cell & has_value] = SCORED
        status[(present & err_cell) | (~present & crit_err)] = ERRORED
        f["status"] = status
        if self.flip is not None:
            idx = self.index
            kinds = idx.negative[lo:hi] & (idx.abstains[lo:hi] == 1)
            flip = np.flatnonzero(kinds & (status == SCORED) & (passed == 0))
            if flip.size:
                passed = f["passed"] = passed.copy()
                passed[flip] = int(self.flip[0])
                reason = f["reason"] = f["reason"].copy()
                for j in flip.tolist():
                    reason[j] = f"{self.flip[1]}. {reason[j] or ''}".strip()
        return f

    def numbers(self, block: int = 131_072) -> dict[str, np.ndarray]:
        """``status``, ``score`` and ``passed`` (as ``fields`` reads them) on every query, made a block of rows at a
        time: the text fields of a whole run (label, reason, error: a Python object per query) are never held."""
        n = self.run.n_queries
        parts = [self.fields(lo, min(n, lo + block), texts=False) for lo in range(0, n, block)] or [
            self.fields(0, 0, texts=False)
        ]
        return {k: np.concatenate([p[k] for p in parts]) for k in ("status", "score", "passed")}

    def status(self) -> np.ndarray:
        return self.numbers()["status"]

    def values(self) -> np.ndarray:
        """The score where scored, NaN elsewhere (what compare pairs)."""
        f = self.numbers()
        return np.where(f["status"] == SCORED, f["score"], np.nan)


def score_fields(col: ScoreColumn, f: dict[str, Any], lo: int) -> dict[str, np.ndarray]:
    """Each query's ``FoundryScore`` fields (the block ``f`` of rows from ``lo``, as ``ScoreColumn.fields`` gives
    them) as columns, masked where null, in ``FoundryScore``'s field order: a row without a cell is
    missing, or errored (with its criterion's error) when its criterion errored on it; a cell with an error is
    errored; a scored cell carries its score (NaN: null), verdict, label, threshold and reason; any other cell is
    missing ("null score and no error" unless it has a reason)."""
    n = len(f["present"])
    present, status, error, reason, passed = f["present"], f["status"], f["error"], f["reason"], f["passed"]
    err_cell = present & _given(error)
    scored = present & ~err_cell & (status == SCORED)
    crit = np.full(n, None, object)
    rows, texts = col.crit_error_arrays
    at = (rows >= lo) & (rows < lo + n)
    crit[rows[at] - lo] = texts[at]
    errored = err_cell | (~present & _given(crit))
    other = present & ~err_cell & ~scored
    why = np.asarray(np.where(present, reason, None))
    why[other & (~_given(reason) | (reason == ""))] = "null score and no error"
    return {
        "status": np.array(["missing", "errored", "scored"], object)[np.where(scored, 2, np.where(errored, 1, 0))],
        "score": np.ma.array(f["score"], mask=~scored | np.isnan(f["score"])),
        "passed": np.ma.array(passed == 1, mask=~scored | (passed < 0)),
        "label": np.asarray(np.where(scored, f["label"], None)),
        "threshold": np.ma.array(f["threshold"], mask=~present | np.isnan(f["threshold"])),
        "reason": why,
        "error": np.asarray(np.where(present, error, crit)),
    }


def _given(values: np.ndarray) -> np.ndarray:
    """True where an object column holds a value (not None)."""
    given: Any = values != None  # noqa: E711 — elementwise on an object column
    return np.asarray(given, bool)


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
    """What ``compare`` reads of a report: each query's id and kind, local values, Foundry statuses and scores."""

    def __init__(self, run: RunColumns, local: LocalColumns, foundry: dict[str, ScoreColumn]) -> None:
        self.run, self.local, self.foundry = run, local, foundry

    @cached_property
    def query_ids(self) -> Texts:
        return self.run.text_column("query_id")

    @cached_property
    def kinds(self) -> Codes:
        return self.run.code_column("kind")

    def values(self, key: str, source: str) -> np.ndarray:
        """``key``'s value on every query (NaN: undefined, errored or missing)."""
        return self.local[key] if source == "local" else self.foundry[key].values()
