"""A located problem found in a dataset or a mapping: what the validator reports and the readers raise."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..errors import DatasetError

__all__ = ["Problem", "Severity"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One finding: ``file:line: field: message (fix: hint)`` with a severity and a stable ``code``."""

    severity: Severity
    code: str
    message: str
    file: str | None = None
    line: int | None = None
    field: str | None = None
    hint: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line is not None else "")
        elif self.line is not None:
            where = f"line {self.line}"
        parts = [p for p in (where, self.field) if p]
        text = (": ".join(parts) + ": " if parts else "") + self.message
        if self.hint:
            text += f" (fix: {self.hint})"
        return text

    def to_error(self) -> DatasetError:
        """The ``DatasetError`` a reader raises for this problem."""
        return DatasetError(self.message, file=self.file, line=self.line, field=self.field, hint=self.hint)
