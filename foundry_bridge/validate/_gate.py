"""The gate ``plan`` and ``run`` pass before they write or submit anything: what ``validate`` rejects is never sent.

``gate`` runs the same checks as ``foundry-bridge validate`` (one streaming pass) and raises ``ValidationFailed``
on any error, its message listing every error as ``file:line: field: message (fix: hint)``. Warnings pass.
``gated_records`` is the same pass yielding the records the plan is built from, so the data is read once.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ..dataset.frames import Table
from ..dataset.records import QueryRecord
from ..errors import FoundryBridgeError
from ._passes import checked_records
from ._report import ValidationReport

__all__ = ["ValidationFailed", "gate", "gated_records"]

_LISTED = 20  # errors listed in the message per code (all are counted)


class ValidationFailed(FoundryBridgeError):
    """The dataset or its mapping has errors; nothing was written or submitted (CLI exit 1)."""

    def __init__(self, report: ValidationReport, command: str) -> None:
        self.report = report
        errors = [p for p in report.problems if p.severity == "error"]
        codes = {p.code for p in errors}
        lines = [str(p) for p in errors]
        lines += [
            f"... and {n} more {c!r} error(s) not listed" for c, n in sorted(report.omitted.items()) if c in codes
        ]
        lines.append(
            f"{command}: {report.errors} validation error(s) in {report.rows} row(s), nothing was written or "
            "submitted (fix: correct them; `foundry-bridge validate` lists the warnings too; --skip-validation "
            "sends unchecked data)"
        )
        super().__init__("\n".join(lines))


def gate(
    data: str | os.PathLike[str] | Table,
    mapping: str | os.PathLike[str] | None = None,
    *,
    command: str = "plan",
    environ: dict[str, str] | None = None,
) -> ValidationReport:
    """Validate ``data`` against the mapping file (None: the packaged default); ``ValidationFailed`` on any error."""
    report = ValidationReport(max_per_code=_LISTED)
    for _ in checked_records(data, mapping, report, environ=environ):
        pass
    return _verdict(report, command)


def gated_records(
    data: str | os.PathLike[str] | Table,
    mapping: str | os.PathLike[str] | None = None,
    *,
    command: str = "plan",
    environ: dict[str, str] | None = None,
) -> Iterator[QueryRecord]:
    """``gate`` in the same pass as the reading: each usable record is yielded once its row is checked, and
    ``ValidationFailed`` is raised when the iteration ends if anything (a row, the criteria, a duplicate id) had an
    error. For a consumer that writes and sends only after it has read every record, as ``build_plan`` does.
    """
    report = ValidationReport(max_per_code=_LISTED)
    yield from checked_records(data, mapping, report, environ=environ, records=True)
    _verdict(report, command)


def _verdict(report: ValidationReport, command: str) -> ValidationReport:
    report.sort()
    if not report.ok:
        raise ValidationFailed(report, command)
    return report
