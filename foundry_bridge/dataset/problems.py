"""A located problem found in a dataset or a mapping: what the validator reports and the readers raise."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import DatasetError, located

__all__ = ["LISTED_ROWS", "Problem", "Severity"]

LISTED_ROWS = 1000  # rows a dataset-level problem lists as data (``Problem.lines`` / ``rows``); its count has all

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One finding: ``file:line: field: message (fix: hint)`` with a severity and a stable ``code``; in a table
    (parquet, DataFrame...) ``row`` (0-based row index) replaces ``line``: ``file: row 3: column: message``.
    A dataset-level problem about several rows (``zero_result``) lists them as data too: ``lines`` (a file's line
    numbers) or, in a table, ``rows`` (row indices), the first ``LISTED_ROWS`` of them."""

    severity: Severity
    code: str
    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None
    hint: str | None = None
    row: int | None = None
    lines: tuple[int, ...] = ()
    rows: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("row", "lines", "rows"):
            if not out[key]:
                del out[key]
            elif isinstance(out[key], tuple):
                out[key] = list(out[key])
        return out

    def _where(self) -> str | None:
        return self.file if self.row is None else f"{self.file or 'table'}: row {self.row}"

    def __str__(self) -> str:
        return located(self.message, file=self._where(), line=self.line, field=self.field, hint=self.hint)

    def to_error(self) -> DatasetError:
        """The ``DatasetError`` a reader raises for this problem."""
        return DatasetError(
            self.message, file=self.file, line=self.line, field=self.field, hint=self.hint, row=self.row
        )
