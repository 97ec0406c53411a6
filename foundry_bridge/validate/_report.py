"""``ValidationReport``: every problem found (listed up to a cap per code, all counted) and the counts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .._lazy import optional_module
from ..dataset.problems import Problem, Severity

__all__ = ["PROBLEM_COLUMNS", "ValidationReport"]

PROBLEM_COLUMNS = ("file", "line", "row", "field", "code", "severity", "message", "hint", "lines", "rows")


@dataclass
class ValidationReport:
    """Every problem found (at most ``max_per_code`` listed per code; all counted), the counts, and ``notes``:
    facts that are not problems but decide what was checked (the label range of each criterion, its source)."""

    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rows: int = 0
    by_code: Counter[str] = field(default_factory=Counter)
    errors: int = 0
    warnings: int = 0
    max_per_code: int = 20

    def add(self, problem: Problem) -> None:
        self.count(problem.code, problem.severity)
        if self.by_code[problem.code] <= self.max_per_code:
            self.problems.append(problem)

    def count(self, code: str, severity: Severity, n: int = 1) -> None:
        """Count ``n`` problems of ``code`` without listing them."""
        self.by_code[code] += n
        if severity == "error":
            self.errors += n
        else:
            self.warnings += n

    @property
    def ok(self) -> bool:
        return self.errors == 0

    @property
    def omitted(self) -> dict[str, int]:
        """Per code, how many problems were counted but not listed."""
        return {c: n - self.max_per_code for c, n in self.by_code.items() if n > self.max_per_code}

    def sort(self) -> None:
        """Problems grouped by file (in order of first appearance), then by line; file-level ones first."""
        rank: dict[str | None, int] = {}
        for p in self.problems:
            rank.setdefault(p.file, len(rank))
        self.problems.sort(key=lambda p: (rank[p.file], p.line or p.row or 0))

    def to_pandas(self) -> Any:
        """A pandas DataFrame with one row per listed problem: file, line (a file) or row (a table, 0-based), field
        (the column), code, severity, message, hint (the fix), lines / rows (what a dataset-level problem
        concerns); ``line`` and ``row`` are nullable integers."""
        rows = self._problem_rows()
        pd = optional_module("pandas", "DataFrames")
        frame = pd.DataFrame(rows, columns=list(PROBLEM_COLUMNS))
        return frame.astype({"line": "Int64", "row": "Int64"})

    def to_polars(self) -> Any:
        """``to_pandas`` as a polars DataFrame."""
        pl = optional_module("polars", "polars DataFrames")
        return pl.DataFrame(self._problem_rows(), schema=list(PROBLEM_COLUMNS), strict=False)

    def _problem_rows(self) -> list[dict[str, Any]]:
        """One dict per listed problem, the ``PROBLEM_COLUMNS``; ``lines`` / ``rows`` as lists."""
        rows = [{f: getattr(p, f) for f in PROBLEM_COLUMNS} for p in self.problems]
        for r in rows:
            r["lines"], r["rows"] = list(r["lines"]), list(r["rows"])
        return rows

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "counts": {
                "rows": self.rows,
                "errors": self.errors,
                "warnings": self.warnings,
                "by_code": dict(sorted(self.by_code.items())),
                "omitted": self.omitted,
            },
            "problems": [p.to_dict() for p in self.problems],
            "notes": list(self.notes),
        }
